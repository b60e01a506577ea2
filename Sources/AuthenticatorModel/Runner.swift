import FoundationEssentials
import Glibc
import KeyKit

/// Where keys come from: their arrivals and departures, and connections to their interfaces. Which
/// interface serves an application is decided by `KeyDescriptor.channels(for:)`, nowhere else.
public protocol KeyBackend: Sendable {
    func events() -> AsyncStream<KeyEvent>
    /// A connection to the key's smart-card interface (CCID on USB, or its NFC reader) for one operation: on
    /// PC/SC it is one transaction, so no other program's command comes between this one's.
    func connect(_ key: KeyDescriptor) async throws -> any SmartCardConnection
    /// A connection that outlives an operation (the APDU console's): it holds no transaction between
    /// operations, and each operation takes one with `withTransaction`.
    func connectHeld(_ key: KeyDescriptor) async throws -> any SmartCardConnection
    /// A connection that only reads what the key is (no touch): a reader that does not answer an exchange
    /// within `PCSCConnection.readerTimeout` is given up then, not after the 30 s a touch may take.
    func connectProbe(_ key: KeyDescriptor) async throws -> any SmartCardConnection
    /// A connection for FIDO2 and U2F: CTAPHID on the FIDO HID interface on USB, CTAP over the reader on NFC.
    func connectFIDO(_ key: KeyDescriptor, observer: (@Sendable (APDUExchange) -> Void)?) async throws
        -> any FIDOConnection
    /// The Yubico OTP a touch of the key's button types, for a key that can be touched from software (the
    /// virtual key in demo mode); nil for real keys, which type it themselves.
    func touchForOTP() -> String?
}

extension KeyBackend {
    public func touchForOTP() -> String? { nil }

    public func connectHeld(_ key: KeyDescriptor) async throws -> any SmartCardConnection {
        try await connect(key)
    }

    public func connectProbe(_ key: KeyDescriptor) async throws -> any SmartCardConnection {
        try await connect(key)
    }

    public func connectFIDO(_ key: KeyDescriptor, observer: (@Sendable (APDUExchange) -> Void)?) async throws
        -> any FIDOConnection
    {
        try await key.openFIDO(observer: observer) { try await connect(key) }
    }
}

/// The keys on this machine: PC/SC readers and HID interfaces joined into keys by `DeviceMonitor`
/// (blocking on pcscd and on inotify, no polling).
public struct DeviceBackend: KeyBackend {
    let monitor: DeviceMonitor
    /// A PC/SC context per reader, kept between the connections (see `ReaderContexts`).
    let contexts = ReaderContexts()

    public init(monitor: DeviceMonitor = DeviceMonitor()) {
        self.monitor = monitor
    }

    public func events() -> AsyncStream<KeyEvent> { monitor.events() }

    public func connect(_ key: KeyDescriptor) async throws -> any SmartCardConnection {
        guard key.has(.apdu), let reader = key.reader else {
            throw KeyRouteError.notOnThisKey(.apdu, key.interfaces)
        }
        return try await contexts.connect(reader: reader)
    }

    public func connectHeld(_ key: KeyDescriptor) async throws -> any SmartCardConnection {
        guard key.has(.apdu), let reader = key.reader else {
            throw KeyRouteError.notOnThisKey(.apdu, key.interfaces)
        }
        return try await contexts.connect(reader: reader, transaction: false)
    }

    public func connectProbe(_ key: KeyDescriptor) async throws -> any SmartCardConnection {
        guard key.has(.apdu), let reader = key.reader else {
            throw KeyRouteError.notOnThisKey(.apdu, key.interfaces)
        }
        return try await contexts.connect(reader: reader, probe: true)
    }
}

/// The effects that live outside the model and the keys: the clipboard and the files of pins and
/// remembered passwords.
public struct RunnerEnvironment: Sendable {
    /// Copies text to the clipboard; answers how ("OSC 52, xclip"), or nil when nothing could. A host
    /// that owns the terminal (the TUI loop) handles `.copy` itself and leaves this nil.
    public var copy: (@Sendable (String) async -> String?)?
    public var pins: PinStore
    /// The names given to keys.
    public var keyNames = KeyNames()
    public var rememberedKeys: RememberedKeys
    /// Each APDU exchanged, for the trace and the benchmarks' APDU count.
    public var observer: (@Sendable (APDUExchange) -> Void)?
    /// The config file's `[otp] parsers`, tried on NDEF records before the standard forms.
    public var otpParsers: [Config.OTPPattern] = []
    /// The config file the TUI writes the OATH tab's view to (`[oath] all_keys`); nil: it is not written.
    public var configPath: String?

    public init(
        copy: (@Sendable (String) async -> String?)? = nil, pins: PinStore = PinStore(),
        rememberedKeys: RememberedKeys = RememberedKeys(),
        observer: (@Sendable (APDUExchange) -> Void)? = nil
    ) {
        self.copy = copy
        self.pins = pins
        self.rememberedKeys = rememberedKeys
        self.observer = observer
    }
}

/// Performs commands: key work one command at a time (a key has one selected application), everything
/// else at once; each answer is posted back as a message.
public final class Runner: Sendable {
    private let backend: any KeyBackend
    private let environment: RunnerEnvironment
    private let post: @Sendable (Msg) -> Void
    private let queue: AsyncStream<Command>.Continuation
    private let worker: Task<Void, Never>
    private let watcher = LockedValue<Task<Void, Never>?>(nil)
    /// Derived OATH access keys of unlocked keys, by key id; in memory only, dropped when the key leaves.
    /// OATH access keys of unlocked keys, by key id, each in a buffer that is zeroed when it is dropped.
    private let unlockKeys = LockedValue<[String: SecretBytes]>([:])
    /// The FIDO2 tab's PIN tokens (in memory only, dropped when the key leaves) and running connection.
    private let fidoRuntime: FIDOTabRuntime
    /// The SSH tab's PIN for its visit (in locked memory, wiped when the visit ends or the key leaves).
    private let sshRuntime: SSHTabRuntime

    public init(backend: any KeyBackend, environment: RunnerEnvironment, post: @escaping @Sendable (Msg) -> Void) {
        var environment = environment
        if environment.rememberedKeys.onSetAside == nil {
            // An unreadable file of remembered passwords is said in the status line, with where it went.
            environment.rememberedKeys.onSetAside = { path, aside in
                post(.notice(UIText("status.fileSetAside", ["path": path, "aside": aside]), .warning))
            }
        }
        self.backend = backend
        self.environment = environment
        self.post = post
        let (stream, continuation) = AsyncStream<Command>.makeStream(bufferingPolicy: .unbounded)
        queue = continuation
        let work = KeyWork(backend: backend, environment: environment, post: post)
        fidoRuntime = work.fidoRuntime
        sshRuntime = work.sshRuntime
        let keys = unlockKeys
        worker = Task {
            for await command in stream { await work.perform(command, unlockKeys: keys) }
        }
    }

    deinit {
        queue.finish()
        worker.cancel()
        watcher.withLock { $0?.cancel() }
    }

    public func perform(_ command: Command) {
        switch command {
        case .watchKeys:
            let events = backend.events()
            let post = self.post
            let task = Task {
                for await event in events { post(.keyEvent(event)) }
            }
            watcher.withLock {
                $0?.cancel(); $0 = task
            }
        case .copy(let text, let status):
            guard let copy = environment.copy else { return }
            let post = self.post
            Task {
                let done = await copy(text)
                post(
                    .copied(
                        done != nil,
                        done.map { status.adding(how: $0) }
                            ?? UIText("status.copyFailed")))
            }
        case .loadPins(let deviceID):
            let (pins, setAside) = environment.pins.loadReporting(for: deviceID)
            post(.pinsLoaded(deviceID: deviceID, pins))
            if let setAside {
                post(
                    .notice(
                        UIText("status.fileSetAside", ["path": environment.pins.path, "aside": setAside]), .warning))
            }
        case .savePins(let deviceID, let pins):
            environment.pins.save(pins, for: deviceID)
        case .nameKey(let serial, let name):
            do {
                if let name {
                    post(.keyNamed(serial: serial, name: try environment.keyNames.set(name, for: serial), problem: nil))
                } else {
                    try environment.keyNames.forget(serial)
                    post(.keyNamed(serial: serial, name: nil, problem: nil))
                }
            } catch {
                post(.keyNamed(serial: serial, name: name, problem: error.text))
            }
        case .rememberOATHAllKeys(let on):
            guard let path = environment.configPath else { return }
            do {
                try ConfigEdit.rememberOATHAllKeys(on, path: path)
            } catch {
                post(
                    .notice(
                        UIText("oath.allKeys.notRemembered", ["path": error.path, "detail": error.detail]), .warning))
            }
        case .fido(let c) where c.runsAtOnce:
            // A cancel must reach the key while the command it cancels still waits in the queue's worker.
            let runtime = fidoRuntime
            Task { await runtime.cancel() }
        case .ssh(.cancel):
            let runtime = sshRuntime
            Task { await runtime.connection.cancel() }
        case .ssh(.forgetPIN(let keyID)):
            // At once: the PIN is not kept while key work queued before it runs.
            sshRuntime.forget(keyID)
        case .forgetKey(let keyID):
            fidoRuntime.forget(keyID)
            sshRuntime.forget(keyID)
            unlockKeys.withLock { keys in
                keys[keyID]?.wipe()
                keys[keyID] = nil
            }
        case .quit:
            queue.finish()
            watcher.withLock { $0?.cancel() }
        default:
            queue.yield(command)
        }
    }

    /// Stops watching and working.
    public func stop() {
        perform(.quit)
    }
}

/// A value guarded by a lock, for state shared between the runner's tasks.
public final class LockedValue<Value: Sendable>: @unchecked Sendable {
    // @unchecked: every access to `value` holds `lock`. Not a `Mutex`: its `withLock` only hands back
    // Sendable results, and callers here read out values of any type.
    private var value: Value
    private let lock = ThreadLock()

    public init(_ value: Value) {
        self.value = value
    }

    @discardableResult
    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&value) }
    }
}
