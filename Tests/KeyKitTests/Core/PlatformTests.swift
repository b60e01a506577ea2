import FoundationEssentials
import Glibc
import KeyKit
import Testing

/// The system helpers that stand in for Foundation's: path strings as dirname and realpath-free normalising
/// give them, trimming as Foundation's character sets did, capture groups counted as the regex engine sees them,
/// and the lock, condition and thread doing their jobs.
@Suite struct PlatformTests {
    @Test(arguments: [
        ("/a/b", "/a"), ("/a/b/", "/a"), ("/a", "/"), ("/", "/"), ("a", "."), ("a/b", "a"), ("a//b", "a"),
        ("/home/u/.config/ykterm/oath-keys.json", "/home/u/.config/ykterm"), ("", "."),
    ])
    func directoryIsWhatDirnameGives(path: String, expected: String) {
        #expect(PathString.directory(of: path) == expected)
    }

    @Test(arguments: [
        ("/usr/local/bin/../share/ykterm/strings", "/usr/local/share/ykterm/strings"),
        ("/a/./b//c/", "/a/b/c"), ("/../a", "/a"), ("a/../../b", "../b"), ("./", "."),
    ])
    func normalizedResolvesDotsAsText(path: String, expected: String) {
        #expect(PathString.normalized(path) == expected)
    }

    @Test func executableAndHomeAreAbsolute() throws {
        let executable = try #require(PathString.executable())
        #expect(executable.hasPrefix("/"))
        #expect(access(executable, X_OK) == 0)
        #expect(PathString.homeDirectory().hasPrefix("/"))
    }

    /// `includes` finds what `contains` finds, byte for byte; `concatenated` makes what `joined` makes.
    @Test func includesAndConcatenatedAgreeWithTheStandardLibrary() {
        let texts = ["", "a", "yubikey", "Yubico YubiKey OTP+FIDO+CCID 00 00", "ab", "aab", "abab", "résumé", "日本語"]
        for text in texts {
            for part in texts + ["key", "bab", "b", "é", "本", "yubikey ", "FIDO"] {
                #expect(text.includes(part) == text.contains(part), "\(text) / \(part)")
            }
        }
        for parts in [[], [""], ["a"], ["a", "b"], ["x", "", "y", "zz"]] {
            #expect(parts.concatenated(separator: ", ") == parts.joined(separator: ", "))
            #expect(parts.concatenated() == parts.joined())
        }
    }

    @Test func trimmingKeepsWhatFoundationKept() {
        #expect(" \t code 123 \t".trimmingSpaces == "code 123")
        #expect("\n x \n".trimmingSpaces == "\n x \n")
        #expect("\r\n x y\t\n".trimmingWhitespace == "x y")
        #expect("\u{00A0}x\u{3000}".trimmingSpaces == "x")
        #expect("   ".trimmingWhitespace.isEmpty)
        #expect(String.zeroPadded(7, width: 4) == "0007")
        #expect(String.zeroPadded(12345, width: 2) == "12345")
        #expect(String.zeroPadded(-5, width: 3) == "-005")
    }

    @Test(arguments: [
        ("otp=([cbdefghijklnrtuv]{44})", 1), ("abc", 0), ("(a)(b)", 2), ("(?:a)(b)", 1), ("(?<otp>x)", 1),
        ("(?P<otp>x)", 1), ("(?'otp'x)", 1), ("(?=a)(b)", 1), ("(?!a)(b)", 1), (#"\(a\)"#, 0),
        ("[(](x)", 1), ("[^)(](x)", 1), (#"\Q(a)\E(b)"#, 1), ("(?i)(x)", 1),
    ])
    func captureGroupsAreCountedAsTheEngineSeesThem(pattern: String, groups: Int) throws {
        #expect(UserPattern.captureGroups(in: pattern) == groups)
        #expect(UserPattern.compile(pattern) != nil)
    }

    @Test func firstCaptureAndInvalidPatterns() throws {
        let regex = try #require(UserPattern.compile(#"#(\w+)$"#))
        #expect(UserPattern.firstCapture(of: regex, in: "https://my.yubico.com/yk/#ccccccabcdef") == "ccccccabcdef")
        #expect(UserPattern.firstCapture(of: regex, in: "no fragment") == nil)
        #expect(UserPattern.compile("(unclosed") == nil)
        #expect(UserPattern.compile("[a-") == nil)
        // Swift's engine has no look-behind; such a pattern is refused as invalid rather than misread.
        #expect(UserPattern.compile("(?<=a)(b)") == nil)
    }

    @Test func lockConditionAndThreadWorkTogether() {
        let lock = ThreadLock()
        let condition = ThreadCondition()
        nonisolated(unsafe) var counter = 0
        nonisolated(unsafe) var finished = 0
        for _ in 0..<4 {
            let started = SystemThread.start(name: "platform-test") {
                for _ in 0..<1000 { lock.withLock { counter += 1 } }
                condition.lock()
                finished += 1
                condition.broadcast()
                condition.unlock()
            }
            #expect(started)
        }
        condition.lock()
        let deadline = ThreadCondition.monotonicNow() + 10
        while finished < 4, condition.wait(untilMonotonic: deadline) {}
        condition.unlock()
        #expect(finished == 4)
        #expect(lock.withLock { counter } == 4000)
        // A wait with nobody to wake it ends at its deadline.
        condition.lock()
        let before = ThreadCondition.monotonicNow()
        #expect(!condition.wait(untilMonotonic: before + 0.05))
        condition.unlock()
        #expect(ThreadCondition.monotonicNow() - before >= 0.04)
    }

    @Test func processEnvironmentIsProcessInfos() {
        #expect(ProcessEnvironment.current == ProcessInfo.processInfo.environment)
        #expect(ProcessEnvironment.value("PATH") == ProcessInfo.processInfo.environment["PATH"])
        #expect(ProcessEnvironment.value("YKTERM_TEST_UNSET_VARIABLE") == nil)
    }
}
