import Glibc
import KeyKit

/// Sets up the private mount namespace the USB key lives in (the process is already in it: see
/// `reexecInPrivateNamespace`): /dev, /run, and the writable parts of /sys.
public enum USBNamespace {
    /// Set while the re-executed process sets up its namespace.
    public static let marker = "YKTERM_USB_NAMESPACE"
    /// Where the control socket's path is in COMMAND's environment.
    public static let controlVariable = "YKTERM_USB_CONTROL"
    public static let runDirectory = "/run/ykterm-usb"
    public static let controlPath = runDirectory + "/control"

    /// Replaces this process with itself run by `unshare --mount --propagation private` (the process
    /// keeps its PID). Returns only on failure.
    public static func reexecInPrivateNamespace(arguments: [String]) -> USBError {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return .system("readlink /proc/self/exe", errno) }
        let exe = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        setenv(marker, "1", 1)
        let argv = ["unshare", "--mount", "--propagation", "private", "--", exe] + arguments
        let e = withCStrings(argv) { execvp("unshare", $0) }
        _ = e
        return .system("exec unshare", errno)
    }

    static func mountOrThrow(_ source: String, _ target: String, _ type: String?, _ flags: UInt, _ data: String?) throws
    {
        let r = data.map { d in mount(source, target, type, flags, d) } ?? mount(source, target, type, flags, nil)
        guard r == 0 else { throw USBError.system("mount \(type ?? "bind") on \(target)", errno) }
    }

    /// A tmpfs over /dev with the usual nodes bound back from the old one, a devpts of its own (so
    /// terminals work inside) and /dev/fuse.
    public static func setUpDev() throws {
        let old = open("/dev", Int32(0o10000000) | O_DIRECTORY | O_CLOEXEC)  // O_PATH
        guard old >= 0 else { throw USBError.system("open /dev", errno) }
        defer { close(old) }
        try mountOrThrow("tmpfs", "/dev", "tmpfs", UInt(MS_NOSUID), "mode=0755")
        for name in ["null", "zero", "full", "random", "urandom", "tty", "fuse"] {
            let fd = open("/dev/" + name, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw USBError.system("create /dev/\(name)", errno) }
            close(fd)
            try mountOrThrow("/proc/self/fd/\(old)/\(name)", "/dev/" + name, nil, UInt(MS_BIND), nil)
        }
        try SysFS.directory("/dev/shm")
        try mountOrThrow("tmpfs", "/dev/shm", "tmpfs", UInt(MS_NOSUID) | UInt(MS_NODEV), "mode=1777")
        try SysFS.directory("/dev/pts")
        try mountOrThrow(
            "devpts", "/dev/pts", "devpts", UInt(MS_NOSUID) | UInt(MS_NOEXEC),
            "newinstance,ptmxmode=0666,mode=0620,gid=5")
        try SysFS.link("/dev/ptmx", "pts/ptmx")
        try SysFS.link("/dev/fd", "/proc/self/fd")
        for (i, name) in ["stdin", "stdout", "stderr"].enumerated() {
            try SysFS.link("/dev/" + name, "/proc/self/fd/\(i)")
        }
    }

    /// A tmpfs over /run with pcscd's directory and ours (mode 0700: the control socket).
    public static func setUpRun() throws {
        try mountOrThrow("tmpfs", "/run", "tmpfs", UInt(MS_NOSUID) | UInt(MS_NODEV), "mode=0755")
        try SysFS.directory("/run/pcscd")
        guard mkdir(runDirectory, 0o700) == 0 else { throw USBError.system("mkdir \(runDirectory)", errno) }
    }

    /// tmpfs over /sys/class/hidraw and over the PCI root under /sys/devices (sysfs makes no directories);
    /// returns the latter.
    public static func setUpSys() throws -> String {
        try mountOrThrow("tmpfs", "/sys/class/hidraw", "tmpfs", UInt(MS_NOSUID) | UInt(MS_NODEV), "mode=0755")
        var st = stat()
        let root = stat("/sys/devices/pci0000:00", &st) == 0 ? "/sys/devices/pci0000:00" : "/sys/devices/platform"
        try mountOrThrow("tmpfs", root, "tmpfs", UInt(MS_NOSUID) | UInt(MS_NODEV), "mode=0755")
        return root
    }

    /// A vpcd reader configuration for pcscd in `directory`, naming the reader as the key's CCID interface.
    public static func writeReaderConfiguration(
        directory: String, name: String, port: UInt16, driver: String, file: String = "vpcd"
    ) throws {
        try SysFS.directory(directory)
        let hexPort = String(port, radix: 16, uppercase: true)
        try SysFS.file(
            directory + "/" + file,
            "FRIENDLYNAME \"\(name)\"\nDEVICENAME /dev/null:0x\(hexPort)\n"
                + "LIBPATH \(driver)\nCHANNELID 0x\(hexPort)\n")
    }

    public static let vpcdDriver = "/usr/lib/pcsc/drivers/serial/libifdvpcd.so"
    public static let oneSlotDriverName = "libykterm-ifd-one-slot.so"

    /// The reader driver for pcscd: vpcd behind ykterm's one-slot driver when that sits next to the
    /// executable (or in ../lib), so pcscd makes one reader; vpcd itself (two readers, the second always
    /// empty) otherwise.
    public static func readerDriver() -> (path: String, oneSlot: Bool) {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if n > 0 {
            let exe = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let dir = String(exe[..<(exe.lastIndex(of: "/") ?? exe.endIndex)])
            for candidate in [dir + "/" + oneSlotDriverName, dir + "/../lib/ykterm/" + oneSlotDriverName] {
                if access(candidate, R_OK) == 0 { return (candidate, true) }
            }
        }
        return (vpcdDriver, false)
    }

    /// A port P with P and P+1 free on 127.0.0.1 (vpcd listens on one per slot).
    public static func freePortPair() -> UInt16? {
        for _ in 0..<200 {
            let p = UInt16.random(in: 10000...30000) * 2
            if portFree(p) && portFree(p + 1) { return p }
        }
        return nil
    }

    private static func portFree(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Starts `argv` (searched in PATH) with `environment`; stdout and stderr go to /dev/null when `quiet`.
    public static func spawn(_ argv: [String], environment: [String], quiet: Bool) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if quiet {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { sigaddset(&defaults, s) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var pid: pid_t = 0
        let r = withCStrings(argv) { a in
            withCStrings(environment) { e in posix_spawnp(&pid, argv[0], &actions, &attributes, a, e) }
        }
        guard r == 0 else { throw USBError.system("start \(argv[0])", r) }
        return pid
    }

    /// Stops a process we started: SIGTERM, then SIGKILL after `timeout` seconds; reaps it.
    public static func stop(_ pid: pid_t, timeout: Double = 3) {
        kill(pid, SIGTERM)
        var waited = 0.0
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if waited >= timeout {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                return
            }
            SystemThread.sleep(0.02)
            waited += 0.02
        }
    }

    static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
