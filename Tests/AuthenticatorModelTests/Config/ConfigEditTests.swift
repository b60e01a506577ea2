import Foundation
import Testing
@testable import AuthenticatorModel

@Suite("Config: [oath] and the line the TUI writes")
struct ConfigEditTests {
    @Test func oathSettingsAreReadAndCheckedBooleans() throws {
        let config = try Config.parse(text: "[oath]\nall_keys = true\nadd_to_all_keys = true\n", path: "c")
        #expect(config.oath.allKeys && config.oath.addToAllKeys)
        #expect(Config().oath == Config.OATH())
        #expect(throws: ConfigError(path: "c", line: 2, message: "all_keys must be true or false, not a string")) {
            try Config.parse(text: "[oath]\nall_keys = \"yes\"\n", path: "c")
        }
        #expect(throws: ConfigError.self) { try Config.parse(text: "[oath]\nall = true\n", path: "c") }
        // A key binding for the toggle, like any other action.
        let rebound = try Config.parse(text: "[keys]\nall_keys = \"W\"\n", path: "c")
        #expect(rebound.keyBindings.action(for: .char("W")) == .allKeys)
        #expect(KeyBindings().key(for: .allKeys) == "A")
    }

    @Test func theLineIsReplacedAddedUnderItsTableOrTheTableAddedAndNothingElseMoves() throws {
        let replaced = ConfigEdit.setting(
            "all_keys", to: false, in: "oath",
            of: "# mine\n[ui]\ncolor = \"never\"\n\n[oath]\n  all_keys = true   # A\n")
        #expect(replaced == "# mine\n[ui]\ncolor = \"never\"\n\n[oath]\n  all_keys = false   # A\n")
        let added = ConfigEdit.setting(
            "all_keys", to: true, in: "oath", of: "[oath]  # keys at once\nadd_to_all_keys = true\n[ui]\n")
        #expect(added == "[oath]  # keys at once\nall_keys = true\nadd_to_all_keys = true\n[ui]\n")
        let appended = ConfigEdit.setting("all_keys", to: true, in: "oath", of: "[ui]\ncolor = \"never\"")
        #expect(appended == "[ui]\ncolor = \"never\"\n\n[oath]\nall_keys = true\n")
        #expect(ConfigEdit.setting("all_keys", to: true, in: "oath", of: "") == "[oath]\nall_keys = true\n")
        // CRLF files keep their line ends.
        #expect(
            ConfigEdit.setting("all_keys", to: true, in: "oath", of: "[oath]\r\nall_keys = false\r\n")
                == "[oath]\r\nall_keys = true\r\n")
        // Set another way (an inline table, a dotted key): left to the user.
        #expect(ConfigEdit.setting("all_keys", to: true, in: "oath", of: "oath = { all_keys = false }\n") == nil)
        #expect(ConfigEdit.setting("all_keys", to: true, in: "oath", of: "[oath]\nall_keys = [\n]\n") == nil)
    }

    @Test func theFileKeepsItsModeAndALinkIsFollowed() throws {
        let dir = temporaryDirectory()
        let real = dir + "/dotfiles-config.toml"
        try "[ui]\ncolor = \"never\"\n".write(toFile: real, atomically: true, encoding: .utf8)
        chmod(real, 0o644)
        let link = dir + "/config.toml"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        try ConfigEdit.rememberOATHAllKeys(true, path: link)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == real)
        #expect(
            try String(contentsOfFile: real, encoding: .utf8) == "[ui]\ncolor = \"never\"\n\n[oath]\nall_keys = true\n")
        let mode = try FileManager.default.attributesOfItem(atPath: real)[.posixPermissions] as? Int
        #expect(mode == 0o644)
        #expect(try Config.load(path: link).oath.allKeys)
        // No file yet: made, private.
        let fresh = dir + "/new/config.toml"
        try ConfigEdit.rememberOATHAllKeys(false, path: fresh)
        #expect(try String(contentsOfFile: fresh, encoding: .utf8) == "[oath]\nall_keys = false\n")
        #expect(try FileManager.default.attributesOfItem(atPath: fresh)[.posixPermissions] as? Int == 0o600)
        // What cannot be changed line by line is said, and the file stays.
        try "oath = { all_keys = false }\n".write(toFile: real, atomically: true, encoding: .utf8)
        #expect(throws: ConfigEdit.Problem.self) { try ConfigEdit.rememberOATHAllKeys(true, path: link) }
        #expect(try String(contentsOfFile: real, encoding: .utf8) == "oath = { all_keys = false }\n")
    }

    @Test func theRunnerWritesTheChoiceOnlyWhereItIsToldAndSaysWhenItCannot() async throws {
        let dir = temporaryDirectory()
        var env = RunnerEnvironment()
        env.configPath = dir + "/config.toml"
        let messages = LockedValue<[Msg]>([])
        let runner = Runner(backend: InProcessBackend(), environment: env) { msg in messages.withLock { $0.append(msg) }
        }
        runner.perform(.rememberOATHAllKeys(true))
        #expect(try Config.load(path: dir + "/config.toml").oath.allKeys)
        try "oath = { all_keys = true }\n".write(toFile: dir + "/config.toml", atomically: true, encoding: .utf8)
        runner.perform(.rememberOATHAllKeys(false))
        let notice = messages.withLock { $0 }.compactMap { msg -> UIText? in
            if case .notice(let text, .warning) = msg { return text } else { return nil }
        }
        #expect(notice.map(\.key) == ["oath.allKeys.notRemembered"])
        runner.stop()
    }
}
