import Foundation
import KeyKit
import Synchronization
import Testing
import VirtualKey

/// Collects what a @Sendable callback reports.
private final class Recorder<T: Sendable>: Sendable {
    private let items = Mutex<[T]>([])
    func add(_ item: T) { items.withLock { $0.append(item) } }
    var all: [T] { items.withLock { $0 } }
}

/// A flag closures can share.
private final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}

private func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
}

/// Echoes CBOR requests behind a success status byte, and U2F requests behind SW 9000.
private let echo: VirtualHIDDevice.Handler = { command, payload, _ in
    command == CTAPHID.Command.cbor ? [0x00] + payload : payload + [0x90, 0x00]
}

/// Runs the tasks that prefer it on a Dispatch queue of its own. An inline connection blocks the thread its
/// request runs on: in a test that thread is one of the task pool's (as many as cores), which the tests running
/// in parallel need too, so the inline tests run their requests here instead.
private final class OffPoolExecutor: TaskExecutor {
    static let shared = OffPoolExecutor()
    private let queue = DispatchQueue(label: "ykterm.tests.inline-ctaphid")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// A device that counts the reads that do not wait (timeout 0): the ones that drain stale reports.
private final class CountingDevice: HIDReportDevice {
    let inner: VirtualHIDDevice
    private let zeroWaitReads = Atomic<Int>(0)
    init(_ inner: VirtualHIDDevice) { self.inner = inner }
    var drainReads: Int { zeroWaitReads.load(ordering: .relaxed) }
    func write(_ report: [UInt8]) throws { try inner.write(report) }
    func read(timeoutMilliseconds: Int) throws -> [UInt8]? {
        if timeoutMilliseconds == 0 { zeroWaitReads.add(1, ordering: .relaxed) }
        return try inner.read(timeoutMilliseconds: timeoutMilliseconds)
    }
    func close() { inner.close() }
}

private func seconds(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

/// Polls `condition` every 10 ms for at most `timeout` seconds.
private func waitUntil(_ timeout: Double, _ condition: () -> Bool) async -> Bool {
    let start = ContinuousClock.now
    while seconds(since: start) < timeout {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

private func connect(
    _ device: VirtualHIDDevice, timeout: Double = 5, userPresenceTimeout: Double = 10,
    busyRetryWindow: Double = 2, inline: Bool = false
) async throws -> CTAPHIDConnection {
    try await CTAPHIDConnection(
        device: device, name: "virtual", timeout: timeout,
        userPresenceTimeout: userPresenceTimeout, busyRetryWindow: busyRetryWindow,
        inline: inline)
}

/// Reads the next whole message on `channel` straight from the device, or nil after `timeout` seconds.
private func readMessage(_ device: VirtualHIDDevice, channel: UInt32, timeout: Double = 1) throws -> CTAPHID.Message? {
    var r = CTAPHID.Reassembler(channel: channel)
    let start = ContinuousClock.now
    while seconds(since: start) < timeout {
        guard let packet = try device.read(timeoutMilliseconds: 20) else { continue }
        if let m = try r.add(packet) { return m }
    }
    return nil
}

/// Allocates a channel with raw packets.
private func allocate(_ device: VirtualHIDDevice) throws -> UInt32 {
    let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
    for p in try CTAPHID.fragment(cid: CTAPHID.broadcastCID, command: CTAPHID.Command.initialize, payload: nonce) {
        try device.write(p)
    }
    let m = try #require(try readMessage(device, channel: CTAPHID.broadcastCID))
    #expect(m.command == CTAPHID.Command.initialize)
    #expect(Array(m.payload.prefix(8)) == nonce)
    return try #require(CTAPHID.channel(of: Array(m.payload[8..<12])))
}

@Suite(.timeLimit(.minutes(1))) struct CTAPHIDDeviceTests {
    // MARK: Connection against the virtual device

    @Test func initAllocatesChannels() async throws {
        let device = VirtualHIDDevice(handler: echo)
        let a = try await connect(device)
        #expect(a.channel != CTAPHID.broadcastCID && a.channel != 0)
        #expect(a.protocolVersion == 2)
        #expect(a.deviceVersion == Version(5, 7, 2))
        #expect(a.capabilities == [.wink, .cbor, .nmsg])
        #expect(a.name == "virtual")
        let second = device.openAnotherHandle()
        let b = try await connect(second)
        #expect(b.channel != a.channel)
        #expect(device.statistics.channelsAllocated == 2)
        await a.close()
        await b.close()
    }

    @Test(arguments: [0, 1, 57, 58, 1000, 7609])
    func pingEchoes(count: Int) async throws {
        let connection = try await connect(VirtualHIDDevice(handler: echo))
        #expect(try await connection.ping(pattern(count)) == pattern(count))
        await connection.close()
    }

    @Test func pingTooLongFailsBeforeSending() async throws {
        let device = VirtualHIDDevice(handler: echo)
        let connection = try await connect(device)
        await #expect(throws: FIDOTransportError.invalidLength) { try await connection.ping(pattern(7610)) }
        #expect(try await connection.ping([7]) == [7])
    }

    @Test func wink() async throws {
        let device = VirtualHIDDevice(handler: echo)
        let connection = try await connect(device)
        try await connection.wink()
        try await connection.wink()
        #expect(device.statistics.winks == 2)
    }

    @Test(arguments: [1, 100, 7608])
    func cborRoundTrip(count: Int) async throws {
        let device = VirtualHIDDevice(handler: echo)
        let connection = try await connect(device)
        let request = [CTAP2.Command.getInfo.rawValue] + pattern(count - 1)
        #expect(try await connection.sendCBOR(request, progress: nil) == [0x00] + request)
        #expect(device.statistics.handlerCalls == 1)
    }

    @Test func handlerSeesCommandAndPayload() async throws {
        let seen = Recorder<[UInt8]>()
        let device = VirtualHIDDevice { command, payload, _ in
            seen.add([command] + payload)
            return [0x00, 0xA0]
        }
        let connection = try await connect(device)
        #expect(try await connection.sendCBOR([0x04]) == [0x00, 0xA0])
        #expect(seen.all == [[0x10, 0x04]])
    }

    @Test func u2fThroughMSG() async throws {
        var options = VirtualHIDDevice.Options()
        options.capabilities = [.wink, .cbor]
        let device = VirtualHIDDevice(options: options, handler: echo)
        let connection = try await connect(device)
        let apdu: [UInt8] = [0x00, 0x03, 0x00, 0x00, 0x00]
        #expect(try await connection.sendU2F(apdu) == apdu + [0x90, 0x00])
    }

    @Test func msgRefusedWhenTheKeyHasNoU2F() async throws {
        let connection = try await connect(VirtualHIDDevice(handler: echo))  // NMSG
        await #expect(throws: FIDOTransportError.ctaphidError(CTAPHID.ErrorCode.invalidCommand)) {
            try await connection.sendU2F([0x00, 0x03, 0x00, 0x00, 0x00])
        }
    }

    @Test func keepaliveIsReportedAsProgress() async throws {
        var options = VirtualHIDDevice.Options()
        options.keepAliveInterval = 0.03
        let device = VirtualHIDDevice(options: options) { _, payload, keepalive in
            Thread.sleep(forTimeInterval: 0.2)  // processing KEEPALIVEs go out meanwhile
            keepalive(CTAPHID.KeepaliveStatus.userPresenceNeeded)
            Thread.sleep(forTimeInterval: 0.2)
            return [0x00] + payload
        }
        let connection = try await connect(device)
        let progress = Recorder<FIDOProgress>()
        let answer = try await connection.sendCBOR([0x01, 0xA0]) { progress.add($0) }
        #expect(answer == [0x00, 0x01, 0xA0])
        // Reported when the status changes, not for every KEEPALIVE.
        #expect(progress.all == [.processing, .waitingForUserPresence])
    }

    @Test func errorIsMapped() async throws {
        var options = VirtualHIDDevice.Options()
        options.errorResponse = CTAPHID.ErrorCode.invalidParameter
        let device = VirtualHIDDevice(options: options, handler: echo)
        let connection = try await connect(device)
        await #expect(throws: FIDOTransportError.ctaphidError(CTAPHID.ErrorCode.invalidParameter)) {
            try await connection.sendCBOR([0x04])
        }
        // An empty CBOR request is invalid for the key too.
        device.options.errorResponse = nil
        await #expect(throws: FIDOTransportError.ctaphidError(CTAPHID.ErrorCode.invalidLength)) {
            try await connection.sendCBOR([])
        }
        #expect(try await connection.sendCBOR([0x04]) == [0x00, 0x04])
    }

    @Test func busyIsRetried() async throws {
        var options = VirtualHIDDevice.Options()
        options.busyResponses = 3
        let device = VirtualHIDDevice(options: options, handler: echo)
        let connection = try await connect(device)
        #expect(try await connection.sendCBOR([0x04]) == [0x00, 0x04])
        #expect(device.statistics.errorsSent == [6, 6, 6])
    }

    @Test func busyWithAnotherChannel() async throws {
        let release = Flag()
        let device = VirtualHIDDevice { _, payload, _ in
            let start = ContinuousClock.now
            while !release.isSet, seconds(since: start) < 10 { Thread.sleep(forTimeInterval: 0.01) }
            return [0x00] + payload
        }
        let browser = try await connect(device)
        let ours = try await connect(device.openAnotherHandle(), busyRetryWindow: 0.3)
        let first = Task { try await browser.sendCBOR([0x02, 0x01]) }
        #expect(await waitUntil(2) { device.statistics.handlerCalls == 1 })

        // The key stays busy longer than we retry.
        let start = ContinuousClock.now
        await #expect(throws: FIDOTransportError.channelBusy) { try await ours.sendCBOR([0x04]) }
        #expect(seconds(since: start) < 1.5)
        #expect(device.statistics.errorsSent.contains(CTAPHID.ErrorCode.channelBusy))

        // Once the other request is done, ours goes through; each side got only its own answer.
        release.set()
        #expect(try await first.value == [0x00, 0x02, 0x01])
        #expect(try await ours.sendCBOR([0x04]) == [0x00, 0x04])
        #expect(try await browser.ping([1, 2]) == [1, 2])
    }

    @Test func busyUntilTheOtherFinishes() async throws {
        let device = VirtualHIDDevice { _, payload, _ in
            Thread.sleep(forTimeInterval: 0.3)
            return [0x00] + payload
        }
        let browser = try await connect(device)
        let ours = try await connect(device.openAnotherHandle(), busyRetryWindow: 3)
        let first = Task { try await browser.sendCBOR([0x02]) }
        #expect(await waitUntil(2) { device.statistics.handlerCalls == 1 })
        #expect(try await ours.sendCBOR([0x04]) == [0x00, 0x04])
        #expect(try await first.value == [0x00, 0x02])
        #expect(device.statistics.errorsSent.contains(CTAPHID.ErrorCode.channelBusy))
    }

    /// Inline too (device calls on the calling thread, as the fido commands make them): the same limit.
    @Test(arguments: [false, true])
    func timeoutWhenResponsesAreDropped(inline: Bool) async throws {
        try await withTaskExecutorPreference(OffPoolExecutor.shared) {
            var options = VirtualHIDDevice.Options()
            options.dropResponses = true
            options.keepAliveInterval = nil
            let device = VirtualHIDDevice(options: options, handler: echo)
            let connection = try await connect(device, timeout: 0.3, userPresenceTimeout: 0.3, inline: inline)
            let start = ContinuousClock.now
            await #expect(throws: FIDOTransportError.timeout) { try await connection.sendCBOR([0x04]) }
            let took = seconds(since: start)
            #expect(took >= 0.25 && took < 1.5)
            // The connection still works afterwards.
            device.options.dropResponses = false
            #expect(try await connection.sendCBOR([0x04]) == [0x00, 0x04])
        }
    }

    @Test func lateAnswerIsNotTakenForTheNextOne() async throws {
        let release = Flag()
        let device = VirtualHIDDevice { _, payload, _ in
            let start = ContinuousClock.now
            while payload.first == 0x01, !release.isSet, seconds(since: start) < 10 {
                Thread.sleep(forTimeInterval: 0.01)
            }
            return [0x00] + payload
        }
        let connection = try await connect(device, timeout: 0.2, userPresenceTimeout: 0.2)
        await #expect(throws: FIDOTransportError.timeout) { try await connection.sendCBOR([0x01]) }
        release.set()
        // The key answered the cancelled request with KEEPALIVE_CANCEL; the next request gets its own answer.
        #expect(try await connection.sendCBOR([0x04, 0x05]) == [0x00, 0x04, 0x05])
        #expect(try await connection.ping([9]) == [9])
        #expect(device.statistics.cancels == 1)
    }

    @Test func processingKeepalivesDoNotExtendPastTheTimeout() async throws {
        var options = VirtualHIDDevice.Options()
        options.keepAliveForever = true
        options.keepAliveInterval = 0.03
        let device = VirtualHIDDevice(options: options, handler: echo)
        let connection = try await connect(device, timeout: 0.3, userPresenceTimeout: 0.9)
        let progress = Recorder<FIDOProgress>()
        let start = ContinuousClock.now
        await #expect(throws: FIDOTransportError.timeout) {
            try await connection.sendCBOR([0x04]) { progress.add($0) }
        }
        let took = seconds(since: start)
        #expect(took >= 0.25 && took < 0.8)
        #expect(progress.all == [.processing])
        // The timeout sent CANCEL, so the key stopped.
        #expect(await waitUntil(1) { device.statistics.cancels == 1 })
    }

    @Test func userPresenceExtendsTheTimeout() async throws {
        var options = VirtualHIDDevice.Options()
        options.keepAliveForever = true
        options.keepAliveStatus = CTAPHID.KeepaliveStatus.userPresenceNeeded
        options.keepAliveInterval = 0.03
        let device = VirtualHIDDevice(options: options, handler: echo)
        let connection = try await connect(device, timeout: 0.2, userPresenceTimeout: 0.8)
        let progress = Recorder<FIDOProgress>()
        let start = ContinuousClock.now
        await #expect(throws: FIDOTransportError.timeout) {
            try await connection.sendCBOR([0x01]) { progress.add($0) }
        }
        let took = seconds(since: start)
        #expect(took >= 0.7 && took < 2)
        #expect(progress.all == [.waitingForUserPresence])
    }

    @Test func cancelWhileWaitingForTouch() async throws {
        var options = VirtualHIDDevice.Options()
        options.keepAliveForever = true
        options.keepAliveStatus = CTAPHID.KeepaliveStatus.userPresenceNeeded
        options.keepAliveInterval = 0.05
        let device = VirtualHIDDevice(options: options, handler: echo)
        let connection = try await connect(device)
        let progress = Recorder<FIDOProgress>()
        let request = Task { try await connection.sendCBOR([0x01, 0xA0]) { progress.add($0) } }
        #expect(await waitUntil(3) { progress.all.contains(.waitingForUserPresence) })
        let start = ContinuousClock.now
        await connection.cancel()
        #expect(try await request.value == [CTAPError.keepaliveCancel])
        #expect(seconds(since: start) < 1)
        #expect(device.statistics.cancels == 1)
        // Cancel without a request in progress does nothing.
        await connection.cancel()
        device.options.keepAliveForever = false
        #expect(try await connection.sendCBOR([0x04]) == [0x00, 0x04])
        #expect(device.statistics.cancels == 1)
    }

    @Test func cancellingTheTaskSendsCancel() async throws {
        var options = VirtualHIDDevice.Options()
        options.keepAliveForever = true
        options.keepAliveStatus = CTAPHID.KeepaliveStatus.userPresenceNeeded
        let device = VirtualHIDDevice(options: options, handler: echo)
        let hookCalled = Flag()
        device.setCancelHook { hookCalled.set() }
        let connection = try await connect(device)
        let progress = Recorder<FIDOProgress>()
        let request = Task { try await connection.sendCBOR([0x01]) { progress.add($0) } }
        #expect(await waitUntil(3) { !progress.all.isEmpty })
        request.cancel()
        #expect(try await request.value == [CTAPError.keepaliveCancel])
        #expect(await waitUntil(1) { hookCalled.isSet })
    }

    @Test func closeWhileWaiting() async throws {
        var options = VirtualHIDDevice.Options()
        options.keepAliveForever = true
        let device = VirtualHIDDevice(options: options, handler: echo)
        let connection = try await connect(device)
        let progress = Recorder<FIDOProgress>()
        let request = Task { try await connection.sendCBOR([0x01]) { progress.add($0) } }
        #expect(await waitUntil(3) { !progress.all.isEmpty })
        await connection.close()
        await #expect(throws: FIDOTransportError.closed) { try await request.value }
        await #expect(throws: FIDOTransportError.closed) { try await connection.sendCBOR([0x04]) }
        await #expect(throws: FIDOTransportError.closed) { try await connection.ping([]) }
        await connection.close()  // twice is fine
    }

    @Test func badResponseSequence() async throws {
        var options = VirtualHIDDevice.Options()
        options.badResponseSequence = true
        let device = VirtualHIDDevice(options: options, handler: echo)
        let connection = try await connect(device)
        #expect(try await connection.ping([1, 2, 3]) == [1, 2, 3])  // one packet: no sequence numbers
        await #expect(throws: FIDOTransportError.invalidSequence) { try await connection.ping(pattern(200)) }
        // The rest of the broken answer still waits on the device; the next request reads it away first.
        device.options.badResponseSequence = false
        #expect(try await connection.ping(pattern(200)) == pattern(200))
    }

    /// Reports are read away before a request only when something can be left over: at CTAPHID_INIT and
    /// after an exchange that failed, not after one that read its whole answer (each read is a round trip
    /// on a FUSE-served node).
    @Test(arguments: [false, true])
    func staleReportsAreDrainedOnlyAfterAFailedExchange(inline: Bool) async throws {
        try await withTaskExecutorPreference(OffPoolExecutor.shared) {
            var options = VirtualHIDDevice.Options()
            options.keepAliveInterval = nil
            let device = CountingDevice(VirtualHIDDevice(options: options, handler: echo))
            let connection = try await CTAPHIDConnection(
                device: device, name: "virtual", timeout: 0.3,
                userPresenceTimeout: 0.3, inline: inline)
            #expect(device.drainReads == 1)
            for i in 0..<5 { #expect(try await connection.sendCBOR(pattern(100 + i)) == [0x00] + pattern(100 + i)) }
            #expect(try await connection.ping([7]) == [7])
            #expect(device.drainReads == 1)
            device.inner.options.dropResponses = true
            await #expect(throws: FIDOTransportError.timeout) { try await connection.sendCBOR([0x04]) }
            device.inner.options.dropResponses = false
            #expect(try await connection.sendCBOR([0x04]) == [0x00, 0x04])
            #expect(device.drainReads == 2)
            #expect(try await connection.sendCBOR([0x05]) == [0x00, 0x05])
            #expect(device.drainReads == 2)
            await connection.close()
        }
    }

    @Test func wrongInitNonce() async throws {
        var options = VirtualHIDDevice.Options()
        options.wrongInitNonce = true
        let device = VirtualHIDDevice(options: options, handler: echo)
        let start = ContinuousClock.now
        await #expect(throws: FIDOTransportError.malformed(Malformation(.initNonce, .mismatch))) {
            try await connect(device, timeout: 0.3)
        }
        #expect(seconds(since: start) < 1.5)
    }

    @Test func deviceVersionAndCapabilitiesComeFromTheDevice() async throws {
        var options = VirtualHIDDevice.Options()
        options.deviceVersion = Version(5, 4, 3)
        options.capabilities = [.cbor]
        let connection = try await connect(VirtualHIDDevice(options: options, handler: echo))
        #expect(connection.deviceVersion == Version(5, 4, 3))
        #expect(connection.capabilities == [.cbor])
        await #expect(throws: FIDOTransportError.ctaphidError(CTAPHID.ErrorCode.invalidCommand)) {
            try await connection.wink()
        }
    }

    // MARK: The device with raw packets

    @Test func rawInitAndPing() throws {
        let device = VirtualHIDDevice(handler: echo)
        let a = try allocate(device)
        let b = try allocate(device)
        #expect(a != b)
        for p in try CTAPHID.fragment(cid: a, command: CTAPHID.Command.ping, payload: pattern(100)) {
            try device.write(p)
        }
        #expect(
            try readMessage(device, channel: a)
                == CTAPHID.Message(
                    command: CTAPHID.Command.ping,
                    payload: pattern(100)))
        // Resync on an allocated channel keeps it.
        for p in try CTAPHID.fragment(cid: a, command: CTAPHID.Command.initialize, payload: pattern(8)) {
            try device.write(p)
        }
        let resync = try #require(try readMessage(device, channel: a))
        #expect(CTAPHID.channel(of: Array(resync.payload[8..<12])) == a)
    }

    @Test func rawErrors() throws {
        let device = VirtualHIDDevice(handler: echo)
        let cid = try allocate(device)
        func expectError(_ code: UInt8, on channel: UInt32 = cid) throws {
            #expect(
                try readMessage(device, channel: channel)
                    == CTAPHID.Message(
                        command: CTAPHID.Command.error,
                        payload: [code]))
        }
        // An unallocated channel, the broadcast channel for anything but INIT, channel 0.
        try device.write(try CTAPHID.fragment(cid: 0x0BAD_0BAD, command: CTAPHID.Command.ping, payload: [1])[0])
        try expectError(CTAPHID.ErrorCode.invalidChannel, on: 0x0BAD_0BAD)
        try device.write(
            try CTAPHID.fragment(
                cid: CTAPHID.broadcastCID, command: CTAPHID.Command.ping,
                payload: [1])[0])
        try expectError(CTAPHID.ErrorCode.invalidChannel, on: CTAPHID.broadcastCID)
        // INIT with a nonce of the wrong length.
        try device.write(
            try CTAPHID.fragment(
                cid: CTAPHID.broadcastCID, command: CTAPHID.Command.initialize,
                payload: [1, 2, 3])[0])
        try expectError(CTAPHID.ErrorCode.invalidLength, on: CTAPHID.broadcastCID)
        // A length no message can have.
        try device.write(CTAPHID.bytes(of: cid) + [0x81, 0x1D, 0xBA] + [UInt8](repeating: 0, count: 57))
        try expectError(CTAPHID.ErrorCode.invalidLength)
        // A continuation packet skipped.
        let packets = try CTAPHID.fragment(cid: cid, command: CTAPHID.Command.ping, payload: pattern(200))
        try device.write(packets[0])
        try device.write(packets[2])
        try expectError(CTAPHID.ErrorCode.invalidSequence)
        // A continuation packet out of nowhere is ignored.
        try device.write(packets[1])
        #expect(try readMessage(device, channel: cid, timeout: 0.1) == nil)
        // Unknown and unsupported commands.
        try device.write(try CTAPHID.fragment(cid: cid, command: 0x55, payload: [])[0])
        try expectError(CTAPHID.ErrorCode.invalidCommand)
        try device.write(try CTAPHID.fragment(cid: cid, command: CTAPHID.Command.lock, payload: [1])[0])
        try expectError(CTAPHID.ErrorCode.invalidCommand)
        // Still fine afterwards.
        for p in packets { try device.write(p) }
        #expect(try readMessage(device, channel: cid)?.payload == pattern(200))
    }

    @Test func rawMessageTimeoutAndBusy() throws {
        var options = VirtualHIDDevice.Options()
        options.transactionTimeout = 0.15
        let device = VirtualHIDDevice(options: options, handler: echo)
        let a = try allocate(device)
        let b = try allocate(device)
        let packets = try CTAPHID.fragment(cid: a, command: CTAPHID.Command.ping, payload: pattern(100))
        try device.write(packets[0])
        // While a's request is half sent, b is turned away.
        try device.write(try CTAPHID.fragment(cid: b, command: CTAPHID.Command.ping, payload: [1])[0])
        #expect(
            try readMessage(device, channel: b)
                == CTAPHID.Message(
                    command: CTAPHID.Command.error,
                    payload: [CTAPHID.ErrorCode.channelBusy]))
        // a never sends the rest.
        #expect(
            try readMessage(device, channel: a)
                == CTAPHID.Message(
                    command: CTAPHID.Command.error,
                    payload: [CTAPHID.ErrorCode.messageTimeout]))
        // Afterwards b is served.
        try device.write(try CTAPHID.fragment(cid: b, command: CTAPHID.Command.ping, payload: [1])[0])
        #expect(try readMessage(device, channel: b)?.payload == [1])
    }

    @Test func closedHandle() throws {
        let device = VirtualHIDDevice(handler: echo)
        let other = device.openAnotherHandle()
        device.close()
        #expect(throws: FIDOTransportError.closed) { try device.read(timeoutMilliseconds: 0) }
        #expect(throws: FIDOTransportError.closed) { try device.write([0]) }
        // The other handle still works.
        _ = try allocate(other)
    }
}

/// A connection opened `inline` (as the fido and u2f commands open theirs) keeps the time limits and the
/// cancelling of one that uses its queue, with its device calls on the calling thread. Each request here blocks
/// the thread it runs on (OffPoolExecutor's), and what cancels it comes from Dispatch threads, as the Ctrl-C
/// watch does (the user-presence limit is short, so a failure stays short).
@Suite(.serialized) struct InlineCTAPHIDTests {
    private func touchWaitingDevice() -> VirtualHIDDevice {
        var options = VirtualHIDDevice.Options()
        options.keepAliveForever = true
        options.keepAliveStatus = CTAPHID.KeepaliveStatus.userPresenceNeeded
        options.keepAliveInterval = 0.05
        return VirtualHIDDevice(options: options, handler: echo)
    }

    /// Calls `action` every 50 ms on a Dispatch thread until `done` is set.
    private func repeatedly(until done: Flag, _ action: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
            guard !done.isSet else { return }
            action()
            repeatedly(until: done, action)
        }
    }

    /// Timing out is tested with the queued connection's test (`timeoutWhenResponsesAreDropped`).
    @Test func answersLongMessagesAndRefusesRequestsOnceClosed() async throws {
        try await withTaskExecutorPreference(OffPoolExecutor.shared) {
            let device = VirtualHIDDevice(handler: echo)
            let connection = try await connect(device, timeout: 2, userPresenceTimeout: 2, inline: true)
            #expect(connection.inline)
            #expect(try await connection.sendCBOR(pattern(1000)) == [0x00] + pattern(1000))
            #expect(try await connection.ping(pattern(7609)) == pattern(7609))
            await connection.close()
            await #expect(throws: FIDOTransportError.closed) { try await connection.sendCBOR([0x04]) }
        }
    }

    /// What the Ctrl-C watch does: `requestCancel()` from a Dispatch thread while the request waits for a touch.
    @Test func requestCancelFromAnotherThreadStopsTheWaitForATouch() async throws {
        try await withTaskExecutorPreference(OffPoolExecutor.shared) {
            let device = touchWaitingDevice()
            let connection = try await connect(device, timeout: 2, userPresenceTimeout: 2, inline: true)
            let done = Flag()
            repeatedly(until: done) { connection.requestCancel() }
            let answer = try await connection.sendCBOR([0x01, 0xA0])
            done.set()
            #expect(answer == [CTAPError.keepaliveCancel])
            #expect(device.statistics.cancels == 1)
            device.options.keepAliveForever = false
            #expect(try await connection.sendCBOR([0x04]) == [0x00, 0x04])
        }
    }
}
