import FoundationEssentials
import Glibc

/// U2F's numbers (FIDO U2F Raw Message Formats): instructions, the control byte of AUTHENTICATE and the
/// fixed bytes of the messages, for this client and the virtual key alike.
public enum U2F {
    /// Instructions (class 00).
    public enum Instruction {
        public static let register: UInt8 = 0x01
        public static let authenticate: UInt8 = 0x02
        public static let version: UInt8 = 0x03
    }

    /// AUTHENTICATE's P1, the control byte.
    public enum Control {
        /// Only whether the key handle is this key's for the application: "conditions not satisfied" (6985)
        /// when it is, "wrong data" (6A80) when not.
        public static let checkOnly: UInt8 = 0x07
        /// Sign after a touch.
        public static let enforceUserPresenceAndSign: UInt8 = 0x03
        /// Sign without a touch.
        public static let dontEnforceUserPresenceAndSign: UInt8 = 0x08
    }

    /// The first byte of REGISTER's answer (a legacy reserved value).
    public static let registrationReserved: UInt8 = 0x05
    /// The first byte of the data REGISTER's signature covers (reserved for future use).
    public static let registrationSignedReserved: UInt8 = 0x00
    /// The version string VERSION answers, and SELECT of the FIDO application.
    public static let version = "U2F_V2"
}

/// U2F (CTAP1) register and authenticate, over any FIDO connection, with the signatures checked.
public struct U2FSession: Sendable {
    public let connection: any FIDOConnection
    /// How long to wait for a touch (U2F keys answer "conditions not satisfied" until touched).
    public var touchTimeout: Double

    public init(connection: any FIDOConnection, touchTimeout: Double = 30) {
        self.connection = connection
        self.touchTimeout = touchTimeout
    }

    public struct Registration: Sendable, Equatable {
        public var publicKey: P256PublicKey
        public var keyHandle: [UInt8]
        public var certificate: [UInt8]
        public var signature: [UInt8]
    }

    public struct Authentication: Sendable, Equatable {
        public var userPresence: UInt8
        public var counter: UInt32
        public var signature: [UInt8]
    }

    /// VERSION ("U2F_V2"). Like every U2F command it is sent in the extended encoding, here with Le
    /// 00 00 00 (up to 65536 bytes): it answers data, and a key may send none to a command without Le.
    public func version() async throws -> String {
        let command = try APDU(ins: U2F.Instruction.version, le: 65536).encoded(.extended)
        let r = try Response(raw: try await connection.sendU2F(command))
        return String(decoding: try r.checked(), as: UTF8.self)
    }

    /// Sends until the key stops asking for a touch (6985) or the timeout passes.
    private func sendWaitingForTouch(_ apdu: APDU, progress: (@Sendable (FIDOProgress) -> Void)?) async throws
        -> [UInt8]
    {
        let deadline = Date().addingTimeInterval(touchTimeout)
        let bytes = try apdu.encoded(.extended)
        while true {
            let r = try Response(raw: try await connection.sendU2F(bytes))
            if r.status == .conditionsNotSatisfied {
                progress?(.waitingForUserPresence)
                guard Date() < deadline else { throw CTAPError(CTAPError.userActionTimeout) }
                try await Task.sleep(nanoseconds: 200_000_000)
                continue
            }
            if r.status == .incorrectParameters { throw CTAPError(CTAPError.invalidCredential) }
            return try r.checked()
        }
    }

    /// REGISTER: the registration signature is verified against the attestation certificate.
    public func register(
        challenge: [UInt8], application: [UInt8],
        progress: (@Sendable (FIDOProgress) -> Void)? = nil
    ) async throws -> Registration {
        precondition(challenge.count == 32 && application.count == 32)
        let data = try await sendWaitingForTouch(
            APDU(
                ins: U2F.Instruction.register, data: challenge + application,
                le: 65536),
            progress: progress)
        let reg = try U2FSession.parseRegistration(data)
        let message =
            [U2F.registrationSignedReserved] + application + challenge + reg.keyHandle
            + reg.publicKey.uncompressed
        let cert = try X509Certificate(der: reg.certificate)
        guard let key = cert.publicKey, key.verify(signature: reg.signature, message: message) else {
            throw FIDOSessionError.signatureInvalid(.u2fRegistration)
        }
        return reg
    }

    static func parseRegistration(_ d: [UInt8]) throws -> Registration {
        guard d.count > 67, d[0] == U2F.registrationReserved else {
            throw FIDOSessionError.malformed(Malformation(.u2fRegistration, .incomplete))
        }
        let key = try P256PublicKey(uncompressed: Array(d[1..<66]))
        let khLength = Int(d[66])
        var offset = 67 + khLength
        guard d.count > offset + 4 else {
            throw FIDOSessionError.malformed(Malformation(.u2fKeyHandle, .runsPast(field: "key handle")))
        }
        let handle = Array(d[67..<offset])
        // The certificate is one DER SEQUENCE: its length comes from its header.
        guard d[offset] == 0x30 else {
            throw FIDOSessionError.malformed(
                Malformation(.u2fCertificate, .value(Hex.encode([d[offset]], uppercase: true))))
        }
        let (cert, next): (TLV, Int)
        do {
            (cert, next) = try TLV.parse(d, at: offset)
        } catch {
            throw FIDOSessionError.malformed(Malformation(.u2fCertificate, .tlv(error)))
        }
        let certBytes = Array(d[offset..<next])
        _ = cert
        offset = next
        guard offset < d.count else { throw FIDOSessionError.malformed(Malformation(.u2fSignature, .missing)) }
        return Registration(publicKey: key, keyHandle: handle, certificate: certBytes, signature: Array(d[offset...]))
    }

    /// AUTHENTICATE (enforcing user presence): the signature is verified with the registered key.
    public func authenticate(
        challenge: [UInt8], application: [UInt8], keyHandle: [UInt8], publicKey: P256PublicKey,
        progress: (@Sendable (FIDOProgress) -> Void)? = nil
    ) async throws -> Authentication {
        precondition(challenge.count == 32 && application.count == 32 && keyHandle.count < 256)
        let data = try await sendWaitingForTouch(
            APDU(
                ins: U2F.Instruction.authenticate, p1: U2F.Control.enforceUserPresenceAndSign,
                data: challenge + application + [UInt8(keyHandle.count)] + keyHandle, le: 65536),
            progress: progress)
        guard data.count > 5 else {
            throw FIDOSessionError.malformed(Malformation(.u2fAuthentication, .tooShort(data.count, minimum: 6)))
        }
        let auth = Authentication(
            userPresence: data[0], counter: UInt32(BigEndian.integer(data[1..<5])),
            signature: Array(data[5...]))
        let message = application + [auth.userPresence] + Array(data[1..<5]) + challenge
        guard publicKey.verify(signature: auth.signature, message: message) else {
            throw FIDOSessionError.signatureInvalid(.u2fAuthentication)
        }
        return auth
    }

    /// Whether the key knows `keyHandle` for `application` (check-only; no touch).
    public func isRegistered(keyHandle: [UInt8], application: [UInt8]) async throws -> Bool {
        let apdu = APDU(
            ins: U2F.Instruction.authenticate, p1: U2F.Control.checkOnly,
            data: [UInt8](repeating: 0, count: 32) + application
                + [UInt8(keyHandle.count)] + keyHandle, le: 65536)
        let r = try Response(raw: try await connection.sendU2F(try apdu.encoded(.extended)))
        return r.status == .conditionsNotSatisfied
    }
}
