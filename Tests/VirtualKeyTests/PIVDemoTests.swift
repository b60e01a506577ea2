import Foundation
import KeyKit
import Testing
@testable import VirtualKey

/// The PIV demo's key and certificate are kept as bytes: they must stay the key derived from the demo scalar and
/// a certificate that key signed for itself.
@Suite struct PIVDemoTests {
    @Test func theStoredKeyIsTheDemoScalarsKey() throws {
        let stored = try AsymmetricPrivateKey(pkcs8: PIVState.demoPKCS8)
        let derived = try AsymmetricPrivateKey.ec(.p256, scalar: PIVState.demoScalar)
        #expect(stored.publicKey == derived.publicKey)
    }

    @Test func theCertificateIsSelfSignedByTheDemoKeyAndValid() throws {
        let certificate = try X509Certificate(der: PIVState.demoCertificate)
        let key = try AsymmetricPrivateKey.ec(.p256, scalar: PIVState.demoScalar).publicKey
        #expect(certificate.subject == "CN=ykterm demo")
        #expect(certificate.issuer == "CN=ykterm demo")
        #expect(certificate.subjectPublicKeyInfo == key.spki)
        #expect(certificate.isSigned(byKey: key.spki))
        #expect(
            !certificate.isSigned(
                byKey: try AsymmetricPrivateKey.ec(.p256, scalar: Array(repeating: 7, count: 32)).publicKey.spki))
        let notAfter = try #require(certificate.notAfter)
        #expect(notAfter > Date(timeIntervalSince1970: 2_111_000_000))  // 2036-11-22
    }

    @Test func installDemoPutsBothInSlot9A() throws {
        var state = PIVState()
        state.installDemo()
        #expect(state.keys[.authentication]?.privateKey == PIVState.demoPKCS8)
        #expect(state.keys[.authentication]?.algorithm == .eccP256)
        let object = try #require(state.objects[PIV.Slot.authentication.certificateObject])
        #expect(try TLV.parseAll(object).value(for: PIV.Tag.certificate) == PIVState.demoCertificate)
    }
}
