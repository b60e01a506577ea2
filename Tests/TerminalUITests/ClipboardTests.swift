import Foundation
import Testing
@testable import TerminalUI

@Suite struct ClipboardTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A new directory for stand-in clipboard tools; the caller removes it.
    func toolDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ykterm-clipboard-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// An executable script `name` in `directory`, standing in for a clipboard tool.
    func addTool(_ name: String, _ script: String, in directory: URL) throws {
        let path = directory.appendingPathComponent(name)
        try script.write(to: path, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path.path)
    }

    @Test func plainOSC52() {
        // base64("123456") = "MTIzNDU2"
        let sequence = Clipboard.osc52Sequence(for: "123456", environment: ["TERM": "xterm-256color"])
        #expect(sequence == bytes("\u{1B}]52;c;MTIzNDU2\u{07}"))
    }

    @Test func utf8TextIsEncodedAsBytes() {
        // base64 of the UTF-8 bytes of "é" (C3 A9) = "w6k="
        #expect(Clipboard.osc52(bytes("é")) == bytes("\u{1B}]52;c;w6k=\u{07}"))
    }

    @Test func tmuxGetsThePlainSequenceAndThePassthroughWrappedOne() {
        let environment = ["TMUX": "/tmp/tmux-0/default,123,0", "TERM": "tmux-256color"]
        let sequence = Clipboard.osc52Sequence(for: "123456", environment: environment)
        let plain = "\u{1B}]52;c;MTIzNDU2\u{07}"
        let wrapped = "\u{1B}Ptmux;\u{1B}\u{1B}]52;c;MTIzNDU2\u{07}\u{1B}\\"
        #expect(sequence == bytes(plain + wrapped))
        // TMUX wins over a screen-like TERM (tmux's default TERM is screen).
        #expect(
            Clipboard.osc52Sequence(for: "123456", environment: ["TMUX": "x", "TERM": "screen"])
                == bytes(plain + wrapped))
    }

    @Test func gnuScreenGetsDCSPiecesOfAtMost76Bytes() {
        let environment = ["TERM": "screen.xterm-256color"]
        let short = Clipboard.osc52Sequence(for: "123456", environment: environment)
        let plain = "\u{1B}]52;c;MTIzNDU2\u{07}"
        #expect(short == bytes(plain + "\u{1B}P" + plain + "\u{1B}\\"))

        let long = String(repeating: "a", count: 120)
        let sequence = Clipboard.osc52(bytes(long))
        let wrapped = Clipboard.wrapForScreen(sequence)
        var pieces: [[UInt8]] = []
        var index = 0
        while index < wrapped.count {
            #expect(Array(wrapped[index..<(index + 2)]) == [0x1B, 0x50])
            var end = index + 2
            while !(wrapped[end] == 0x1B && wrapped[end + 1] == 0x5C) { end += 1 }
            pieces.append(Array(wrapped[(index + 2)..<end]))
            index = end + 2
        }
        #expect(pieces.allSatisfy { $0.count <= 76 })
        #expect(pieces.count == (sequence.count + 75) / 76)
        #expect(pieces.flatMap { $0 } == sequence)
        #expect(
            Clipboard.osc52Sequence(for: "x", environment: ["STY": "1234.pts-0.host", "TERM": "xterm"])?
                .starts(with: bytes("\u{1B}]52;c;eA==\u{07}\u{1B}P")) == true)
    }

    @Test func multiplexerDetection() {
        #expect(Clipboard.Multiplexer.detect([:]) == .none)
        #expect(Clipboard.Multiplexer.detect(["TERM": "xterm"]) == .none)
        #expect(Clipboard.Multiplexer.detect(["TERM": "tmux-256color"]) == .none)
        #expect(Clipboard.Multiplexer.detect(["TERM": "screen-256color"]) == .screen)
        #expect(Clipboard.Multiplexer.detect(["TMUX": "", "TERM": "xterm"]) == .none)
        #expect(Clipboard.Multiplexer.detect(["TMUX": "/tmp/x", "TERM": "xterm"]) == .tmux)
    }

    @Test func methodDecidesWhatIsUsed() {
        let environment = ["WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0", "TERM": "xterm"]
        let auto = Clipboard(method: .auto, environment: environment)
        #expect(auto.terminalSequence(for: "1") != nil)
        #expect(auto.localTools == [.wlCopy, .xclip])
        #expect(Clipboard(method: .auto, environment: ["DISPLAY": ":1"]).localTools == [.xclip])
        #expect(Clipboard(method: .auto, environment: [:]).localTools == [])
        #expect(Clipboard(method: .osc52, environment: environment).localTools == [])
        #expect(Clipboard(method: .xclip, environment: environment).terminalSequence(for: "1") == nil)
        #expect(Clipboard(method: .xclip, environment: environment).localTools == [.xclip])
        #expect(Clipboard(method: .wlCopy, environment: [:]).localTools == [.wlCopy])
        #expect(Clipboard(method: .none, environment: environment).terminalSequence(for: "1") == nil)
        #expect(Clipboard(method: .none, environment: environment).localTools == [])
        #expect(ClipboardTool.xclip.arguments == ["-selection", "clipboard"])
        #expect(ClipboardMethod(rawValue: "wl-copy") == .wlCopy)
    }

    @Test func tooLongForOSC52() {
        let text = String(repeating: "x", count: Clipboard.maximumOSC52Bytes + 1)
        #expect(Clipboard(method: .osc52, environment: [:]).terminalSequence(for: text) == nil)
    }

    @Test func copyWritesToTheTerminal() async {
        let screen = MemoryScreen()
        let clipboard = Clipboard(method: .osc52, environment: ["TERM": "xterm"])
        let outcome = await clipboard.copy("123456", terminal: screen)
        #expect(outcome.sentToTerminal && outcome.copied)
        #expect(screen.rawWrites == [bytes("\u{1B}]52;c;MTIzNDU2\u{07}")])
    }

    @Test func localToolGetsTheTextOnStdinNotInArguments() async throws {
        // A stand-in for xclip: a script that saves its stdin and its arguments.
        let directory = try toolDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try addTool(
            "xclip",
            """
            #!/bin/sh
            cat > "\(directory.path)/stdin"
            echo "$@" > "\(directory.path)/args"
            """, in: directory)

        // The tool's own time limit is not under test here: a loaded machine may take seconds to start a shell.
        let clipboard = Clipboard(
            method: .auto,
            environment: ["DISPLAY": ":9", "PATH": directory.path + ":/usr/bin:/bin"],
            toolTimeout: .seconds(60))
        let screen = MemoryScreen()
        let outcome = await clipboard.copy("secret code 123 456", terminal: screen)
        #expect(outcome.succeeded == ["xclip"])
        #expect(outcome.failed.isEmpty)
        #expect(outcome.sentToTerminal)
        let stdin = try String(contentsOf: directory.appendingPathComponent("stdin"), encoding: .utf8)
        let arguments = try String(contentsOf: directory.appendingPathComponent("args"), encoding: .utf8)
        #expect(stdin == "secret code 123 456")
        #expect(arguments == "-selection clipboard\n")
    }

    @Test func toolsGetNoneOfOurDescriptors() async throws {
        // The tools may stay in the background: they must not keep the terminal or a key's connection open.
        let directory = try toolDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try addTool(
            "xclip",
            """
            #!/bin/sh
            cat > /dev/null
            if [ -e /proc/$$/fd/77 ]; then echo open; else echo closed; fi > "\(directory.path)/fd77"
            """, in: directory)
        let held = open("/dev/null", O_RDONLY)
        #expect(dup2(held, 77) == 77)
        defer { close(77); close(held) }

        let clipboard = Clipboard(
            method: .xclip, environment: ["PATH": directory.path + ":/usr/bin:/bin"],
            toolTimeout: .seconds(60))
        let outcome = await clipboard.copyWithLocalTools("x")
        #expect(outcome.succeeded == ["xclip"])
        let state = try String(contentsOf: directory.appendingPathComponent("fd77"), encoding: .utf8)
        #expect(state == "closed\n")
    }

    @Test func missingOrFailingToolIsReported() async throws {
        let directory = try toolDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try addTool("wl-copy", "#!/bin/sh\nexit 3\n", in: directory)

        let clipboard = Clipboard(
            method: .auto,
            environment: ["WAYLAND_DISPLAY": "w", "DISPLAY": ":9", "PATH": directory.path],
            toolTimeout: .seconds(60))
        let outcome = await clipboard.copyWithLocalTools("x")
        #expect(outcome.failed == ["wl-copy", "xclip"])
        #expect(!outcome.copied)
    }

    @Test func hangingToolIsStoppedAfterTheTimeout() async throws {
        let directory = try toolDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try addTool("xclip", "#!/bin/sh\nexec /bin/sleep 30\n", in: directory)

        let clipboard = Clipboard(
            method: .xclip, environment: ["PATH": directory.path],
            toolTimeout: .milliseconds(200))
        let start = ContinuousClock.now
        let outcome = await clipboard.copyWithLocalTools("x")
        #expect(outcome.failed == ["xclip"])
        // Not a timing figure: the tool sleeps 30 s, so finishing well before that shows it was stopped.
        #expect(ContinuousClock.now - start < .seconds(25))
    }
}
