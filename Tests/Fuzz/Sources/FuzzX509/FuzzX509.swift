import FuzzSupport
import KeyKit

/// Certificates as PIV keys hold them. The first byte picks the input's form: 0 DER X.509 (every detail a display
/// shows is read), 1 a PIV certificate object (70 certificate, 71 CertInfo with gzip, FE), 2 PEM text, 3 a PIV
/// public key template (7F49's value) of the algorithm the second byte names.
/// Invariants: a certificate that parses re-encodes to the same DER through PEM; its fingerprint is 32 bytes and
/// a PIV public key survives its own encoding and PEM.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzBytes(data, size)
    guard let form = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    switch form % 4 {
    case 0:
        if let certificate = try? X509Certificate(der: rest) { details(certificate) }
    case 1:
        // Errors are typed (PIVError) by the signature.
        if let certificate = (try? PIVSession.parseCertificateObject(rest)) ?? nil { details(certificate) }
    case 2:
        let text = String(decoding: rest, as: UTF8.self)
        for der in PEM.decode(text, label: PEM.certificate) ?? [] {
            if let certificate = try? X509Certificate(der: der) { details(certificate) }
        }
        if let certificate = try? X509Certificate(derOrPEM: rest) { details(certificate) }
    default:
        guard let algorithm = PIV.Algorithm(rawValue: rest.first ?? 0) else { return 0 }
        if let key = try? AsymmetricPublicKey(pivEncoding: Array(rest.dropFirst()), algorithm: algorithm) {
            fuzzCheck(
                key.pivAlgorithm == algorithm, "a \(algorithm) template read as \(String(describing: key.pivAlgorithm))"
            )
            let again = try? AsymmetricPublicKey(pivEncoding: key.pivEncoding, algorithm: algorithm)
            fuzzCheck(again == key, "the \(algorithm) key does not survive its own encoding")
            fuzzCheck(PEM.decode(key.pem, label: PEM.publicKey) == [key.spki], "the key's PEM does not read back")
        }
    }
    return 0
}

private func details(_ certificate: X509Certificate) {
    _ = (certificate.subject, certificate.issuer, certificate.serialHex, certificate.notBefore, certificate.notAfter)
    _ = (certificate.keyUsage?.names, certificate.alternativeNames.map(\.description), certificate.signatureAlgorithm)
    fuzzCheck(
        certificate.sha256Fingerprint.count == 32, "a fingerprint of \(certificate.sha256Fingerprint.count) bytes")
    fuzzCheck(certificate.sha256FingerprintText.count == 95, "fingerprint text \(certificate.sha256FingerprintText)")
    let pem = certificate.pem
    fuzzCheck((try? X509Certificate(derOrPEM: Array(pem.utf8)))?.der == certificate.der, "PEM does not read back")
    if let spki = certificate.subjectPublicKeyInfo {
        fuzzCheck(!spki.isEmpty, "an empty SubjectPublicKeyInfo")
        _ = try? AsymmetricPublicKey(spki: spki)
        _ = certificate.isSigned(byKey: spki)
    }
    _ = certificate.isIssued(by: certificate)
}

@_cdecl("FuzzX509_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
