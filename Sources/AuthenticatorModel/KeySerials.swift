import FoundationEssentials
import KeyKit

/// The serial each key's OATH application was last seen with, by its device ID (the salt's digest that SELECT
/// gives), in `key-serials.json` beside ykterm's other state files (mode 0600, replaced atomically). Commands over
/// every key (`oath code --all-keys`) name keys by serial: this spares each key the Management application's
/// SELECT and READ CONFIG at each run. A device ID changes when the OATH application is reset, and then the key is
/// asked again. Nothing secret is kept.
public struct KeySerials: Sendable {
    public let path: String

    public init(path: String? = nil) {
        self.path = path ?? RememberedKeys.configDirectory() + "/key-serials.json"
    }

    /// Every serial, by device ID; an unreadable file counts as none (it is replaced at the next save).
    public func all() -> [String: UInt32] {
        StateFile.read([String: UInt32].self, from: path).value ?? [:]
    }

    /// Keeps `map`; a file that cannot be written is left as it is (the keys are asked again next time).
    public func save(_ map: [String: UInt32]) {
        try? StateFile.write(map, to: path)
    }
}
