import FoundationEssentials
import Glibc
import KeyKit

/// The key commands: the probe, and each tab's work (in the tab's folder), which opens a short-lived
/// connection, selects the application, does its work, closes, and posts what came of it.
struct KeyWork: Sendable {
    let backend: any KeyBackend
    let environment: RunnerEnvironment
    let post: @Sendable (Msg) -> Void
    /// The FIDO2 tab's PIN tokens and the connection of its running command (for cancel).
    let fidoRuntime = FIDOTabRuntime()
    /// The SSH tab's PIN for the visit and the connection of its running command (for cancel).
    let sshRuntime = SSHTabRuntime()
    /// The APDU console's connection, kept across its commands.
    let apduConsole = APDUConsole()

    func perform(_ command: Command, unlockKeys: LockedValue<[String: SecretBytes]>) async {
        switch command {
        case .probe(let d):
            post(.probed(keyID: d.id, await probe(d)))
        case .writeConfig(let d, let configuration, let reboot, let current, let new):
            post(
                .configWritten(
                    keyID: d.id,
                    failure: await writeConfig(
                        d, configuration, reboot: reboot,
                        currentLockCode: current, newLockCode: new)))
        case .oath(let c):
            await OATHTabWork(work: self).perform(c, unlockKeys: unlockKeys)
        case .otp(let c):
            await OTPTabWork(work: self).perform(c)
        case .fido(let c):
            await FIDOTabWork(work: self).perform(c)
        case .apdu(let c):
            await APDUTabWork(work: self).perform(c)
        case .piv(let c):
            await PIVTabWork(work: self).perform(c)
        case .ssh(let c):
            await SSHTabWork(work: self).perform(c)
        case .openpgp(let c):
            await OpenPGPTabWork(work: self).perform(c)
        case .watchKeys, .loadPins, .savePins, .forgetKey, .copy, .nameKey, .rememberOATHAllKeys, .quit:
            // The runner performs these itself.
            break
        }
    }

    /// What the key tells of itself: over its reader when it has one (Management, or probing the
    /// applications), else over its FIDO interface.
    private func probe(_ d: KeyDescriptor) async -> KeyInfo? {
        if d.reader != nil {
            do {
                return try await inspect(reader: d)
            } catch SmartCardError.cardRemoved {
                // A key that just arrived can answer its first exchanges with a reset while its reader powers it up
                // again (vpcd does, a moment after a second card arrives): one more try, a moment later. A key
                // that does not answer in time is not asked twice.
                try? await Task.sleep(for: .milliseconds(300))
                return try? await inspect(reader: d)
            } catch {
                return nil
            }
        }
        if d.fidoHID != nil {
            guard let fido = try? await backend.connectFIDO(d, observer: nil) else { return nil }
            let info = await KeyProbe.inspect(fido: fido, name: d.name)
            await fido.close()
            return info
        }
        return try? await KeyProbe.inspect(hid: d)
    }

    /// WRITE CONFIG over the interface that carries Management (the reader, else FIDO HID, else OTP HID); nil
    /// when written, else the words for what went wrong.
    private func writeConfig(
        _ d: KeyDescriptor, _ configuration: DeviceConfiguration, reboot: Bool,
        currentLockCode: [UInt8]?, newLockCode: [UInt8]?
    ) async -> UIText? {
        do {
            try await DeviceOperations(BackendKey(backend, d)).write(
                configuration, reboot: reboot, currentLockCode: currentLockCode, newLockCode: newLockCode)
            return nil
        } catch {
            return ErrorExplanation(error).text
        }
    }

    /// What the key in `d`'s reader tells of itself, on a fresh probe connection (`KeyBackend.connectProbe`) closed
    /// after.
    private func inspect(reader d: KeyDescriptor) async throws -> KeyInfo {
        let connection = try await backend.connectProbe(d)
        do {
            let info = try await KeyProbe.inspect(connection: connection)
            await connection.close()
            return info
        } catch {
            await connection.close()
            throw error
        }
    }
}

/// Pinned (favourite) accounts, per OATH device ID, in `pins.json` under the config directory (mode 0600).
public struct PinStore: Sendable {
    public let path: String

    public init(path: String? = nil) {
        self.path = path ?? RememberedKeys.configDirectory() + "/pins.json"
    }

    /// The file's pins; an unreadable file (cut short by a crash of an older version, edited by hand) is kept
    /// aside as `pins.json.corrupt` and pinning starts afresh: `setAside` then names where it went.
    private func load() -> (map: [String: [String]], setAside: String?) {
        switch StateFile.read([String: [String]].self, from: path) {
        case .absent: return ([:], nil)
        case .unreadable: return ([:], AtomicFile.setAside(path))
        case .value(let map): return (map, nil)
        }
    }

    public func pins(for deviceID: String) -> Set<String> {
        loadReporting(for: deviceID).pins
    }

    /// The pins of one device, and where an unreadable file was moved (to tell the user), if it was.
    public func loadReporting(for deviceID: String) -> (pins: Set<String>, setAside: String?) {
        let (map, aside) = load()
        return (Set(map[deviceID] ?? []), aside)
    }

    /// Saves the pins of one device (an empty set removes its entry). Failures are ignored: pins are a
    /// convenience, never worth stopping for.
    public func save(_ pins: Set<String>, for deviceID: String) {
        var map = load().map
        map[deviceID] = pins.isEmpty ? nil : pins.sorted()
        try? StateFile.write(map, to: path)
    }
}

/// A tab's work: it performs the tab's commands with what the key work running it has (the backend, the runner's
/// environment, where results go, the runtimes tabs keep across their commands).
protocol TabWork: Sendable {
    var work: KeyWork { get }
}

extension TabWork {
    var backend: any KeyBackend { work.backend }
    var environment: RunnerEnvironment { work.environment }
    var post: @Sendable (Msg) -> Void { work.post }

    /// Where an export writes `path` (`~` expanded), or nil when something is there and may not be overwritten.
    func exportTarget(_ path: String, overwrite: Bool) -> String? {
        let full = PathString.expandingHome(path)
        var status = stat()
        return !overwrite && lstat(full, &status) == 0 ? nil : full
    }

    /// Writes a certificate in PEM to `path`. A certificate is public: readable by others, as openssl and ykman
    /// write them.
    func writeCertificate(_ pem: String, to path: String) throws {
        try AtomicFile.write(Array(pem.utf8), to: path, mode: 0o644)
    }
}
