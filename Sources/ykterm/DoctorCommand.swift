import ArgumentParser
import CNCursesW
import FoundationEssentials
import Glibc
import AuthenticatorModel
import KeyKit
import TerminalUI

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check pcscd, readers, keys, FIDO device access, terminal and locale; say what to do.",
        discussion: "Each line starts with ok, warn or fail. Exits with status 1 when any check fails.")

    @OptionGroup var key: KeyOptions

    /// Each line's first word, the same in every language (scripts look for it).
    enum Level: String { case ok = "ok  ", warn = "warn", fail = "fail" }

    /// The udev rule file shipped in Resources, and where it goes.
    static let udevRule = "70-ykterm-fido.rules"
    /// The group rule, for sessions not at the seat.
    static let udevGroupRule = "70-ykterm-fido-group.rules"

    func run() async throws {
        var failed = false
        func line(_ level: Level, _ text: String) {
            out("\(level.rawValue)  \(text)")
            if level == .fail { failed = true }
        }

        // pcscd and readers.
        if key.virtual {
            line(.ok, words("cli.doctor.virtual"))
        } else {
            await checkPCSC(line)
        }
        checkHID(line)
        checkTerminal(line)
        checkConfig(line)
        if failed { throw ExitCode(ExitStatus.failed) }
    }

    private func checkPCSC(_ line: (Level, String) -> Void) async {
        let context: PCSCContext
        do {
            context = try PCSCContext()
        } catch SmartCardError.accessDenied {
            // pcscd is there, and refuses this session: polkit, with the rule that lets the user in.
            line(.fail, explained(SmartCardError.accessDenied).1)
            return
        } catch {
            line(.fail, explained(SmartCardError.serviceUnavailable).1)
            return
        }
        line(.ok, words("cli.doctor.pcscd"))
        let readers: [ReaderStatus]
        do {
            readers = try context.status()
        } catch {
            line(.fail, words("cli.doctor.readersFailed", ["detail": explained(error).1]))
            return
        }
        if readers.isEmpty {
            line(.warn, words("cli.doctor.noReaders"))
            return
        }
        line(.ok, words("cli.doctor.readers", ["readers": readers.map(\.name).joined(separator: ", ")]))
        // Every reader at once, each on a context of its own: one that does not answer costs its deadline once.
        let chosen = readers.filter { key.selector.matches(readerName: $0.name) }
        let results = await withTaskGroup(of: (Int, Result<KeyInfo, any Error>?).self) { group in
            for (index, r) in chosen.enumerated() where r.cardPresent && !r.mute {
                group.addTask {
                    do {
                        return (index, .success(try await DeviceOperations.inspect(reader: r.name)))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var byIndex = [Int: Result<KeyInfo, any Error>]()
            for await (index, result) in group { byIndex[index] = result }
            return byIndex
        }
        var found = 0
        for (index, r) in chosen.enumerated() {
            guard r.cardPresent else {
                line(.ok, words("cli.doctor.readerEmpty", ["reader": r.name]))
                continue
            }
            if r.mute {
                line(.fail, words("cli.doctor.readerMute", ["reader": r.name]))
                continue
            }
            switch results[index] {
            case .success(let info):
                found += 1
                line(
                    .ok,
                    words(
                        "cli.doctor.key",
                        [
                            "reader": r.name, "name": info.device.displayName,
                            "serial": info.device.serial.map(String.init) ?? words("cli.doctor.unknown"),
                            "version": "\(info.device.version)",
                        ]))
            case .failure(SmartCardError.sharingViolation(_)):
                line(
                    .fail,
                    words(
                        DoctorCommand.scdaemonRunning() ? "cli.doctor.heldByScdaemon" : "cli.doctor.heldExclusively",
                        ["reader": r.name]))
            case .failure(let error):
                line(.fail, "\(r.name): " + explained(error).1)
            case nil:
                break
            }
        }
        if found == 0 { line(.warn, words("cli.doctor.noKeys")) }
    }

    /// The HID interfaces keys have on USB (FIDO, and a YubiKey's OTP keyboard interface), and whether this
    /// user may open each: FIDO2 and U2F on USB, and OTP on keys without CCID, go through them.
    private func checkHID(_ line: (Level, String) -> Void) {
        let interfaces = KeyAssembler.relevant(HIDRawDevice.enumerateAll().map { FoundHID(info: $0, usbDevice: nil) })
        if interfaces.isEmpty {
            line(.ok, words("cli.doctor.noHID"))
            return
        }
        for h in interfaces {
            let what = h.isFIDO ? "FIDO HID" : "OTP HID"
            let fd = open(h.info.path, O_RDWR)
            if fd >= 0 {
                close(fd)
                line(
                    .ok,
                    words(
                        "cli.doctor.hidAccessible",
                        [
                            "interface": what, "path": h.info.path,
                            "product": h.info.productName ?? words("cli.doctor.unnamed"),
                        ]))
            } else if errno == EACCES {
                let reload = " && sudo udevadm control --reload && sudo udevadm trigger"
                if LoginSession.isRemote() {
                    // uaccess gives the node to the user at the seat: from SSH, the group rule is the way.
                    let rule = DoctorCommand.udevGroupRule
                    let install =
                        "sudo install -m 644 \(DoctorCommand.rulePath(rule)) /etc/udev/rules.d/\(rule)"
                        + " && sudo usermod -aG \(LoginSession.udevGroup) \(PCSCDaemon.userName())" + reload
                    line(
                        .fail,
                        words(
                            "cli.doctor.hidDeniedRemote",
                            [
                                "interface": what, "path": h.info.path, "group": LoginSession.udevGroup,
                                "command": install,
                            ]))
                } else {
                    let rule = DoctorCommand.udevRule
                    let install =
                        "sudo install -m 644 \(DoctorCommand.rulePath(rule)) /etc/udev/rules.d/\(rule)" + reload
                    line(
                        .fail,
                        words("cli.doctor.hidDenied", ["interface": what, "path": h.info.path, "command": install]))
                }
            } else {
                line(.warn, "\(what): \(h.info.path): " + String(cString: strerror(errno)))
            }
        }
    }

    /// Whether a process named scdaemon runs (it may take a card from pcscd for itself).
    static func scdaemonRunning() -> Bool {
        guard let pids = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return false }
        return pids.contains { pid in
            pid.allSatisfy(\.isNumber)
                && (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
                    .trimmingWhitespace == "scdaemon"
        }
    }

    /// The config file and the string tables.
    private func checkConfig(_ line: (Level, String) -> Void) {
        let path = Config.defaultPath
        do {
            let config = try Config.load(path: path)
            let exists = FileManager.default.fileExists(atPath: path)
            let count = config.otp.aesKeys.count
            line(
                .ok,
                !exists
                    ? words("cli.doctor.configNone", ["path": path])
                    : count == 0
                        ? words("cli.doctor.config", ["path": path])
                        : words("cli.doctor.configAESKeys", ["path": path, "count": String(count)]))
        } catch {
            line(.fail, words("cli.config.invalid", ["problem": "\(error)"]))
        }
        let language = StringTables.language()
        do {
            _ = try StringTables.validated(language: language)
            line(.ok, words("cli.doctor.strings", ["language": language]))
        } catch {
            line(.warn, words("cli.doctor.stringsFailed", ["problem": "\(error)"]))
        }
    }

    /// Where the rule file is: beside the string tables ykterm uses (its installed share/ykterm, or the source
    /// tree's Resources when run from a build), then the usual install places. Always an absolute path, so the
    /// command it is shown in works from any directory.
    static func rulePath(_ rule: String = udevRule) -> String {
        let candidates =
            StringTables.directories().map { PathString.normalized($0 + "/../udev/\(rule)") }
            + ["/usr/local/share/ykterm/udev/\(rule)", "/usr/share/ykterm/udev/\(rule)"]
        return candidates.first { $0.hasPrefix("/") && FileManager.default.fileExists(atPath: $0) }
            ?? candidates.last!
    }

    private func checkTerminal(_ line: (Level, String) -> Void) {
        let env = ProcessInfo.processInfo.environment
        let locale = TerminalLocale.setUp(environment: env)
        let codeset = locale.codeset
        if let standIn = locale.standIn {
            line(.warn, words("cli.doctor.localeStandIn", ["locale": locale.requested, "standIn": standIn]))
        } else if locale.isUTF8 {
            line(.ok, words("cli.doctor.localeUTF8", ["codeset": codeset]))
        } else {
            line(.warn, words("cli.doctor.localeNotUTF8", ["codeset": codeset]))
        }
        guard let term = env["TERM"], !term.isEmpty else {
            line(.warn, words("cli.doctor.noTERM"))
            return
        }
        var err: Int32 = 0
        if setupterm(term, 1, &err) != 0 {
            line(.warn, words("cli.doctor.noTerminfo", ["term": term]))
            return
        }
        let colors = tigetnum("colors")
        var colours = colors > 0 ? words("cli.doctor.colours", ["count": "\(colors)"]) : words("cli.doctor.monochrome")
        if env["NO_COLOR"].map({ !$0.isEmpty }) == true { colours = words("cli.doctor.noColor", ["colours": colours]) }
        // What else the TUI meets here, each a clause after a semicolon.
        var notes = [String]()
        if isatty(STDOUT_FILENO) == 0 { notes.append(words("cli.doctor.outputNotTerminal")) }
        if env["TMUX"] != nil { notes.append(words("cli.doctor.tmux")) }
        if env["SSH_CONNECTION"] != nil { notes.append(words("cli.doctor.ssh")) }
        line(.ok, words("cli.doctor.terminal", ["term": term, "colours": colours]) + notes.map { "; " + $0 }.joined())
    }
}
