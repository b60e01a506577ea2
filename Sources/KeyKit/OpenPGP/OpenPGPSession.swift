/// The OpenPGP application (the OpenPGP smart card application 3.4, with the YubiKey's extensions): its data
/// objects, the three passwords (user PIN, reset code, admin PIN), touch policies, the slots' public keys, key
/// generation and the reset.
///
/// Each method sends its command (the transport chains long commands and gathers long answers with GET RESPONSE)
/// and parses the answer; parsers throw `OpenPGPError.malformed` on anything they cannot read. Passwords are
/// taken as `SecretBytes` and copied only into buffers that are wiped after use.
public actor OpenPGPSession: SmartCardApplicationSession {
    typealias Ins = OpenPGP.Ins

    public nonisolated let selected: SelectedApplication

    public init(_ selected: SelectedApplication) { self.selected = selected }

    /// SELECTs the OpenPGP application (ACTIVATEs it first when it was terminated) and reads its version (GET
    /// VERSION, the YubiKey's F1).
    public static func select(on proto: SmartCardProtocol) async throws -> Version {
        do {
            _ = try await proto.select(AID.openpgp, name: "OpenPGP")
        } catch SmartCardError.status(let sw) where sw == .noInputData || sw == .conditionsNotSatisfied {
            // A terminated application answers SELECT with 6285; ACTIVATE brings it back as new.
            _ = try check(try await proto.send(APDU(ins: Ins.activate)))
            _ = try await proto.select(AID.openpgp, name: "OpenPGP")
        }
        let answer = try check(try await proto.send(APDU(ins: Ins.getVersion, le: 256)))
        guard answer.count == 3 else {
            throw OpenPGPError.malformed(Malformation(.firmwareVersion, .lengthExpected(answer.count, expected: 3)))
        }
        return Version(OpenPGPAID.bcd(answer[0]), OpenPGPAID.bcd(answer[1]), OpenPGPAID.bcd(answer[2]))
    }

    // MARK: Status words

    func send(_ apdu: APDU, slot: OpenPGP.KeySlot? = nil) async throws -> [UInt8] {
        try OpenPGPSession.check(try await proto.send(apdu), slot: slot)
    }

    static func check(_ response: Response, slot: OpenPGP.KeySlot? = nil) throws(OpenPGPError) -> [UInt8] {
        let status = response.status
        switch status.rawValue {
        case 0x9000: return response.data
        case 0x6982: throw .securityConditionNotSatisfied
        case 0x6985: throw .conditionsNotSatisfied
        case 0x6A88 where slot != nil, 0x6A80 where slot != nil: throw .noKey(slot ?? .signature)
        default: throw .status(status)
        }
    }

    // MARK: Data objects

    /// GET DATA of a data object (P1 P2 its tag).
    public func getData(_ tag: UInt32) async throws -> [UInt8] {
        try await send(APDU(ins: Ins.getData, p1: UInt8(tag >> 8 & 0xFF), p2: UInt8(tag & 0xFF), le: 256))
    }

    /// PUT DATA of a data object; most need the admin PIN verified first.
    public func putData(_ tag: UInt32, _ data: [UInt8]) async throws {
        _ = try await send(APDU(ins: Ins.putData, p1: UInt8(tag >> 8 & 0xFF), p2: UInt8(tag & 0xFF), data: data))
    }

    /// The application related data: AID, historical bytes, capabilities, the slots and the password status.
    public func applicationData() async throws -> OpenPGPApplicationData {
        try OpenPGPApplicationData(try await getData(OpenPGP.DO.applicationRelatedData))
    }

    /// The PW status bytes alone.
    public func passwordStatus() async throws -> OpenPGPPasswordStatus {
        try OpenPGPPasswordStatus(try await getData(OpenPGP.DO.pwStatus))
    }

    public func cardholder() async throws -> OpenPGPCardholder {
        try OpenPGPCardholder(try await getData(OpenPGP.DO.cardholderRelatedData))
    }

    /// The URL of the public keys (DO 5F50), as the card holds it; empty when none is set.
    public func url() async throws -> [UInt8] {
        try await getData(OpenPGP.DO.url)
    }

    /// The signature counter, from the security support template (7A { 93 counter }).
    public func signatureCounter() async throws -> Int {
        let answer = try await getData(OpenPGP.DO.securitySupportTemplate)
        let inner = try OpenPGPApplicationData.unwrap(
            OpenPGP.DO.securitySupportTemplate, answer, part: .securitySupport)
        let tlvs = try OpenPGPApplicationData.parse(inner, part: .securitySupport)
        guard let counter = tlvs.value(for: OpenPGP.DO.signatureCounter) else {
            throw OpenPGPError.malformed(Malformation(.securitySupport, .missing))
        }
        guard (1...4).contains(counter.count) else {
            throw OpenPGPError.malformed(Malformation(.securitySupport, .length(counter.count)))
        }
        return counter.reduce(0) { $0 << 8 | Int($1) }
    }

    /// The KDF object; "none" when the card has no KDF (its extended capabilities say so).
    public func kdf(capabilities: OpenPGPExtendedCapabilities? = nil) async throws -> OpenPGPKDF {
        let caps: OpenPGPExtendedCapabilities
        if let capabilities {
            caps = capabilities
        } else {
            caps = try await applicationData().extendedCapabilities
        }
        guard caps.hasKDF else { return OpenPGPKDF(algorithm: 0) }
        return try OpenPGPKDF(try await getData(OpenPGP.DO.kdf))
    }

    /// A slot's touch policy (the YubiKey's UIF object; firmware 4.2 and later).
    public func touchPolicy(_ slot: OpenPGP.KeySlot) async throws -> OpenPGP.TouchPolicy {
        guard version >= Version(4, 2, 0) else { return .off }
        return try OpenPGPApplicationData.touchPolicy(try await getData(slot.touchPolicyTag))
    }

    /// Sets a slot's touch policy; needs the admin PIN. A fixed policy stays until the key is replaced.
    public func setTouchPolicy(_ slot: OpenPGP.KeySlot, _ policy: OpenPGP.TouchPolicy) async throws {
        try Self.require(Version(4, 2, 0), version)
        if slot == .attestation || policy.isCached { try Self.require(Version(5, 2, 1), version) }
        if try await touchPolicy(slot).isFixed { throw OpenPGPError.touchPolicyFixed(slot) }
        // The second byte names the button, the one way to touch a YubiKey.
        try await putData(slot.touchPolicyTag, [policy.rawValue, 0x20])
    }

    /// Sets whether one VERIFY of the PIN allows several signatures (`true`) or one (`false`); needs the admin PIN.
    public func setSignaturePINPolicy(severalSignatures: Bool) async throws {
        try await putData(OpenPGP.DO.pwStatus, [severalSignatures ? 0x01 : 0x00])
    }

    static func require(_ minimum: Version, _ actual: Version) throws(OpenPGPError) {
        guard actual >= minimum else { throw .notSupported(minimum: minimum, actual: actual) }
    }

    // MARK: Passwords

    /// The password as the card takes it: checked against the lengths the card allows, then derived when the card
    /// has a KDF (`OpenPGPKDF.derive`).
    private func checked(
        _ secret: SecretBytes, _ password: OpenPGP.Password, _ context: PasswordContext
    ) throws(OpenPGPError) -> [UInt8] {
        // With a KDF the card sees a digest, whatever the password's length: the lengths are held to the password
        // typed, up to the longest any card takes.
        let maximum = context.kdf.isEnabled ? OpenPGP.maximumPINLength : context.status.maxLength(password)
        guard (password.minimumLength...max(password.minimumLength, maximum)).contains(secret.count) else {
            throw .passwordLength(password, count: secret.count, minimum: password.minimumLength, maximum: maximum)
        }
        return try context.kdf.derive(secret, for: password)
    }

    /// What a password command needs to know of the card: the password status and the KDF.
    private struct PasswordContext {
        var status: OpenPGPPasswordStatus
        var kdf: OpenPGPKDF
    }

    private func passwordContext() async throws -> PasswordContext {
        let data = try await applicationData()
        return PasswordContext(status: data.passwordStatus, kdf: try await kdf(capabilities: data.extendedCapabilities))
    }

    /// Writes the KDF object (`OpenPGPKDF.make()` turns the iterated and salted S2K on, `OpenPGPKDF(algorithm:
    /// OpenPGPKDF.none)` off); needs the admin PIN verified. A YubiKey then takes the derived default PINs the object
    /// carries (or the plain defaults, turned off) as its PIN and admin PIN, and forgets the reset code.
    public func setKDF(_ kdf: OpenPGPKDF) async throws {
        guard try await applicationData().extendedCapabilities.hasKDF else {
            throw OpenPGPError.notSupported(minimum: Version(5, 2, 0), actual: version)
        }
        try await putData(OpenPGP.DO.kdf, kdf.encoded)
    }

    /// Turns a refusal of a password into `wrongPassword` with the tries left, or `passwordBlocked`.
    private func passwordRefusal(_ response: Response, _ password: OpenPGP.Password) async throws {
        let status = response.status
        if status.isSuccess { return }
        if status == .authMethodBlocked { throw OpenPGPError.passwordBlocked(password) }
        if status == .securityConditionNotSatisfied || status.sw1 == 0x63 {
            var left = status.retriesLeft ?? 0
            if status.retriesLeft == nil { left = try await passwordStatus().tries(password) }
            if left == 0 { throw OpenPGPError.passwordBlocked(password) }
            throw OpenPGPError.wrongPassword(password, retriesLeft: left)
        }
        _ = try Self.check(response)
    }

    /// VERIFY the user PIN: for signing (`extended` false, reference 81) or for the other operations (82).
    public func verifyPIN(_ pin: SecretBytes, extended: Bool = false) async throws {
        let context = try await passwordContext()
        var data = try checked(pin, .user, context)
        defer { SecretBytes.wipe(&data) }
        let p2: UInt8 = extended ? 0x82 : 0x81
        try await passwordRefusal(try await proto.send(APDU(ins: Ins.verify, p2: p2, data: data)), .user)
    }

    /// VERIFY the admin PIN.
    public func verifyAdminPIN(_ pin: SecretBytes) async throws {
        let context = try await passwordContext()
        var data = try checked(pin, .admin, context)
        defer { SecretBytes.wipe(&data) }
        try await passwordRefusal(
            try await proto.send(APDU(ins: Ins.verify, p2: OpenPGP.Password.admin.rawValue, data: data)), .admin)
    }

    /// CHANGE REFERENCE DATA of the user PIN or the admin PIN.
    public func changePassword(_ password: OpenPGP.Password, old: SecretBytes, new: SecretBytes) async throws {
        precondition(password != .reset, "the reset code is set with setResetCode")
        let context = try await passwordContext()
        var oldBytes = try checked(old, password, context)
        defer { SecretBytes.wipe(&oldBytes) }
        var newBytes = try checked(new, password, context)
        defer { SecretBytes.wipe(&newBytes) }
        var data = oldBytes + newBytes
        defer { SecretBytes.wipe(&data) }
        let response = try await proto.send(APDU(ins: Ins.changeReference, p2: password.rawValue, data: data))
        if response.status == .conditionsNotSatisfied { throw OpenPGPError.tooSimple(password) }
        try await passwordRefusal(response, password)
    }

    /// Sets the reset code (PUT DATA D3); needs the admin PIN verified.
    public func setResetCode(_ code: SecretBytes) async throws {
        let context = try await passwordContext()
        var data = try checked(code, .reset, context)
        defer { SecretBytes.wipe(&data) }
        do {
            try await putData(OpenPGP.DO.resettingCode, data)
        } catch OpenPGPError.conditionsNotSatisfied {
            throw OpenPGPError.tooSimple(.reset)
        }
    }

    /// RESET RETRY COUNTER: a new user PIN, with the reset code, or (`resetCode` nil) after the admin PIN was
    /// verified.
    public func unblockPIN(newPIN: SecretBytes, resetCode: SecretBytes? = nil) async throws {
        let context = try await passwordContext()
        var data = try checked(newPIN, .user, context)
        defer { SecretBytes.wipe(&data) }
        if let resetCode {
            if context.status.triesReset == 0 { throw OpenPGPError.passwordBlocked(.reset) }
            var code = try checked(resetCode, .reset, context)
            defer { SecretBytes.wipe(&code) }
            var both = code + data
            defer { SecretBytes.wipe(&both) }
            let response = try await proto.send(
                APDU(ins: Ins.resetRetryCounter, p1: 0x00, p2: OpenPGP.Password.user.rawValue, data: both))
            // A card without a reset code may answer 6A80 as well as 6983.
            if response.status == .incorrectParameters { throw OpenPGPError.passwordBlocked(.reset) }
            if response.status == .conditionsNotSatisfied { throw OpenPGPError.tooSimple(.user) }
            try await passwordRefusal(response, .reset)
        } else {
            do {
                _ = try await send(
                    APDU(ins: Ins.resetRetryCounter, p1: 0x02, p2: OpenPGP.Password.user.rawValue, data: data))
            } catch OpenPGPError.conditionsNotSatisfied {
                throw OpenPGPError.tooSimple(.user)
            }
        }
    }

    /// The YubiKey's SET PIN RETRIES (firmware 4.3.1 and later): the tries of the user PIN, the reset code and
    /// the admin PIN (1 to 255 each); needs the admin PIN verified. The counters start again at the new values.
    public func setPINRetries(user: Int, reset: Int, admin: Int) async throws {
        try Self.require(Version(4, 3, 1), version)
        guard [user, reset, admin].allSatisfy({ (1...255).contains($0) }) else {
            throw OpenPGPError.status(.incorrectParameters)
        }
        _ = try await send(APDU(ins: Ins.setPINRetries, data: [UInt8(user), UInt8(reset), UInt8(admin)]))
    }

    // MARK: Keys

    /// The public key of the key in `slot`, read with GENERATE ASYMMETRIC KEY PAIR (P1 81).
    public func publicKey(_ slot: OpenPGP.KeySlot) async throws -> OpenPGPPublicKey {
        let data = try await applicationData()
        guard let attributes = data.key(slot)?.attributes else { throw OpenPGPError.noKey(slot) }
        let answer = try await send(
            APDU(ins: Ins.generateAsymmetric, p1: OpenPGP.readPublicKey, data: slot.controlReference, le: 256),
            slot: slot)
        return try OpenPGPPublicKey(answer, attributes: attributes)
    }

    /// Sets a slot's algorithm attributes (an other key kind deletes the slot's key); needs the admin PIN.
    public func setAlgorithmAttributes(_ slot: OpenPGP.KeySlot, _ attributes: OpenPGPAlgorithmAttributes) async throws {
        try await putData(slot.algorithmAttributesTag, attributes.encoded)
    }

    /// Generates a key in `slot` (GENERATE ASYMMETRIC KEY PAIR, P1 80) after setting its attributes where the
    /// card lets them change; needs the admin PIN. The fingerprint and the generation time are the host's to
    /// write (`putData` of the slot's tags): an OpenPGP fingerprint covers the time, which the card does not know.
    public func generate(_ slot: OpenPGP.KeySlot, _ attributes: OpenPGPAlgorithmAttributes) async throws
        -> OpenPGPPublicKey
    {
        let data = try await applicationData()
        if case .ecc = attributes { try Self.require(OpenPGP.version52, version) }
        if data.extendedCapabilities.canChangeAlgorithmAttributes {
            if data.key(slot)?.attributes != attributes {
                try await setAlgorithmAttributes(slot, attributes)
            }
        } else if data.key(slot)?.attributes.map({ $0.sameKind(as: attributes) }) != true {
            throw OpenPGPError.unsupportedAlgorithm
        }
        let answer = try await send(
            APDU(ins: Ins.generateAsymmetric, p1: OpenPGP.generateKey, data: slot.controlReference, le: 256))
        return try OpenPGPPublicKey(answer, attributes: attributes)
    }

    /// Imports `key` into `slot` (PUT DATA 3FFF of the extended header list), after setting the slot's algorithm
    /// attributes where they differ; then writes the key's v4 fingerprint and its generation time `created`
    /// (seconds since 1970), as GnuPG computes and reads them. Needs the admin PIN. Returns the fingerprint.
    @discardableResult
    public func importKey(_ key: AsymmetricPrivateKey, into slot: OpenPGP.KeySlot, created: UInt32) async throws
        -> [UInt8]
    {
        let attributes = try OpenPGPKeyImport.attributes(key, slot: slot)
        if case .ecc = attributes { try Self.require(OpenPGP.version52, version) }
        if slot == .attestation { try Self.require(OpenPGP.version52, version) }
        let data = try await applicationData()
        if data.extendedCapabilities.canChangeAlgorithmAttributes {
            if data.key(slot)?.attributes != attributes {
                try await setAlgorithmAttributes(slot, attributes)
            }
        } else if data.key(slot)?.attributes.map({ $0.sameKind(as: attributes) }) != true {
            throw OpenPGPError.unsupportedAlgorithm
        }
        let fingerprint = try OpenPGPFingerprint.v4(key.publicKey, attributes: attributes, created: created)
        var template = try OpenPGPKeyImport.template(key, slot: slot)
        defer { SecretBytes.wipe(&template) }
        _ = try await send(APDU(ins: Ins.putDataOdd, p1: 0x3F, p2: 0xFF, data: template))
        try await putData(slot.fingerprintTag, fingerprint)
        try await putData(
            slot.generationTimeTag,
            [UInt8(created >> 24), UInt8(created >> 16 & 0xFF), UInt8(created >> 8 & 0xFF), UInt8(created & 0xFF)])
        return fingerprint
    }

    // MARK: Certificates and attestation

    /// SELECT DATA of the cardholder certificate (7F21) of `slot` (firmware 5.2): P1 its occurrence counted from the
    /// authentication key. Firmware up to 5.4.3 wants a length byte before the data.
    public func selectCertificate(_ slot: OpenPGP.KeySlot) async throws {
        precondition(slot != .attestation, "the attestation certificate has an object of its own")
        guard version >= OpenPGP.version52 else {
            if slot == .authentication { return }
            throw OpenPGPError.notSupported(minimum: OpenPGP.version52, actual: version)
        }
        var data = TLV(0x60, TLV(0x5C, [0x7F, 0x21]).encoded).encoded
        if version <= Version(5, 4, 3) { data.insert(UInt8(data.count), at: 0) }
        _ = try await send(APDU(ins: Ins.selectData, p1: UInt8(2 - slot.index), p2: 0x04, data: data))
    }

    /// The certificate stored for `slot` (DER; empty when none): 7F21 after SELECT DATA, or for the attestation
    /// key its object FC.
    public func certificate(_ slot: OpenPGP.KeySlot) async throws -> [UInt8] {
        if slot == .attestation {
            try Self.require(OpenPGP.version52, version)
            return try await getData(OpenPGP.DO.attestationCertificate)
        }
        try await selectCertificate(slot)
        return try await getData(OpenPGP.DO.cardholderCertificate)
    }

    /// Stores `der` as the certificate of `slot` (empty: deletes it); needs the admin PIN.
    public func putCertificate(_ slot: OpenPGP.KeySlot, _ der: [UInt8]) async throws {
        if slot == .attestation {
            try Self.require(OpenPGP.version52, version)
            try await putData(OpenPGP.DO.attestationCertificate, der)
        } else {
            try await selectCertificate(slot)
            try await putData(OpenPGP.DO.cardholderCertificate, der)
        }
    }

    /// GET ATTESTATION (firmware 5.2): the card certifies the key in `slot` with its attestation key and stores the
    /// certificate as the slot's certificate, which is read and checked: signed by the attestation certificate's
    /// key, for the slot's public key. Needs the PIN verified.
    public func attest(_ slot: OpenPGP.KeySlot) async throws -> OpenPGPAttestation {
        try Self.require(OpenPGP.version52, version)
        _ = try await send(APDU(cla: 0x80, ins: Ins.getAttestation, p1: slot.rawValue), slot: slot)
        guard let certificate = try? X509Certificate(der: try await self.certificate(slot)),
            let spki = certificate.subjectPublicKeyInfo, let key = try? AsymmetricPublicKey(spki: spki)
        else { throw OpenPGPError.malformed(Malformation(.certificate, .missing)) }
        guard let device = try? X509Certificate(der: try await self.certificate(.attestation)),
            let deviceKey = device.subjectPublicKeyInfo
        else { throw OpenPGPError.malformed(Malformation(.certificate, .missing)) }
        guard certificate.isSigned(byKey: deviceKey) else { throw OpenPGPError.attestationNotSigned(slot) }
        guard try await publicKey(slot).asymmetricKey() == key else { throw OpenPGPError.attestedKeyMismatch(slot) }
        return OpenPGPAttestation(certificate: certificate, attestationCertificate: device, publicKey: key)
    }

    // MARK: Reset

    /// Blocks the user PIN and the admin PIN with wrong tries, as TERMINATE needs on a YubiKey.
    public func blockPasswords() async throws {
        let wrong = [UInt8](repeating: 0, count: 8)
        for password in [OpenPGP.Password.user, .admin] {
            // Each wrong try takes one; a bound in case a card never says it is blocked.
            for _ in 0..<256 {
                let status = try await proto.send(APDU(ins: Ins.verify, p2: password.rawValue, data: wrong)).status
                if status == .securityConditionNotSatisfied || status.sw1 == 0x63 {
                    if status.retriesLeft == 0 { break }
                    continue
                }
                // Blocked (6983), or a card that will not say more: the TERMINATE tells.
                break
            }
        }
    }

    /// Resets the application to its factory state (default PINs, no keys, no reset code): blocks both PINs,
    /// then TERMINATE and ACTIVATE.
    public func reset() async throws {
        try Self.require(Version(1, 0, 6), version)
        try await blockPasswords()
        _ = try await send(APDU(ins: Ins.terminate))
        _ = try await send(APDU(ins: Ins.activate))
    }
}
