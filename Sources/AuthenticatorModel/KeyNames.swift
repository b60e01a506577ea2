import FoundationEssentials
import KeyKit

/// Names the user gave keys ("daily", "backup"), by serial number, in `key-names.json` beside ykterm's other state
/// files (mode 0600, replaced atomically). A name is shown wherever its key is, and `--device` takes it.
public struct KeyNames: Sendable {
    public let path: String

    public init(path: String? = nil) {
        self.path = path ?? RememberedKeys.configDirectory() + "/key-names.json"
    }

    /// What is wrong with a name.
    public enum Problem: Error, Sendable, Equatable {
        case empty
        /// More than `maxLength` characters.
        case tooLong
        /// Digits only: `--device` would take it for a serial number.
        case digitsOnly
        /// A control character, or a comma (`--device A,B` lists keys).
        case badCharacter
        /// Another key (this serial) has the name.
        case taken(UInt32)
        /// No key has this name.
        case unknown(String)
        /// The file could not be written: why.
        case unwritable(String)
    }

    public static let maxLength = 32

    /// Every name, by serial; an unreadable file counts as none (it is replaced by the next name given).
    public func all() -> [UInt32: String] {
        guard let map = StateFile.read([String: String].self, from: path).value else { return [:] }
        var out = [UInt32: String]()
        for (serial, name) in map { if let s = UInt32(serial) { out[s] = name } }
        return out
    }

    public func name(of serial: UInt32?) -> String? {
        serial.flatMap { all()[$0] }
    }

    /// The serial of the key named `name` (case-insensitive).
    public func serial(named name: String) -> UInt32? {
        let wanted = name.lowercased()
        return all().first { $0.value.lowercased() == wanted }?.key
    }

    /// The name as it would be kept (spaces around it dropped), or what is wrong with it.
    public static func check(_ name: String) throws(Problem) -> String {
        let trimmed = name.trimmingSpaces
        if trimmed.isEmpty { throw .empty }
        if trimmed.count > maxLength { throw .tooLong }
        if trimmed.allSatisfy(\.isASCIIDigit) { throw .digitsOnly }
        if trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == "," }) {
            throw .badCharacter
        }
        return trimmed
    }

    /// Names the key `serial`; returns the name kept.
    @discardableResult
    public func set(_ name: String, for serial: UInt32) throws(Problem) -> String {
        let name = try Self.check(name)
        var map = all()
        if let other = map.first(where: { $0.value.lowercased() == name.lowercased() && $0.key != serial })?.key {
            throw .taken(other)
        }
        map[serial] = name
        try save(map)
        return name
    }

    /// Forgets the name of `serial`; returns it (nil: it had none).
    @discardableResult
    public func forget(_ serial: UInt32) throws(Problem) -> String? {
        var map = all()
        guard let old = map.removeValue(forKey: serial) else { return nil }
        try save(map)
        return old
    }

    /// The serial `text` designates: a serial number, or a key's name.
    public func serial(for text: String) throws(Problem) -> UInt32 {
        if let serial = UInt32(text) { return serial }
        guard let serial = serial(named: text.trimmingSpaces) else { throw .unknown(text) }
        return serial
    }

    private func save(_ map: [UInt32: String]) throws(Problem) {
        var strings = [String: String]()
        for (serial, name) in map { strings[String(serial)] = name }
        do {
            try StateFile.write(strings, to: path)
        } catch {
            throw .unwritable(error.reason)
        }
    }
}

extension KeyNames.Problem {
    /// The words for the problem, in both faces.
    public var text: UIText {
        switch self {
        case .empty: return UIText("keyName.empty")
        case .tooLong: return UIText("keyName.tooLong", ["max": String(KeyNames.maxLength)])
        case .digitsOnly: return UIText("keyName.digitsOnly")
        case .badCharacter: return UIText("keyName.badCharacter")
        case .taken(let serial): return UIText("keyName.taken", ["serial": String(serial)])
        case .unknown(let name): return UIText("keyName.unknown", ["name": name])
        case .unwritable(let detail): return UIText("keyName.unwritable", ["detail": detail])
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
