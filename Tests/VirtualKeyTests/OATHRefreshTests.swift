import KeyKit
import Testing
@testable import VirtualKey

/// A refresh of the codes must cost only SELECT, (VALIDATE), CALCULATE ALL and the SEND REMAINING parts
/// its answer needs: these tests count what the virtual key received.
@Suite struct OATHRefreshTests {
    static let secret: [UInt8] = Array("12345678901234567890".utf8)

    static func keyWith32Accounts(password: String? = nil) async throws -> (VirtualKey, [String], [UInt8]?) {
        let key = VirtualKey()
        let connection = VirtualKeyConnection(key: key)
        let session = try await OATHSession.make(connection: connection)
        var names = [String]()
        for i in 0..<32 {
            let data = CredentialData(name: "user\(i)@example.com", issuer: "Service \(i)", secret: secret)
            try await session.put(data)
            names.append(data.id.string)
        }
        var accessKey: [UInt8]?
        if let password {
            accessKey = await session.deriveKey(password: password)
            try await session.setKey(accessKey!)
        }
        return (key, names, accessKey)
    }

    /// Bytes of the CALCULATE ALL answer: for each account its name TLV and a 5-byte truncated-code TLV.
    static func answerLength(_ names: [String]) -> Int {
        names.reduce(0) { $0 + 2 + $1.utf8.count + 2 + 5 }
    }

    @Test func refreshOf32AccountsSendsTheMinimum() async throws {
        let (key, names, _) = try await OATHRefreshTests.keyWith32Accounts()
        key.resetStatistics()
        let session = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
        let entries = try await session.calculateAll(at: 1_111_111_111)
        #expect(entries.count == 32)
        #expect(entries.allSatisfy { $0.code?.value == "050471" })
        let length = OATHRefreshTests.answerLength(names)
        let remaining = (length + 255) / 256 - 1
        let stats = key.statistics
        #expect(remaining >= 2)
        #expect(stats.commands == 2 + remaining)
        #expect(stats.selects == [AID.oath.hex: 1])
        #expect(stats.byInstruction[0xA4] == 2)  // SELECT and CALCULATE ALL share INS A4
        #expect(stats.byInstruction[0xA5] == remaining)
    }

    @Test func lockedRefreshAddsOneValidate() async throws {
        let (key, names, accessKey) = try await OATHRefreshTests.keyWith32Accounts(password: "pw")
        key.resetStatistics()
        let session = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
        #expect(await session.isLocked)
        try await session.validate(key: accessKey!)
        _ = try await session.calculateAll(at: 59)
        let remaining = (OATHRefreshTests.answerLength(names) + 255) / 256 - 1
        #expect(key.statistics.commands == 3 + remaining)
        #expect(key.statistics.byInstruction[0xA3] == 1)
    }
}
