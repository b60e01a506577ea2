import KeyKit
import Testing

/// A FIDO key that answers getInfo with `info` and getPINRetries with `retries` (any CBOR value).
private final class InfoOnlyConnection: FIDOConnection {
    let name = "info-only"
    let info: CBOR
    let retries: CBOR

    init(info: CBOR, retries: CBOR) {
        self.info = info
        self.retries = retries
    }

    func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8] {
        switch request.first {
        case 0x04: return [0x00] + info.encoded
        case 0x06: return [0x00] + CBOR.map([3: retries]).encoded
        default: return [CTAPError.invalidCommand]
        }
    }

    func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8] { [0x6D, 0x00] }
    func cancel() async {}
    func close() async {}
}

private let aaguid: CBOR = .bytes([UInt8](repeating: 0x2F, count: 16))

@Suite("FIDO: getInfo and PIN retries as shown")
struct FIDOInfoTests {
    @Test func anImpossibleNegativeRetryCountIsNoCount() async throws {
        // A key of another make, before a PIN exists: getPINRetries answers -61.
        let key = InfoOnlyConnection(info: [1: ["FIDO_2_0"], 3: aaguid, 4: ["clientPin": false]], retries: CBOR(-61))
        let session = try await CTAP2Session.make(connection: key)
        #expect(await session.info.pinSet == false)
        let error = await #expect(throws: FIDOSessionError.self) { _ = try await session.pinRetries() }
        #expect(error == .malformed(Malformation(.pinRetries, .value("-61"))))
    }

    @Test(arguments: [0, 8, 255])
    func possibleRetryCountsAreKept(count: Int) async throws {
        let key = InfoOnlyConnection(info: [1: ["FIDO_2_0"], 3: aaguid, 4: ["clientPin": true]], retries: CBOR(count))
        let session = try await CTAP2Session.make(connection: key)
        #expect(try await session.pinRetries().retries == count)
    }

    @Test func aCountOfMoreThanAByteIsNoCountEither() async throws {
        let key = InfoOnlyConnection(info: [1: ["FIDO_2_0"], 3: aaguid, 4: ["clientPin": true]], retries: CBOR(256))
        let session = try await CTAP2Session.make(connection: key)
        await #expect(throws: FIDOSessionError.self) { _ = try await session.pinRetries() }
    }

    @Test func firmwareVersionIsAVersion() throws {
        let info = try AuthenticatorInfo(cbor: [1: ["FIDO_2_0"], 3: aaguid, 0x0E: CBOR(329_474)])
        #expect(info.firmwareVersion == 329_474)
        #expect(info.firmware == Version(5, 7, 2))
        #expect(info.firmware?.description == "5.7.2")
        #expect(try AuthenticatorInfo(cbor: [1: ["FIDO_2_0"], 3: aaguid]).firmware == nil)
        #expect(try AuthenticatorInfo(cbor: [1: ["FIDO_2_0"], 3: aaguid, 0x0E: CBOR(-1)]).firmware == nil)
    }
}
