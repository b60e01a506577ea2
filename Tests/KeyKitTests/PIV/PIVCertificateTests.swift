import FoundationEssentials
import Testing
@testable import KeyKit

/// X.509 details for display, the attestation chain check, and gzip as PIV stores certificates.
@Suite struct PIVCertificateTests {
    @Test func detailsOfAFixedCertificate() throws {
        let certificate = try X509Certificate(der: PIVFixtures.ecCertificate)
        #expect(certificate.subject == "C=SE, O=ykterm test, CN=ykterm-test")
        #expect(certificate.issuer == certificate.subject)
        #expect(certificate.serialHex == "1234567890ABCDEF")
        #expect(certificate.sha256FingerprintText == PIVFixtures.ecCertificateFingerprint)
        #expect(certificate.notBefore == Date(timeIntervalSince1970: TimeInterval(PIVFixtures.ecCertificateNotBefore)))
        #expect(certificate.notAfter == Date(timeIntervalSince1970: TimeInterval(PIVFixtures.ecCertificateNotAfter)))
        #expect(certificate.keyUsage == [.digitalSignature, .keyAgreement])
        #expect(certificate.keyUsage?.names == ["digitalSignature", "keyAgreement"])
        #expect(
            certificate.alternativeNames == [
                .dns("piv.example.org"), .email("test@example.org"), .ipAddress([192, 0, 2, 7]),
            ])
        #expect(
            certificate.alternativeNames.map(\.description) == [
                "DNS:piv.example.org", "email:test@example.org", "IP Address:192.0.2.7",
            ])
        #expect(certificate.signatureAlgorithm == "ecdsa-with-SHA256")
        // The SPKI is the certificate's own bytes: the P-256 prefix, then the point.
        let spki = try #require(certificate.subjectPublicKeyInfo)
        #expect(spki.count == 91)
        #expect(
            PIVFixtures.ecCertificate.indices.contains { i in
                i + spki.count <= PIVFixtures.ecCertificate.count
                    && Array(PIVFixtures.ecCertificate[i..<(i + spki.count)]) == spki
            })
        #expect(certificate.isSigned(byKey: spki))
    }

    @Test func rsaCertificate() throws {
        let certificate = try X509Certificate(der: PIVFixtures.rsaCertificate)
        #expect(certificate.subject == "CN=ykterm RSA test")
        #expect(certificate.serialHex == "07")
        #expect(certificate.sha256FingerprintText == PIVFixtures.rsaCertificateFingerprint)
        #expect(certificate.keyUsage == nil)
        #expect(certificate.alternativeNames.isEmpty)
        #expect(certificate.signatureAlgorithm == "sha256WithRSAEncryption")
        #expect(certificate.isSigned(byKey: try #require(certificate.subjectPublicKeyInfo)))
    }

    @Test func issuedByChecksNameAndSignature() throws {
        let ca = try X509Certificate(der: PIVFixtures.attestationCA)
        let leaf = try X509Certificate(der: PIVFixtures.attestedCertificate)
        let other = try X509Certificate(der: PIVFixtures.otherCA)
        #expect(leaf.isIssued(by: ca))
        #expect(!leaf.isIssued(by: other))
        #expect(!leaf.isSigned(byKey: try #require(other.subjectPublicKeyInfo)))
        #expect(!ca.isIssued(by: leaf))
        #expect(!leaf.isSigned(byKey: [0x30, 0x00]))
        #expect(!leaf.isSigned(byKey: []))
    }

    @Test func ipv6AndOddAddressesAreShown() {
        let v6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]
        #expect(X509Certificate.AlternativeName.ipAddress(v6).description == "IP Address:2001:db8:0:0:0:0:0:1")
        #expect(X509Certificate.AlternativeName.ipAddress([1, 2]).description == "IP Address:0102")
    }

    // MARK: gzip

    @Test func inflatesWhatTheGzipToolMade() throws {
        #expect(try Gzip.inflate(PIVFixtures.ecCertificateGzip) == PIVFixtures.ecCertificate)
    }

    @Test func roundTrip() throws {
        for data in [[UInt8](), [0x41], PIVFixtures.rsaCertificate, [UInt8](repeating: 7, count: 100_000)] {
            let packed = try Gzip.deflate(data)
            #expect(Array(packed.prefix(2)) == Gzip.magic)
            #expect(try Gzip.inflate(packed) == data)
        }
    }

    @Test func rejectsWhatIsNotOneWholeMember() throws {
        let packed = PIVFixtures.ecCertificateGzip
        #expect(throws: Gzip.Error.notGzip) { try Gzip.inflate([]) }
        #expect(throws: Gzip.Error.notGzip) { try Gzip.inflate(PIVFixtures.ecCertificate) }
        #expect(throws: Gzip.Error.truncated) { try Gzip.inflate(Array(packed.dropLast(5))) }
        #expect(throws: Gzip.Error.trailing(count: 3)) { try Gzip.inflate(packed + [1, 2, 3]) }
        var corrupt = packed
        corrupt[corrupt.count - 8] ^= 0xFF  // the CRC-32
        #expect(throws: Gzip.Error.self) { try Gzip.inflate(corrupt) }
        #expect(throws: Gzip.Error.tooLarge(limit: 100)) { try Gzip.inflate(packed, limit: 100) }
        // A bomb: 4 MiB of zeros in a few kilobytes, stopped at the limit.
        let bomb = try Gzip.deflate([UInt8](repeating: 0, count: 4 << 20))
        #expect(throws: Gzip.Error.tooLarge(limit: Gzip.defaultLimit)) { try Gzip.inflate(bomb) }
    }
}
