import FoundationEssentials
import Glibc

/// OATH access keys the user asked to remember, by device ID: `$XDG_CONFIG_HOME/ykterm/oath-keys.json`
/// (or `~/.config/ykterm/oath-keys.json`), mode 0600. Only the derived key is stored, never the password.
public struct RememberedKeys: Sendable {
    public let path: String
    /// Told when the file could not be read as JSON and was moved aside (to `aside`), so the user hears of it.
    public var onSetAside: (@Sendable (_ path: String, _ aside: String) -> Void)?

    public init(path: String? = nil, onSetAside: (@Sendable (_ path: String, _ aside: String) -> Void)? = nil) {
        self.path = path ?? RememberedKeys.defaultPath()
        self.onSetAside = onSetAside
    }

    public static func configDirectory() -> String {
        if let xdg = ProcessEnvironment.value("XDG_CONFIG_HOME"), xdg.hasPrefix("/") { return xdg + "/ykterm" }
        let home = ProcessEnvironment.value("HOME") ?? PathString.homeDirectory()
        return home + "/.config/ykterm"
    }

    public static func defaultPath() -> String { configDirectory() + "/oath-keys.json" }

    public enum StoreError: Error {
        case unreadable(String, String)
        case unwritable(String, String)
        case insecure(String, UInt16)

    }

    private func load() throws -> [String: String] {
        guard FileManager.default.fileExists(atPath: path) else { return [:] }
        var st = stat()
        if stat(path, &st) == 0, st.st_mode & 0o077 != 0 {
            throw StoreError.insecure(path, UInt16(st.st_mode & 0o777))
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw StoreError.unreadable(path, "\(error)")
        }
        guard let entries = try? JSONDecoder().decode([String: String].self, from: data) else {
            // Not JSON any more (edited by hand, or cut short by an older version): kept aside as
            // oath-keys.json.corrupt, and the passwords are asked for again.
            if let aside = AtomicFile.setAside(path) { onSetAside?(path, aside) }
            return [:]
        }
        return entries
    }

    private func save(_ entries: [String: String]) throws {
        if entries.isEmpty {
            unlink(path)
            return
        }
        do {
            try StateFile.write(entries, to: path)
        } catch {
            throw StoreError.unwritable(path, error.reason)
        }
    }

    public func key(for deviceID: String) throws -> [UInt8]? {
        guard let hex = try load()[deviceID] else { return nil }
        return try? Hex.decode(hex)
    }

    public func remember(_ key: [UInt8], for deviceID: String) throws {
        var entries = try load()
        entries[deviceID] = key.hex
        try save(entries)
    }

    /// Returns true when something was forgotten.
    @discardableResult
    public func forget(_ deviceID: String) throws -> Bool {
        var entries = try load()
        guard entries.removeValue(forKey: deviceID) != nil else { return false }
        try save(entries)
        return true
    }

    public func forgetAll() throws {
        if FileManager.default.fileExists(atPath: path) { try save([:]) }
    }
}
