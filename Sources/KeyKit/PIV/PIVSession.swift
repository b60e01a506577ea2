/// The PIV application (NIST SP 800-73-4 with the YubiKey's extensions): PIN, PUK and management key, metadata,
/// data objects and certificates, and the slots' keys (PIVSession+Objects.swift, PIVSession+Keys.swift).
///
/// Each method builds its TLVs, sends one command (the transport chains long commands and gathers long answers
/// with GET RESPONSE) and parses the answer. Commands that answer data carry Le 00; the others carry none.
/// PINs, PUKs and management keys are taken as `SecretBytes` and padded or copied only into buffers that are
/// wiped after use.
public actor PIVSession: SmartCardApplicationSession {
    typealias Ins = PIV.Ins
    typealias Tag = PIV.Tag

    public nonisolated let selected: SelectedApplication
    /// The management key's algorithm, once known (from metadata, or 3DES on firmware without it).
    var managementKeyAlgorithmKnown: PIV.Algorithm?
    /// The PIN tries left as last seen, for firmware without metadata after the PIN was verified.
    private var lastPINRetries = PIV.defaultRetries
    /// The PIN tries after a right PIN, as last seen.
    private var pinRetryLimit = PIV.defaultRetries

    public init(_ selected: SelectedApplication) { self.selected = selected }

    /// SELECTs the PIV application and reads its version.
    public static func select(on proto: SmartCardProtocol) async throws -> Version {
        _ = try await proto.select(AID.piv, name: "PIV")
        let answer = try PIVSession.check(try await proto.send(APDU(ins: Ins.getVersion, le: 256)))
        guard answer.count == 3, let version = Version(bytes: answer) else {
            throw PIVError.malformed(.version(length: answer.count))
        }
        return version
    }

    // MARK: Sending and status words

    /// Sends `apdu` and returns its data; a status other than 9000 becomes a `PIVError`.
    func send(_ apdu: APDU, slot: PIV.Slot? = nil, object: [UInt8]? = nil) async throws -> [UInt8] {
        try PIVSession.check(try await proto.send(apdu), slot: slot, object: object)
    }

    static func check(_ response: Response, slot: PIV.Slot? = nil, object: [UInt8]? = nil) throws(PIVError) -> [UInt8] {
        let status = response.status
        switch status.rawValue {
        case 0x9000: return response.data
        case 0x6982: throw .securityConditionNotSatisfied
        case 0x6A84: throw .noSpace
        case 0x6A82 where object != nil: throw .objectNotFound(object ?? [])
        case 0x6A88 where slot != nil: throw .noKeyInSlot(slot ?? .authentication)
        case 0x6A80, 0x6A86: throw .incorrectParameters(status)
        default: throw .status(status)
        }
    }

    /// The tries left in a PIN or PUK answer: 63Cx gives x, and 6983 (blocked) none.
    static func retries(in status: StatusWord) -> Int? {
        if status == .authMethodBlocked { return 0 }
        if let n = status.retriesLeft { return n }
        // Some firmware answers 63xx with the count in the whole low byte.
        if status.sw1 == 0x63 { return Int(status.sw2) }
        return nil
    }

    /// Checks an answer to a command that takes the PIN (`puk` false) or the PUK.
    static func checkSecret(_ response: Response, puk: Bool) throws(PIVError) {
        guard !response.status.isSuccess else { return }
        if let n = retries(in: response.status) {
            if response.status == .authMethodBlocked { throw puk ? .pukBlocked : .pinBlocked }
            throw puk ? .wrongPUK(retriesLeft: n) : .wrongPIN(retriesLeft: n)
        }
        _ = try check(response)
    }

    static func parseTLVs(_ bytes: [UInt8]) throws(PIVError) -> [TLV] {
        do {
            return try TLV.parseAll(bytes)
        } catch {
            throw .malformed(.tlv(error))
        }
    }

    static func field(_ tag: UInt32, in tlvs: [TLV]) throws(PIVError) -> [UInt8] {
        guard let value = tlvs.value(for: tag) else { throw .malformed(.missingTag(tag)) }
        return value
    }

    /// The value of the one TLV `tag` that `bytes` must be.
    static func unwrap(_ tag: UInt32, _ bytes: [UInt8]) throws(PIVError) -> [UInt8] {
        let tlvs = try parseTLVs(bytes)
        guard tlvs.count == 1, tlvs[0].tag == tag else { throw .malformed(.missingTag(tag)) }
        return tlvs[0].value
    }

    // MARK: Serial and metadata

    /// GET SERIAL: the key's serial number (firmware 5 and later).
    public func serial() async throws -> UInt32 {
        try PIVFeature.serial.check(version)
        let answer = try await send(APDU(ins: Ins.getSerial, le: 256))
        guard answer.count == 4 else { throw PIVError.malformed(.serial(length: answer.count)) }
        return answer.reduce(0) { $0 << 8 | UInt32($1) }
    }

    func metadata(_ reference: UInt8, slot: PIV.Slot? = nil) async throws -> [TLV] {
        try PIVFeature.metadata.check(version)
        let answer = try await send(APDU(ins: Ins.getMetadata, p2: reference, le: 256), slot: slot)
        return try PIVSession.parseTLVs(answer)
    }

    /// GET METADATA of the PIN.
    public func pinMetadata() async throws -> PIVPINMetadata {
        let metadata = try await secretMetadata(PIV.Reference.pin)
        lastPINRetries = metadata.retriesLeft
        pinRetryLimit = metadata.totalRetries
        return metadata
    }

    /// GET METADATA of the PUK.
    public func pukMetadata() async throws -> PIVPINMetadata {
        try await secretMetadata(PIV.Reference.puk)
    }

    private func secretMetadata(_ reference: UInt8) async throws -> PIVPINMetadata {
        let tlvs = try await metadata(reference)
        let isDefault = try PIVSession.field(Tag.metadataIsDefault, in: tlvs)
        let retries = try PIVSession.field(Tag.metadataRetries, in: tlvs)
        guard isDefault.count == 1, retries.count == 2 else {
            throw PIVError.malformed(
                .fieldLength(
                    tag: isDefault.count == 1 ? Tag.metadataRetries : Tag.metadataIsDefault,
                    length: isDefault.count == 1 ? retries.count : isDefault.count))
        }
        return PIVPINMetadata(isDefault: isDefault[0] != 0, totalRetries: Int(retries[0]), retriesLeft: Int(retries[1]))
    }

    /// GET METADATA of the management key.
    public func managementKeyMetadata() async throws -> PIVManagementKeyMetadata {
        let tlvs = try await metadata(PIV.Reference.managementKey)
        // Firmware 5.3 leaves the algorithm out: it only has 3DES.
        let algorithmByte = tlvs.value(for: Tag.metadataAlgorithm)?.first ?? PIV.Algorithm.tripleDES.rawValue
        guard let algorithm = PIV.Algorithm(rawValue: algorithmByte), algorithm.isManagementKey else {
            throw PIVError.malformed(.unknownAlgorithm(algorithmByte))
        }
        let policy = try PIVSession.field(Tag.metadataPolicy, in: tlvs)
        let isDefault = try PIVSession.field(Tag.metadataIsDefault, in: tlvs)
        guard policy.count == 2 else {
            throw PIVError.malformed(.fieldLength(tag: Tag.metadataPolicy, length: policy.count))
        }
        guard let touch = PIV.TouchPolicy(rawValue: policy[1]) else {
            throw PIVError.malformed(.unknownTouchPolicy(policy[1]))
        }
        managementKeyAlgorithmKnown = algorithm
        return PIVManagementKeyMetadata(
            algorithm: algorithm, isDefault: isDefault.first.map { $0 != 0 } ?? false,
            touchPolicy: touch)
    }

    /// GET METADATA of a slot's key; `noKeyInSlot` when it holds none.
    public func slotMetadata(_ slot: PIV.Slot) async throws -> PIVSlotMetadata {
        let tlvs = try await metadata(slot.rawValue, slot: slot)
        let algorithmByte = try PIVSession.field(Tag.metadataAlgorithm, in: tlvs).first ?? 0
        guard let algorithm = PIV.Algorithm(rawValue: algorithmByte), !algorithm.isManagementKey else {
            throw PIVError.malformed(.unknownAlgorithm(algorithmByte))
        }
        let policy = try PIVSession.field(Tag.metadataPolicy, in: tlvs)
        guard policy.count == 2 else {
            throw PIVError.malformed(.fieldLength(tag: Tag.metadataPolicy, length: policy.count))
        }
        guard let pin = PIV.PINPolicy(rawValue: policy[0]) else {
            throw PIVError.malformed(.unknownPINPolicy(policy[0]))
        }
        guard let touch = PIV.TouchPolicy(rawValue: policy[1]) else {
            throw PIVError.malformed(.unknownTouchPolicy(policy[1]))
        }
        let originByte = try PIVSession.field(Tag.metadataOrigin, in: tlvs).first ?? 0
        guard let origin = PIV.Origin(rawValue: originByte) else {
            throw PIVError.malformed(.unknownOrigin(originByte))
        }
        let key = try AsymmetricPublicKey(
            pivEncoding: try PIVSession.field(Tag.metadataPublicKey, in: tlvs),
            algorithm: algorithm)
        return PIVSlotMetadata(algorithm: algorithm, pinPolicy: pin, touchPolicy: touch, origin: origin, publicKey: key)
    }

    // MARK: PIN and PUK

    /// PINs and PUKs go as eight bytes, padded with FF.
    static func padded(_ secret: SecretBytes) throws(PIVError) -> [UInt8] {
        guard secret.count <= PIV.pinLength else { throw .pinLength(secret.count) }
        var out = secret.copyBytes()
        out += [UInt8](repeating: PIV.pinPadding, count: PIV.pinLength - out.count)
        return out
    }

    /// New PINs and PUKs are 6 to 8 bytes.
    static func checkNew(_ secret: SecretBytes) throws(PIVError) {
        guard (6...PIV.pinLength).contains(secret.count) else { throw .pinLength(secret.count) }
    }

    /// VERIFY the PIN. Wrong: `wrongPIN(retriesLeft:)`; blocked: `pinBlocked`.
    public func verifyPIN(_ pin: SecretBytes) async throws {
        var data = try PIVSession.padded(pin)
        defer { SecretBytes.wipe(&data) }
        let response = try await proto.send(APDU(ins: Ins.verify, p2: PIV.Reference.pin, data: data))
        if let n = PIVSession.retries(in: response.status) { lastPINRetries = n }
        try PIVSession.checkSecret(response, puk: false)
        lastPINRetries = pinRetryLimit
    }

    private func pinMetadataIfAny() async throws -> PIVPINMetadata? {
        guard PIVFeature.metadata.isSupported(by: version) else { return nil }
        return try await pinMetadata()
    }

    /// The PIN tries left: from metadata (5.3 and later), else from an empty VERIFY (which answers 9000 once
    /// the PIN is verified in this session: then the last count seen).
    public func pinRetries() async throws -> Int {
        if let metadata = try await pinMetadataIfAny() { return metadata.retriesLeft }
        let response = try await proto.send(APDU(ins: Ins.verify, p2: PIV.Reference.pin))
        if response.status.isSuccess { return lastPINRetries }
        guard let n = PIVSession.retries(in: response.status) else { _ = try PIVSession.check(response); return 0 }
        lastPINRetries = n
        return n
    }

    /// CHANGE REFERENCE of the PIN.
    public func changePIN(old: SecretBytes, new: SecretBytes) async throws {
        try await changeReference(Ins.changeReference, PIV.Reference.pin, old, new, puk: false)
    }

    /// CHANGE REFERENCE of the PUK.
    public func changePUK(old: SecretBytes, new: SecretBytes) async throws {
        try await changeReference(Ins.changeReference, PIV.Reference.puk, old, new, puk: true)
    }

    /// RESET RETRY COUNTER: sets a new PIN (and unblocks it) with the PUK.
    public func unblockPIN(puk: SecretBytes, newPIN: SecretBytes) async throws {
        try await changeReference(Ins.resetRetryCounter, PIV.Reference.pin, puk, newPIN, puk: true)
    }

    private func changeReference(
        _ ins: UInt8, _ reference: UInt8, _ current: SecretBytes, _ new: SecretBytes,
        puk: Bool
    ) async throws {
        try PIVSession.checkNew(new)
        var data = try PIVSession.padded(current) + PIVSession.padded(new)
        defer { SecretBytes.wipe(&data) }
        let response = try await proto.send(APDU(ins: ins, p2: reference, data: data))
        if !puk, let n = PIVSession.retries(in: response.status) { lastPINRetries = n }
        if response.status == .conditionsNotSatisfied { throw PIVError.tooSimple(puk: reference == PIV.Reference.puk) }
        try PIVSession.checkSecret(response, puk: puk)
    }

    /// SET PIN RETRIES: the number of PIN and PUK tries (1 to 255 each). Needs the management key and the PIN;
    /// PIN and PUK return to their defaults.
    public func setPINRetries(pin: Int, puk: Int) async throws {
        guard (1...255).contains(pin), (1...255).contains(puk) else {
            throw PIVError.incorrectParameters(.incorrectParameters)
        }
        _ = try await send(APDU(ins: Ins.setPINRetries, p1: UInt8(pin), p2: UInt8(puk)))
        lastPINRetries = pin
        pinRetryLimit = pin
    }

    /// RESET: back to the factory state (default PIN, PUK and management key, no keys or certificates). The key
    /// refuses (`resetConditionsNotMet`) unless the PIN and the PUK are both blocked; `blockPINAndPUK()` does that.
    public func reset() async throws {
        let response = try await proto.send(APDU(ins: Ins.reset))
        if response.status == .conditionsNotSatisfied { throw PIVError.resetConditionsNotMet }
        _ = try PIVSession.check(response)
        managementKeyAlgorithmKnown = nil
        lastPINRetries = PIV.defaultRetries
        pinRetryLimit = PIV.defaultRetries
    }

    /// Blocks the PIN and the PUK with wrong tries (all-FF values, which no PIN or PUK can be), as RESET needs.
    public func blockPINAndPUK() async throws {
        let wrong = [UInt8](repeating: PIV.pinPadding, count: PIV.pinLength)
        for (ins, data) in [(Ins.verify, wrong), (Ins.resetRetryCounter, wrong + wrong)] {
            // Each wrong try takes one; a bound in case a key never says it is blocked.
            for _ in 0..<256 {
                let status = try await proto.send(APDU(ins: ins, p2: PIV.Reference.pin, data: data)).status
                if status == .authMethodBlocked || status.retriesLeft == 0 { break }
                guard PIVSession.retries(in: status) != nil else { throw PIVError.status(status) }
            }
        }
        lastPINRetries = 0
    }
}
