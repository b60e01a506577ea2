import FuzzSessions
import FuzzSupport
import KeyKit
import VirtualKey

/// The Management application's READ CONFIG and WRITE CONFIG as `ykterm config usb`, `config nfc` and
/// `config set-lock-code` make them, against a key that answers from the input, over each interface the
/// command reaches it on: APDUs on the reader (`ManagementSession`), the vendor CTAPHID commands on the FIDO
/// interface or the slot commands on the OTP interface (`ManagementHID`). The device information (all pages),
/// the firmware check, then each step whether or not the one before it succeeded (its error is noted), as long
/// as the key is there: the USB applications with OATH toggled (with the reboot flag when the USB interfaces
/// change), the NFC applications with PIV toggled, each with the lock code when the key says it is locked; the
/// lock code set, or changed or cleared; and the device information again.
///
/// The first byte chooses the interface (bits 0-1, modulo 3: reader, FIDO HID, OTP HID) and whether a locked
/// key's lock code is changed or cleared (bit 2); the rest are the key's answers (`FuzzAnswers`). Invariants:
/// every step ends, with success or an error of a layer it went through (the smart card, Management, the FIDO
/// transports, OTP HID).
private let lockCode = [UInt8](1...16)
private let newLockCode = [UInt8](0x11...0x20)

/// The interface a command reaches the Management application on.
private enum Route: Int, CaseIterable, CustomStringConvertible {
    case ccid, fido, otp

    init(options: UInt8) {
        self = Route.allCases[Int(options & 0x03) % Route.allCases.count]
    }

    var description: String {
        switch self {
        case .ccid: return "ccid"
        case .fido: return "fido"
        case .otp: return "otp"
        }
    }
}

private func configure(_ link: ManagementLink, clearLock: Bool) async throws -> String {
    let device = try await link.deviceInfo()
    let minimum = ManagementFeature.writeConfig.minimum
    guard device.version >= minimum else {
        throw ManagementError.needsFirmware(.writeConfig, minimum: minimum, actual: device.version)
    }
    var lines = [
        "\(device.version) serial \(device.serial.map(String.init) ?? "-") usb \(device.enabledUSB.names) "
            + "nfc \(device.enabledNFC?.names ?? []) locked \(device.isConfigLocked)"
    ]
    func step(_ label: String, _ body: () async throws -> String) async throws {
        do {
            lines.append(label + " " + (try await body()))
        } catch let error where isConfigError(error) && !isKeyGone(error) {
            lines.append(label + " \(type(of: error)): \(error)")
        }
    }
    let current = device.isConfigLocked ? lockCode : nil
    try await step("usb") {
        let after = device.enabledUSB.symmetricDifference(.oath).intersection(device.supportedUSB)
        let reboot = after.usbInterfaces != device.enabledUSB.usbInterfaces
        try await link.write(
            DeviceConfiguration(enabledUSB: after, challengeResponseTimeout: 20), reboot: reboot,
            currentLockCode: current)
        return after.names.joined(separator: "+") + (reboot ? " (reboot)" : "")
    }
    try await step("nfc") {
        guard let supported = device.supportedNFC else { return "none" }
        let after = (device.enabledNFC ?? []).symmetricDifference(.piv).intersection(supported)
        try await link.write(DeviceConfiguration(enabledNFC: after), currentLockCode: current)
        return after.names.joined(separator: "+")
    }
    try await step("lock") {
        let next = !device.isConfigLocked ? lockCode : clearLock ? DeviceConfiguration.clearedLockCode : newLockCode
        try await link.write(DeviceConfiguration(), currentLockCode: current, newLockCode: next)
        return next == DeviceConfiguration.clearedLockCode ? "cleared" : "set"
    }
    try await step("info") {
        let again = try await link.deviceInfo()
        return "usb \(again.enabledUSB.names) nfc \(again.enabledNFC?.names ?? []) locked \(again.isConfigLocked)"
    }
    return lines.joined(separator: "; ")
}

private func isConfigError(_ error: any Error) -> Bool {
    error is SmartCardError || error is ManagementError || error is FIDOTransportError || error is OTPHIDError
        || error is OTPError
}

/// Opens the route on a device answering from `answers`, runs the steps and closes it. Short time limits: the
/// device answers at once or never.
private func fuzzed(_ route: Route, clearLock: Bool, answers: FuzzAnswers) async throws -> String {
    switch route {
    case .ccid:
        let card = FuzzSmartCard(answers: answers)
        return try await configure(.card(try await ManagementSession.make(connection: card)), clearLock: clearLock)
    case .fido:
        let hid = try await CTAPHIDConnection(
            device: FuzzHIDDevice(answers: answers), name: "fuzz", timeout: 1,
            userPresenceTimeout: 1, busyRetryWindow: 0.05)
        let result = await capturing { try await configure(.fido(hid), clearLock: clearLock) }
        await hid.close()
        return try result.get()
    case .otp:
        let hid = OTPHIDConnection(
            device: FuzzOTPHIDDevice(answers: answers), name: "fuzz", timeout: 0.05,
            touchTimeout: 0.1)
        let result = await capturing { try await configure(.otp(hid), clearLock: clearLock) }
        await hid.close()
        return try result.get()
    }
}

private func replay(_ input: [UInt8]) -> Result<String, any Error> {
    let options = input.first ?? 0
    let route = Route(options: options)
    let answers = FuzzAnswers(input.dropFirst())
    return runToCompletion { try await fuzzed(route, clearLock: options & 4 != 0, answers: answers) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzCheckTyped(replay(fuzzBytes(data, size)), isConfigError)
    return 0
}

/// Runs the steps on `route` of `key` and logs its answers as a seed's.
private func recording(_ route: Route, _ key: VirtualKey, clearLock: Bool) async -> (
    Result<String, any Error>,
    [FuzzAnswer]
) {
    switch route {
    case .ccid:
        let card = RecordingSmartCard(card: VirtualKeyConnection(key: key))
        let result = await capturing {
            try await configure(.card(try await ManagementSession.make(connection: card)), clearLock: clearLock)
        }
        return (result, card.log.answers)
    case .fido:
        var options = key.fidoHIDOptionsWithReadConfig
        options.keepAliveInterval = nil
        let device = RecordingHIDDevice(device: key.makeFIDOHIDDevice(options: options))
        let result = await capturing {
            let hid = try await CTAPHIDConnection(device: device, name: "virtual")
            let result = await capturing { try await configure(.fido(hid), clearLock: clearLock) }
            await hid.close()
            return try result.get()
        }
        return (result, device.log.answers)
    case .otp:
        let device = RecordingOTPHIDDevice(device: key.makeOTPHIDDevice())
        let hid = OTPHIDConnection(device: device, name: "virtual")
        let result = await capturing { try await configure(.otp(hid), clearLock: clearLock) }
        await hid.close()
        return (result, device.log.answers)
    }
}

/// The recorded answers with the first READ CONFIG page cut in two: the first half of its TLVs with "more
/// data" (tag 10) and the rest on a second page, as keys with more information than fits a page answer. Nil
/// when no answer is a page.
private func splitFirstPage(_ answers: [FuzzAnswer], route: Route) -> [FuzzAnswer]? {
    for (i, answer) in answers.enumerated() {
        let (prefix, page, suffix): ([UInt8], [UInt8], [UInt8])
        switch route {
        case .ccid:
            guard answer.bytes.suffix(2) == [0x90, 0x00] else { continue }
            (prefix, page, suffix) = ([], Array(answer.bytes.dropLast(2)), [0x90, 0x00])
        case .fido:
            guard answer.bytes.first == ManagementHID.ctapReadConfig else { continue }
            (prefix, page, suffix) = ([ManagementHID.ctapReadConfig], Array(answer.bytes.dropFirst()), [])
        case .otp:
            guard answer.kind == 1 else { continue }
            (prefix, page, suffix) = ([], answer.bytes, [])
        }
        guard let length = page.first, Int(length) == page.count - 1,
            let tlvs = try? TLV.parseAll(Array(page.dropFirst()), mode: .simple), tlvs.count >= 2,
            tlvs.contains(where: { $0.tag == ManagementTag.usbSupported })
        else { continue }
        let half = tlvs.count / 2
        let first = (tlvs[..<half] + [TLV(ManagementTag.moreData, [1])]).flatMap(\.encoded)
        let second = tlvs[half...].flatMap(\.encoded)
        var out = answers
        out.replaceSubrange(
            i...i,
            with: [
                FuzzAnswer(kind: answer.kind, prefix + [UInt8(first.count)] + first + suffix),
                FuzzAnswer(kind: answer.kind, prefix + [UInt8(second.count)] + second + suffix),
            ])
        return out
    }
    return nil
}

/// Seeds: each interface, against a 5.7 key without a lock code (one is set), one locked with the code the
/// steps give (each write carries it; the code changed, or cleared), one locked with another code (every
/// write refused), a 4.3 key (READ CONFIG, but no WRITE CONFIG) and a 4.0 key (no READ CONFIG; over OTP the
/// status and serial); and the unlocked key's exchanges with the device information on two pages.
private func recordSeeds() async throws -> [Seed] {
    let cases: [(name: String, version: Version, lock: [UInt8]?, clear: Bool)] = [
        ("unlocked", Version(5, 7, 2), nil, false),
        ("locked-change", Version(5, 7, 2), lockCode, false),
        ("locked-clear", Version(5, 4, 3), lockCode, true),
        ("wrong-code", Version(5, 7, 2), newLockCode, false),
        ("firmware-4.3", Version(4, 3, 7), nil, false),
        ("firmware-4.0", Version(4, 0, 5), nil, false),
    ]
    var seeds = [Seed]()
    for c in cases {
        for route in Route.allCases {
            var state = VirtualKeyState.yubiKey5NFC(version: c.version)
            if let lock = c.lock {
                state.configLocked = true
                state.configLockCode = lock
            }
            let key = VirtualKey(state: state, touchDelay: 0)
            let options = UInt8(route.rawValue) | (c.clear ? 4 : 0)
            let (result, answers) = await recording(route, key, clearLock: c.clear)
            seeds.append(
                Seed(
                    name: "\(c.name)-\(route)", input: [options] + FuzzAnswers.encode(answers),
                    outcome: describeOutcome(result)))
            if c.name == "unlocked", let split = splitFirstPage(answers, route: route) {
                // Not recorded (the virtual key answers on one page): its outcome is the fuzzed device's.
                let input = [options] + FuzzAnswers.encode(split)
                let outcome = await capturing {
                    try await fuzzed(route, clearLock: false, answers: FuzzAnswers(input.dropFirst()))
                }
                seeds.append(Seed(name: "two-pages-\(route)", input: input, outcome: describeOutcome(outcome)))
            }
        }
    }
    return seeds
}

@_cdecl("FuzzManagementConfig_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    recordSeedsIfAsked(argc, argv, record: recordSeeds, replay: { describeOutcome(replay($0)) })
    return runFuzzer(argc, argv, testOneInput)
}
