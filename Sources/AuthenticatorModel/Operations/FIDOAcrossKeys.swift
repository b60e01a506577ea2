import KeyKit

/// The discoverable credentials of several keys (a daily key and its backup) by relying party: each relying party
/// once, with the keys that hold a credential for it and those that hold none. Both faces use it: the FIDO2 tab's
/// credentials view beside the other keys, and `fido credentials list --all-keys`.
public enum FIDOAcrossKeys {
    /// A credential of one of the keys: the key's index, and the credential.
    public struct OnKey: Sendable, Hashable {
        public var key: Int
        public var credential: FIDOCredential
    }

    /// One relying party over the keys.
    public struct RelyingParty: Sendable, Hashable {
        public var rpID: String
        /// Its name, as the first key that gives one has it.
        public var rpName: String?
        /// The indices of the keys that hold a credential for it, in key order.
        public var holders: [Int]
        /// The indices of the keys that hold none.
        public var missing: [Int]
        /// Its credentials, in key order, then by user (as one key's list is sorted).
        public var credentials: [OnKey]
    }

    /// The credentials of each key (`perKey[i]` are key i's) by relying party, in the order of their IDs.
    public static func relyingParties(_ perKey: [[FIDOCredential]]) -> [RelyingParty] {
        var byID = [String: RelyingParty]()
        for (k, credentials) in perKey.enumerated() {
            for c in FIDOTabState.sorted(credentials) {
                var party = byID[c.rpID] ?? RelyingParty(rpID: c.rpID, holders: [], missing: [], credentials: [])
                if party.rpName == nil { party.rpName = c.rpName }
                if party.holders.last != k { party.holders.append(k) }
                party.credentials.append(OnKey(key: k, credential: c))
                byID[c.rpID] = party
            }
        }
        return byID.keys.sorted().compactMap { id in
            guard var party = byID[id] else { return nil }
            party.missing = perKey.indices.filter { !party.holders.contains($0) }
            return party
        }
    }
}
