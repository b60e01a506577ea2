import FoundationEssentials

/// ykterm's small JSON state files (pins, key names and serials, remembered OATH keys): read whole, and written
/// whole through `AtomicFile` (mode 0600) into a directory made private (0700) when it does not exist yet.
public enum StateFile {
    /// The file at `path` decoded as `T`: `.absent` when there is no file, `.unreadable` when there is one that is
    /// not a `T` (cut short by a crash of an older version, or edited by hand).
    public static func read<T: Decodable>(_ type: T.Type, from path: String) -> Read<T> {
        guard let data = FileManager.default.contents(atPath: path) else { return .absent }
        guard let value = try? JSONDecoder().decode(type, from: data) else { return .unreadable }
        return .value(value)
    }

    public enum Read<T> {
        case absent
        case unreadable
        case value(T)

        /// The value read, or nil when there was none to read.
        public var value: T? {
            if case .value(let v) = self { return v }
            return nil
        }
    }

    /// Replaces the file at `path` with `value` as JSON (keys sorted, indented, so a diff of two versions reads).
    public static func write<T: Encodable>(_ value: T, to path: String) throws(AtomicFile.WriteError) {
        try? FileManager.default.createDirectory(
            atPath: PathString.directory(of: path), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data: Data
        do {
            data = try encoder.encode(value)
        } catch {
            throw AtomicFile.WriteError(path: path, reason: "\(error)")
        }
        try AtomicFile.write(Array(data), to: path, mode: 0o600)
    }
}
