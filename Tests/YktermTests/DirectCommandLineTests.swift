import ArgumentParser
import Testing
@testable import ykterm

/// DirectCommandLine reads a few command lines without ArgumentParser. Whatever it reads, ArgumentParser
/// must read the same: the same command type with the same values (their dumps, which show every property
/// wrapper's state). What it declines, ArgumentParser parses as before.
@Suite struct DirectCommandLineTests {
    /// The command lines of the benchmark and of daily use: each must be read directly, or the point is lost.
    static let mustBeDirect: [[String]] = [
        ["--version"], [], ["--virtual"], ["--color", "never"], ["--reader=Yubico", "--device", "123"],
        ["list"], ["list", "--json"], ["list", "--readers"],
        ["oath", "list"], ["oath", "list", "--json", "--remember"],
        ["oath", "code"], ["oath", "code", "--json"], ["oath", "code", "github"],
        ["oath", "code", "--virtual", "bank", "--json"], ["oath", "code", "--all-keys"],
        ["oath", "list", "--all-keys", "--json"], ["oath", "code", "--all-keys", "github", "--json"],
        ["oath", "code", "github", "--single"],
        ["fido", "info"], ["fido", "info", "--json"], ["fido", "info", "--reader", "hidraw3"],
        ["fido", "credentials", "list"], ["fido", "credentials", "list", "--json", "--device=28123456"],
    ]

    @Test(arguments: mustBeDirect)
    func dailyCommandLinesAreReadDirectly(arguments: [String]) throws {
        #expect(DirectCommandLine.parse(arguments) != nil)
        try expectSameAsArgumentParser(arguments)
    }

    /// Every command line made of a path and up to two words from a pool of right, wrong and odd ones, and
    /// a fixed sample of those with three.
    @Test func everyCombinationReadsAsArgumentParserReadsIt() throws {
        let paths: [[String]] = [
            [], ["list"], ["oath"], ["oath", "list"], ["oath", "code"], ["fido"], ["fido", "info"],
            ["fido", "credentials"], ["fido", "credentials", "list"], ["oath", "code", "code"],
        ]
        let pool: [[String]] = [
            ["--json"], ["--virtual"], ["--remember"], ["--readers"], ["--verbose"], ["--help"], ["-h"], ["--version"],
            ["--reader", "Yubico"], ["--reader=NFC"], ["--reader", ""], ["--reader", "-x"], ["--reader"],
            ["--reader=x=y"],
            ["--device", "28123456"], ["--device=7"], ["--device", "abc"], ["--device", "4294967296"],
            ["--device", "-1"],
            ["--device", "+5"], ["--color", "always"], ["--color", "sometimes"], ["--color=never"], ["--json=yes"],
            ["github"], ["bank"], [""], ["-"], ["--"], ["-j"], ["--bogus"], ["list"], ["code"], ["info"],
            ["--all-keys"], ["--single"],
        ]
        var lines: [[[String]]] = [[]] + pool.map { [$0] } + pool.flatMap { a in pool.map { [a, $0] } }
        // Three words: 600 different triples, every 65th of all of them (65 is prime to the pool's size, so
        // the steps land on 600 distinct ones spread over the whole space), the same every run.
        let n = pool.count
        for i in 0..<600 {
            let t = (i * 65) % (n * n * n)
            lines.append([pool[t % n], pool[(t / n) % n], pool[t / (n * n)]])
        }
        var direct = 0, total = 0
        for path in paths {
            for words in lines {
                let arguments = path + words.flatMap { $0 }
                total += 1
                if DirectCommandLine.parse(arguments) != nil { direct += 1 }
                try expectSameAsArgumentParser(arguments)
            }
        }
        // Both kinds were tried: many lines read directly, many more left to ArgumentParser.
        #expect(direct > 300 && total - direct > 10_000, "\(direct) of \(total) read directly")
    }

    /// When DirectCommandLine reads `arguments`, ArgumentParser reads them to the same thing.
    func expectSameAsArgumentParser(_ arguments: [String]) throws {
        switch DirectCommandLine.parse(arguments) {
        case nil:
            return
        case .version?:
            do {
                _ = try Ykterm.parseAsRoot(arguments)
                Issue.record("ArgumentParser ran \(arguments) instead of printing the version")
            } catch {
                #expect(Ykterm.fullMessage(for: error) == Ykterm.version, "\(arguments)")
                #expect(Ykterm.exitCode(for: error) == .success, "\(arguments)")
            }
        case .request(let direct)?:
            let parsed: ParsableCommand
            do {
                parsed = try Ykterm.parseAsRoot(arguments)
            } catch {
                Issue.record(
                    "read directly, but ArgumentParser refuses \(arguments): \(Ykterm.fullMessage(for: error))")
                return
            }
            #expect(request(of: parsed) == direct, "\(arguments)")
            #expect(type(of: parsed)._commandName == direct.commandName, "\(arguments)")
        }
    }

    /// The request of a command ArgumentParser parsed, when it is one of the commands DirectCommandLine reads.
    func request(of command: ParsableCommand) -> DirectCommandLine.Request? {
        switch command {
        case let c as Ykterm: .tui(c.request)
        case let c as ListCommand: .list(c.request)
        case let c as OATHCommand.List: .oathList(c.request)
        case let c as OATHCommand.Code: .oathCode(c.request)
        case let c as FIDOCommand.Info: .fidoInfo(c.request)
        case let c as FIDOCommand.Credentials.List: .fidoCredentials(c.request)
        default: nil
        }
    }
}
