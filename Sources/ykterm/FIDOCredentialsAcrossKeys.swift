import ArgumentParser
import AuthenticatorModel
import KeyKit

/// `fido credentials list --all-keys`: the discoverable credentials of every key plugged in, each relying party once
/// with the keys that hold a credential for it.
extension FIDOCommand.Credentials {
    /// Each key in the order they are found, one PIN prompt per key (as `fido pin change --all-keys`: from the
    /// terminal, else one line of standard input each); a key without a PIN or without credential management is named
    /// and left out, one that refuses (a wrong PIN) or fails is named and the others go on (exit status 1).
    static func listAcrossKeys(reader: String?, json: Bool) async throws {
        let prompt = Prompt()
        var read = [(key: KeyInHand, credentials: [FIDOCredential])]()
        var failed = false
        for k in try await EveryKey.keys(with: .fido, reader: reader) {
            do {
                let operations = fidoOperations(k.opener())
                let info = try await operations.info()
                if let skipped = skipped(info) {
                    warn(words(skipped, ["key": k.label]))
                    continue
                }
                let pin = try askPIN(
                    prompt, words("cli.fido.credentials.pinOf", ["key": k.label]), minimum: info.minPINLength,
                    new: false)
                read.append((k, try await operations.credentials(.pin(pin)).credentials))
            } catch {
                failed = true
                warn("ykterm: \(k.label): " + (error is YktermError ? "\(error)" : explained(error).1))
            }
        }
        let parties = FIDOAcrossKeys.relyingParties(read.map(\.credentials))
        let keys = read.map(\.key)
        if json {
            try printJSON(
                parties.map { p in
                    RelyingPartyAcrossKeysJSON(
                        rpID: p.rpID, rpName: p.rpName, keys: p.holders.map { KeyJSON(keys[$0]) },
                        notOn: p.missing.map { KeyJSON(keys[$0]) },
                        credentials: p.credentials.map {
                            CredentialOnKeyJSON(credential: $0.credential, key: KeyJSON(keys[$0.key]))
                        })
                })
        } else if parties.isEmpty {
            if !keys.isEmpty {
                out(words("cli.fido.credentials.noneOn", ["keys": keys.map(\.label).joined(separator: ", ")]))
            }
        } else {
            out(lines(parties, keys).concatenated(separator: "\n"))
        }
        if failed { throw ExitCode(ExitStatus.failed) }
    }

    /// Why a key's credentials cannot be listed (the string key of the words that say so), nil when its PIN reads them.
    private static func skipped(_ info: FIDOInfo) -> String? {
        if !info.credentialManagement { return "cli.fido.credentials.skippedNoManagement" }
        switch info.pinSet {
        case nil: return "cli.fido.credentials.skippedNoPINSupport"
        case false?: return "cli.fido.credentials.skippedNoPIN"
        case true?: return nil
        }
    }

    /// Each relying party with the keys that hold it ("daily · backup", and "(not on backup)"), then its credentials,
    /// each with the key it is on.
    private static func lines(_ parties: [FIDOAcrossKeys.RelyingParty], _ keys: [KeyInHand]) -> [String] {
        let width = min(parties.map(\.rpID.count).max() ?? 0, 60)
        var lines = [String]()
        for p in parties {
            var holders = p.holders.map { keys[$0].label }.joined(separator: " · ")
            if !p.missing.isEmpty {
                holders +=
                    "  "
                    + words(
                        "cli.fido.credentials.notOn", ["keys": p.missing.map { keys[$0].label }.joined(separator: ", ")]
                    )
            }
            lines.append(p.rpID + String.spaces(max(width - p.rpID.count, 0)) + "  " + holders)
            for onKey in p.credentials {
                lines.append(FIDOCommand.Credentials.line(onKey.credential, on: keys[onKey.key].label))
            }
        }
        return lines
    }
}

extension CredentialOnKeyJSON {
    init(credential c: FIDOCredential, key: KeyJSON) {
        credential = CredentialJSON(
            rpID: c.rpID, credentialID: c.credentialID.hex, userID: c.userID.hex, userName: c.userName,
            displayName: c.displayName, credProtect: c.credProtect, largeBlobKey: c.largeBlobKey)
        self.key = key
    }
}
