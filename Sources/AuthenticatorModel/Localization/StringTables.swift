import Foundation

/// The string tables: the user's language over English. Found through YKTERM_RESOURCES, the installed
/// share directory next to the binary, or the source tree.
public struct StringTables: Sendable {
    public var primary: [String: String]
    public var english: [String: String]

    public static func directories() -> [String] {
        var dirs = [String]()
        if let env = ProcessInfo.processInfo.environment["YKTERM_RESOURCES"], !env.isEmpty { dirs.append(env + "/strings") }
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        dirs.append(exe.appendingPathComponent("../share/ykterm/strings").standardized.path)
        dirs.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../Resources/strings").standardized.path)
        return dirs
    }

    public static func language(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let env = environment
        for name in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let v = env[name], !v.isEmpty { return String(v.prefix { $0.isLetter }).lowercased() }
        }
        return "en"
    }

    public static func table(_ language: String) -> [String: String] {
        for dir in directories() {
            if let data = FileManager.default.contents(atPath: "\(dir)/\(language).json"),
               let table = try? JSONDecoder().decode([String: String].self, from: data) {
                return table
            }
        }
        return [:]
    }

    public static func load(language: String = StringTables.language()) -> StringTables {
        let english = table("en")
        return StringTables(primary: language == "en" ? english : table(language), english: english)
    }

    /// The text for `key` with `{name}` placeholders filled; the key itself when no table has it.
    public func format(_ key: String, _ arguments: [String: String]) -> String {
        var text = primary[key] ?? english[key] ?? key
        for (name, value) in arguments { text = text.replacingOccurrences(of: "{\(name)}", with: value) }
        return text
    }
}
