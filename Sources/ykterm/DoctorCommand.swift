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

    enum Level: String { case ok = "ok  ", warn = "warn", fail = "fail" }

    /// The udev rule file shipped in Resources, and where it goes.
    static let udevRule = "70-ykterm-fido.rules"

    func run() async throws {
        var failed = false
        func line(_ level: Level, _ text: String) {
            out("\(level.rawValue)  \(text)")
            if level == .fail { failed = true }
        }

        // pcscd and readers.
        if key.virtual {
            line(.ok, "virtual key: built in, no pcscd needed")
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
        } catch {
            line(.fail, explained(SmartCardError.serviceUnavailable).1)
            return
        }
        line(.ok, "pcscd: reachable")
        let readers: [ReaderStatus]
        do {
            readers = try context.status()
        } catch {
            line(.fail, "readers: " + explained(error).1)
            return
        }
        if readers.isEmpty {
            line(.warn, "readers: none. Insert a key; USB keys need pcscd's CCID driver (apt-get install libccid)")
            return
        }
        line(.ok, "readers: " + readers.map(\.name).joined(separator: ", "))
        // Every reader at once, each on a context of its own: one that does not answer costs its deadline once.
        let chosen = readers.filter { key.selector.matches(readerName: $0.name) }
        let results = await withTaskGroup(of: (Int, Result<KeyInfo, any Error>?).self) { group in
            for (index, r) in chosen.enumerated() where r.cardPresent && !r.mute {
                group.addTask {
                    do {
                        let connection = try await PCSCConnection.connect(reader: r.name, probe: true)
                        do {
                            let info = try await KeyProbe.inspect(connection: connection)
                            await connection.close()
                            return (index, .success(info))
                        } catch {
                            await connection.close()
                            throw error
                        }
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
                line(.ok, "\(r.name): empty")
                continue
            }
            if r.mute {
                line(.fail, "\(r.name): the key does not answer; remove it and insert it again")
                continue
            }
            switch results[index] {
            case .success(let info):
                found += 1
                line(.ok, "\(r.name): \(info.device.displayName), serial "
                     + (info.device.serial.map(String.init) ?? "unknown") + ", firmware \(info.device.version)")
            case .failure(SmartCardError.sharingViolation(_)):
                let who = DoctorCommand.scdaemonRunning() ? "gpg's scdaemon is running and holds it"
                    : "often gpg's scdaemon"
                line(.fail, "\(r.name): another program holds the key exclusively (\(who)): "
                     + "run `gpgconf --kill scdaemon`, and add `disable-ccid` to ~/.gnupg/scdaemon.conf "
                     + "(or `pcsc-shared`) so it leaves the key to pcscd")
            case .failure(let error):
                line(.fail, "\(r.name): " + explained(error).1)
            case nil:
                break
            }
        }
        if found == 0 { line(.warn, "keys: none found on PC/SC") }
    }

    /// The HID interfaces keys have on USB (FIDO, and a YubiKey's OTP keyboard interface), and whether this
    /// user may open each: FIDO2 and U2F on USB, and OTP on keys without CCID, go through them.
    private func checkHID(_ line: (Level, String) -> Void) {
        let interfaces = KeyAssembler.relevant(HIDRawDevice.enumerateAll().map { FoundHID(info: $0, usbDevice: nil) })
        if interfaces.isEmpty {
            line(.ok, "HID: no FIDO or YubiKey OTP interfaces on USB (normal without a USB key, or over NFC)")
            return
        }
        for h in interfaces {
            let what = h.isFIDO ? "FIDO HID" : "OTP HID"
            let fd = open(h.info.path, O_RDWR)
            if fd >= 0 {
                close(fd)
                line(.ok, "\(what): \(h.info.path) (\(h.info.productName ?? "unnamed")) is accessible")
            } else if errno == EACCES {
                line(.fail, "\(what): \(h.info.path): permission denied. Install the udev rule: "
                     + "sudo install -m 644 \(DoctorCommand.rulePath()) /etc/udev/rules.d/\(DoctorCommand.udevRule)"
                     + " && sudo udevadm control --reload && sudo udevadm trigger")
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
            line(.ok, exists ? "config: \(path)" + (config.otp.aesKeys.isEmpty ? "" : " (\(config.otp.aesKeys.count) "
                                                     + "OTP AES keys, mode 0600)")
                 : "config: none at \(path) (defaults)")
        } catch {
            line(.fail, "config: \(error)")
        }
        let language = StringTables.language()
        do {
            _ = try StringTables.validated(language: language)
            line(.ok, "strings: \(language)")
        } catch {
            line(.warn, "strings: \(error); the interface shows English or bare keys")
        }
    }

    /// Where the rule file is: beside the string tables ykterm uses (its installed share/ykterm, or the source
    /// tree's Resources when run from a build), then the usual install places. Always an absolute path, so the
    /// command it is shown in works from any directory.
    static func rulePath() -> String {
        let candidates = StringTables.directories().map { PathString.normalized($0 + "/../udev/\(udevRule)") }
            + ["/usr/local/share/ykterm/udev/\(udevRule)", "/usr/share/ykterm/udev/\(udevRule)"]
        return candidates.first { $0.hasPrefix("/") && FileManager.default.fileExists(atPath: $0) }
            ?? candidates.last!
    }

    private func checkTerminal(_ line: (Level, String) -> Void) {
        let env = ProcessInfo.processInfo.environment
        let locale = TerminalLocale.setUp(environment: env)
        let codeset = locale.codeset
        if let standIn = locale.standIn {
            line(.warn, "locale: \(locale.requested) is not installed; the TUI draws in UTF-8 through \(standIn). "
                 + "Install it (locale-gen) for the rest of its settings")
        } else if locale.isUTF8 {
            line(.ok, "locale: UTF-8 (\(codeset))")
        } else {
            line(.warn, "locale: \(codeset), not UTF-8: the TUI falls back to ASCII. "
                 + "Set LANG to a UTF-8 locale (e.g. C.UTF-8) for box drawing and wide characters")
        }
        guard let term = env["TERM"], !term.isEmpty else {
            line(.warn, "terminal: TERM is not set; the TUI needs a terminal (set TERM, e.g. xterm-256color)")
            return
        }
        var err: Int32 = 0
        if setupterm(term, 1, &err) != 0 {
            line(.warn, "terminal: no terminfo entry for TERM=\(term): install ncurses-term, or set TERM=xterm-256color")
            return
        }
        let colors = tigetnum("colors")
        var text = "terminal: TERM=\(term)"
        text += colors > 0 ? ", \(colors) colours" : ", monochrome"
        if env["NO_COLOR"].map({ !$0.isEmpty }) == true { text += " (NO_COLOR set: colours off)" }
        if isatty(STDOUT_FILENO) == 0 { text += "; standard output is not a terminal" }
        if env["TMUX"] != nil { text += "; inside tmux" }
        if env["SSH_CONNECTION"] != nil { text += "; over SSH (codes are copied with OSC 52)" }
        line(.ok, text)
    }
}
