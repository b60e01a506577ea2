import KeyKit
import Testing
import VirtualKey

/// The virtual key's PIV application driven with APDUs through `SmartCardProtocol` (command chaining, and
/// GET RESPONSE on 61xx), as a PIV client does.
struct PIVCard {
    let key: VirtualKey
    let proto: SmartCardProtocol

    init(state: VirtualKeyState = .yubiKey5NFC(), touchDelay: Double = 0) async throws {
        key = VirtualKey(state: state, touchDelay: touchDelay)
        proto = SmartCardProtocol(connection: VirtualKeyConnection(key: key))
        try await select()
    }

    @discardableResult
    func select() async throws -> Response {
        let r = try await proto.send(.select(aid: AID.piv))
        #expect(r.status == .ok)
        return r
    }

    func send(_ ins: UInt8, p1: UInt8 = 0, p2: UInt8 = 0, _ data: [UInt8] = []) async throws -> Response {
        try await proto.send(APDU(ins: ins, p1: p1, p2: p2, data: data))
    }

    static func padded(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        return bytes + [UInt8](repeating: 0xFF, count: max(0, 8 - bytes.count))
    }

    func verify(_ pin: String = "123456") async throws -> Response {
        try await send(PIV.Ins.verify, p2: PIV.Reference.pin, Self.padded(pin))
    }

    /// Mutual authentication with the management key, as ykman does it; the status of the second step.
    func authenticate(_ algorithm: PIV.Algorithm, key: [UInt8] = PIV.defaultManagementKey) async throws -> StatusWord {
        let template = TLV(PIV.Tag.dynamicAuthentication, TLV(PIV.Tag.witness, []).encoded).encoded
        let p1 = algorithm.rawValue, p2 = PIV.Reference.managementKey
        let first = try await send(PIV.Ins.authenticate, p1: p1, p2: p2, template)
        guard first.status == .ok else { return first.status }
        let outer = try TLV.parseAll(first.data)
        let encrypted = try #require(try outer.first?.children().value(for: PIV.Tag.witness))
        let secret = SecretBytes(key)
        let witness = try BlockCipher.decrypt(algorithm, key: secret, block: encrypted)
        let challenge = Crypto.random(algorithm.blockSize ?? 8)
        let returned = TLV(PIV.Tag.witness, witness).encoded + TLV(PIV.Tag.challenge, challenge).encoded
        let second = try await send(
            PIV.Ins.authenticate, p1: p1, p2: p2,
            TLV(PIV.Tag.dynamicAuthentication, returned).encoded)
        guard second.status == .ok else { return second.status }
        let answer = try #require(try TLV.parseAll(second.data).first?.children().value(for: PIV.Tag.response))
        #expect(answer == (try BlockCipher.encrypt(algorithm, key: secret, block: challenge)))
        return second.status
    }

    /// GET METADATA as tag → value.
    func metadata(_ reference: UInt8) async throws -> [UInt32: [UInt8]] {
        let r = try await send(PIV.Ins.getMetadata, p2: reference)
        #expect(r.status == .ok)
        return try TLV.parseAll(r.data).dictionary
    }

    func getData(_ id: [UInt8]) async throws -> Response {
        try await send(PIV.Ins.getData, p1: 0x3F, p2: 0xFF, TLV(PIV.Tag.objectID, id).encoded)
    }

    func putData(_ id: [UInt8], _ value: [UInt8]) async throws -> Response {
        try await send(
            PIV.Ins.putData, p1: 0x3F, p2: 0xFF,
            TLV(PIV.Tag.objectID, id).encoded + TLV(PIV.Tag.objectData, value).encoded)
    }

    /// GENERATE ASYMMETRIC, returning the 7F49 template's parts.
    func generate(
        _ slot: PIV.Slot, _ algorithm: PIV.Algorithm, pin: PIV.PINPolicy? = nil,
        touch: PIV.TouchPolicy? = nil
    ) async throws -> Response {
        var body = TLV(PIV.Tag.generateAlgorithm, [algorithm.rawValue]).encoded
        if let pin { body += TLV(PIV.Tag.pinPolicy, [pin.rawValue]).encoded }
        if let touch { body += TLV(PIV.Tag.touchPolicy, [touch.rawValue]).encoded }
        let template = TLV(PIV.Tag.generateTemplate, body).encoded
        return try await send(PIV.Ins.generateAsymmetric, p2: slot.rawValue, template)
    }

    /// GENERAL AUTHENTICATE with a slot's key: a challenge (81) or, with `exponentiation`, a peer key (85).
    func use(
        _ slot: PIV.Slot, _ algorithm: PIV.Algorithm, _ input: [UInt8],
        exponentiation: Bool = false
    ) async throws -> Response {
        let tag = exponentiation ? PIV.Tag.exponentiation : PIV.Tag.challenge
        let template = TLV(PIV.Tag.dynamicAuthentication, TLV(PIV.Tag.response, []).encoded + TLV(tag, input).encoded)
        return try await send(PIV.Ins.authenticate, p1: algorithm.rawValue, p2: slot.rawValue, template.encoded)
    }

    /// The result (tag 82) of a GENERAL AUTHENTICATE answer.
    static func result(_ r: Response) throws -> [UInt8] {
        #expect(r.status == .ok)
        return try #require(try TLV.parseAll(r.data).first?.children().value(for: PIV.Tag.response))
    }
}

/// Bytes from hex written with spaces, for the tests' vectors.
func pivHex(_ hex: String) -> [UInt8] {
    try! Hex.decode(hex)
}
