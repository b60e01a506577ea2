import FuzzSessions
import FuzzSupport
import KeyKit
import VirtualKey

/// The PIV operations `ykterm piv info`, `piv verify` and `piv keys generate` make, against a key that answers
/// from the input: SELECT and version, serial, metadata of PIN, PUK, management key and slot 9A, 9A's
/// certificate with every detail a display shows, VERIFY PIN, management key authentication with the default
/// key (a device answer can carry the proof for the session's random challenge; `FuzzPIVCard`), a signature
/// with 9A's key, its attestation (the chain checked), and a P-256 key generated in 9C.
///
/// The first byte picks the signature's digest (bits 0-1: SHA-256, SHA-384, SHA-512) and padding (bit 2: PSS);
/// the rest are the key's answers, one per APDU (`FuzzAnswers`). Each step's error is kept and the next runs,
/// until the card is gone. Invariants: every error is PIV's or the smart-card layer's; an RSA signature is as
/// long as the modulus, an Ed25519 one 64 bytes; a generated key is a P-256 key; a fingerprint is 32 bytes.
private let pin = SecretBytes(utf8: "123456")
private let message = Array("ykterm PIV fuzz".utf8)

private func operation(_ card: any SmartCardConnection, scheme: PIVSignatureScheme) async throws -> String {
    let session = try await PIVSession.make(connection: card)
    var lines = ["v\(session.version)"]
    var algorithm: PIV.Algorithm?
    func step(_ name: String, _ body: () async throws -> String) async throws {
        do {
            lines.append(name + "=" + (try await body()))
        } catch SmartCardError.cardRemoved {
            throw SmartCardError.cardRemoved
        } catch let error as PIVError {
            lines.append("\(name): \(error)")
        } catch let error as SmartCardError {
            lines.append("\(name): \(error)")
        }
    }
    try await step("serial") { String(try await session.serial()) }
    try await step("pin") { "\(try await session.pinMetadata())" }
    try await step("puk") { "\(try await session.pukMetadata())" }
    try await step("management") { "\(try await session.managementKeyMetadata())" }
    try await step("9a") {
        let metadata = try await session.slotMetadata(.authentication)
        algorithm = metadata.algorithm
        return "\(metadata.algorithm) \(metadata.pinPolicy) \(metadata.touchPolicy) \(metadata.origin)"
    }
    try await step("certificate") {
        guard let certificate = try await session.certificate(in: .authentication) else { return "none" }
        fuzzCheck(
            certificate.sha256Fingerprint.count == 32, "a fingerprint of \(certificate.sha256Fingerprint.count) bytes")
        let names = certificate.alternativeNames.map(\.description).joined(separator: ",")
        return [
            certificate.subject, certificate.issuer, certificate.serialHex,
            "\(String(describing: certificate.notAfter))",
            certificate.keyUsage?.names.joined(separator: ",") ?? "-", names, certificate.sha256FingerprintText,
        ]
        .joined(separator: "|")
    }
    try await step("verify") {
        try await session.verifyPIN(pin); return "ok"
    }
    try await step("retries") { String(try await session.pinRetries()) }
    try await step("authenticate") {
        try await session.authenticate(managementKey: SecretBytes(PIV.defaultManagementKey))
        return "ok"
    }
    try await step("sign") {
        let signature = try await session.sign(message, in: .authentication, algorithm: algorithm, scheme: scheme)
        if let length = algorithm?.rsaModulusLength {
            fuzzCheck(signature.count == length, "an RSA signature of \(signature.count) bytes for \(length)")
        }
        if algorithm == .ed25519 {
            fuzzCheck(signature.count == 64, "an Ed25519 signature of \(signature.count) bytes")
        }
        return "\(signature.count) bytes"
    }
    try await step("attest") {
        let attestation = try await session.attest(.authentication)
        return attestation.certificate.subject + " by " + attestation.attestationCertificate.subject
    }
    try await step("generate") {
        let key = try await session.generateKey(in: .signature, algorithm: .eccP256)
        fuzzCheck(key.type == .p256, "a generated P-256 key is a \(key.type) key")
        return key.pivAlgorithm?.description ?? "?"
    }
    return lines.joined(separator: " ; ")
}

private func scheme(_ byte: UInt8) -> PIVSignatureScheme {
    let digests: [SignatureDigest] = [.sha256, .sha384, .sha512, .sha256]
    return PIVSignatureScheme(digest: digests[Int(byte & 3)], padding: byte & 4 != 0 ? .pss : .pkcs1)
}

private func replay(_ input: [UInt8]) -> Result<String, any Error> {
    let card = FuzzPIVCard(answers: FuzzAnswers(input.dropFirst()))
    let chosen = scheme(input.first ?? 0)
    return runToCompletion { try await operation(card, scheme: chosen) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzCheckTyped(replay(fuzzBytes(data, size))) { $0 is PIVError || $0 is SmartCardError }
    return 0
}

/// Seeds: the demo (P-256 key and certificate in 9A) on firmware 5.7 (AES-192 management key) and 5.4 (3DES),
/// on 5.2 (no metadata: the algorithm from the certificate), with another PIN (refused), an RSA 2048 key with a
/// gzip-compressed certificate signing PKCS#1 v1.5 and PSS, an Ed25519 key, a generated P-384 key (attested),
/// and an empty key.
private func recordSeeds() async throws -> [Seed] {
    let cases: [(name: String, version: Version, setup: Setup, scheme: UInt8)] = [
        ("demo-57", Version(5, 7, 2), .demo, 0),
        ("demo-54", Version(5, 4, 3), .demo, 1),
        ("demo-52-no-metadata", Version(5, 2, 7), .demo, 2),
        ("other-pin", Version(5, 7, 2), .otherPIN, 0),
        ("rsa-gzip-pkcs1", Version(5, 7, 2), .rsa, 0),
        ("rsa-gzip-pss", Version(5, 7, 2), .rsa, 5),
        ("ed25519", Version(5, 7, 2), .ed25519, 0),
        ("generated-p384", Version(5, 7, 2), .generated, 2),
        ("empty", Version(5, 7, 2), .empty, 0),
    ]
    var seeds = [Seed]()
    for c in cases {
        var state = VirtualKeyState.yubiKey5NFC(version: c.version)
        if c.setup == .demo || c.setup == .otherPIN { state.piv.installDemo() }
        if c.setup == .otherPIN { state.piv.pin = Array("999999".utf8) }
        let key = VirtualKey(state: state, touchDelay: 0)
        try await c.setup.prepare(key)
        let card = RecordingPIVCard(card: VirtualKeyConnection(key: key))
        let chosen = scheme(c.scheme)
        let result = await capturing { try await operation(card, scheme: chosen) }
        seeds.append(
            Seed(
                name: c.name, input: [c.scheme] + FuzzAnswers.encode(card.log.answers),
                outcome: describeOutcome(result)))
    }
    return seeds
}

private enum Setup {
    case demo, otherPIN, rsa, ed25519, generated, empty

    /// Keys and certificates put in through KeyKit, as a client would.
    func prepare(_ key: VirtualKey) async throws {
        let type: AsymmetricKeyType
        switch self {
        case .rsa: type = .rsa(bits: 2048)
        case .ed25519: type = .ed25519
        case .generated: type = .p384
        default: return
        }
        let session = try await PIVSession.make(connection: VirtualKeyConnection(key: key))
        try await session.authenticate(managementKey: SecretBytes(PIV.defaultManagementKey))
        if self == .generated {
            // A generated key can be attested; no certificate.
            _ = try await session.generateKey(in: .authentication, algorithm: .eccP384)
            return
        }
        let privateKey = try AsymmetricPrivateKey.generate(type)
        try await session.importKey(privateKey, in: .authentication)
        let certificate = try CertificateIssuer.issue(
            subject: [.init("CN", "fuzz \(type)")], publicKey: privateKey.publicKey, serial: [0x01],
            validity: .interval(notBefore: 1_750_000_000, notAfter: 2_065_000_000), signingKey: privateKey)
        try await session.putCertificate(certificate, in: .authentication, compress: true)
    }
}

@_cdecl("FuzzPIVSession_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    recordSeedsIfAsked(argc, argv, record: recordSeeds, replay: { describeOutcome(replay($0)) })
    return runFuzzer(argc, argv, testOneInput)
}
