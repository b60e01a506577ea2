import KeyKit

/// The OATH accounts of several keys (a daily key and its backup) as one: each account once, with the keys that
/// hold it, and what differs between two keys. Secrets cannot be read from a key, so accounts are compared by ID
/// and settings only.
public enum OATHAcrossKeys {
    /// One account over the keys: its ID and, per key that holds it, that key's index and row.
    public struct Merged<Row: Sendable>: Sendable {
        public var id: String
        public var holders: [(key: Int, row: Row)]

        /// The indices of the keys that hold it.
        public var keys: [Int] { holders.map(\.key) }
        /// The row of the first key that holds it.
        public var first: Row { holders[0].row }
    }

    /// The rows of each key (`perKey[i]` are key i's), merged by `id`: in the order the TUI shows accounts
    /// (`CredentialID.displayOrder`), each with its holders in key order.
    public static func merge<Row: Sendable>(_ perKey: [[Row]], id: (Row) -> CredentialID) -> [Merged<Row>] {
        // Runs for every frame of the all-keys view: each ID is spelled once, and the sort compares keys made once
        // per account, not two strings made afresh for each comparison.
        var at = [String: Int]()
        var merged = [(id: CredentialID, text: String, holders: [(key: Int, row: Row)])]()
        for (k, rows) in perKey.enumerated() {
            for row in rows {
                let i = id(row)
                let text = i.string
                if let index = at[text] {
                    merged[index].holders.append((k, row))
                } else {
                    at[text] = merged.count
                    merged.append((i, text, [(k, row)]))
                }
            }
        }
        let order = merged.map(\.id.displayOrder)
        return merged.indices.sorted { order[$0] < order[$1] }
            .map { Merged(id: merged[$0].text, holders: merged[$0].holders) }
    }

    /// A setting two keys hold differently for the same account.
    public enum Setting: String, Sendable, CaseIterable {
        case type, digits, period, algorithm, touch
    }

    /// One account both keys hold, with settings that differ: each setting with key A's value and key B's.
    public struct Differing: Sendable, Equatable {
        public var id: String
        public var settings: [(setting: Setting, a: String, b: String)]

        public static func == (l: Differing, r: Differing) -> Bool {
            l.id == r.id && l.settings.map { "\($0)" } == r.settings.map { "\($0)" }
        }
    }

    /// What differs between the accounts of key A and key B.
    public struct Difference: Sendable, Equatable {
        /// IDs on A only, and on B only, in display order.
        public var onlyA: [String]
        public var onlyB: [String]
        public var differing: [Differing]

        public var isEmpty: Bool { onlyA.isEmpty && onlyB.isEmpty && differing.isEmpty }
    }

    /// The accounts on one key only, and those whose settings (type, digits, period, algorithm, touch) differ. A
    /// setting one key does not tell (digits of an HOTP account, the algorithm where LIST is not read) is not
    /// compared.
    public static func difference(_ a: [OATHOperations.Account], _ b: [OATHOperations.Account]) -> Difference {
        let merged = merge([a, b]) { $0.credential.id }
        var out = Difference(onlyA: [], onlyB: [], differing: [])
        for m in merged {
            switch m.keys {
            case [0]: out.onlyA.append(m.id)
            case [1]: out.onlyB.append(m.id)
            default:
                let x = m.holders[0].row, y = m.holders[1].row
                var settings = [(setting: Setting, a: String, b: String)]()
                func compare(_ s: Setting, _ p: String?, _ q: String?) {
                    if let p, let q, p != q { settings.append((s, p, q)) }
                }
                compare(.type, x.credential.type.description, y.credential.type.description)
                compare(.digits, x.digits.map(String.init), y.digits.map(String.init))
                if x.credential.type == .totp && y.credential.type == .totp {
                    compare(.period, String(x.credential.period), String(y.credential.period))
                }
                compare(.algorithm, x.credential.algorithm?.rawValue, y.credential.algorithm?.rawValue)
                compare(.touch, x.credential.touch.map { "\($0)" }, y.credential.touch.map { "\($0)" })
                if !settings.isEmpty { out.differing.append(Differing(id: m.id, settings: settings)) }
            }
        }
        return out
    }
}
