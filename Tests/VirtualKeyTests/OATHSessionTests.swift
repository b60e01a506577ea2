import KeyKit
import Testing
import VirtualKey

/// OATHSession end to end against the virtual key, with the RFC 4226 and RFC 6238 published vectors.
@Suite struct OATHSessionTests {
    static func seed(_ n: Int) -> [UInt8] {
        let base = Array("1234567890".utf8)
        return (0..<n).map { base[$0 % 10] }
    }

    static func session(version: Version = Version(5, 7, 2)) async throws -> OATHSession {
        let key = VirtualKey(state: .yubiKey5NFC(version: version), touchDelay: 0.01)
        return try await OATHSession.make(connection: VirtualKeyConnection(key: key))
    }

    // RFC 6238 appendix B: (time, SHA1, SHA256, SHA512), 8 digits, 30 s.
    static let rfc6238: [(Int64, String, String, String)] = [
        (59, "94287082", "46119246", "90693936"),
        (1_111_111_109, "07081804", "68084774", "25091201"),
        (1_111_111_111, "14050471", "67062674", "99943326"),
        (1_234_567_890, "89005924", "91819424", "93441116"),
        (2_000_000_000, "69279037", "90698825", "38618901"),
        (20_000_000_000, "65353130", "77737706", "47863826"),
    ]

    @Test func rfc6238VectorsForAllThreeAlgorithms() async throws {
        let s = try await OATHSessionTests.session()
        let accounts: [(HashAlgorithm, Int)] = [(.sha1, 20), (.sha256, 32), (.sha512, 64)]
        var credentials = [Credential]()
        for (alg, len) in accounts {
            credentials.append(
                try await s.put(
                    CredentialData(
                        name: alg.rawValue, issuer: "RFC6238", algorithm: alg,
                        digits: 8, secret: OATHSessionTests.seed(len))))
        }
        for (t, sha1, sha256, sha512) in OATHSessionTests.rfc6238 {
            let codes = try await credentials.asyncMap { try await s.calculate($0, at: t).value }
            #expect(codes == [sha1, sha256, sha512], "time \(t)")
            let all = try await s.calculateAll(at: t)
            #expect(all.map { $0.code?.value } == [sha1, sha256, sha512], "calculate all at \(t)")
            #expect(all.allSatisfy { $0.code?.validFrom == (t / 30) * 30 && $0.code?.validTo == (t / 30) * 30 + 30 })
        }
    }

    @Test func rfc4226HOTPVectorsAndCounterAdvance() async throws {
        let s = try await OATHSessionTests.session()
        let c = try await s.put(CredentialData(name: "hotp", type: .hotp, secret: OATHSessionTests.seed(20)))
        let expected = [
            "755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871",
            "520489",
        ]
        var got = [String]()
        for i in expected.indices {
            got.append(try await s.calculate(c, at: 0).value)
            if i == 4 {
                // CALCULATE ALL in between leaves HOTP accounts alone: the counter does not move.
                let all = try await s.calculateAll(at: 0)
                #expect(all.first?.code == nil && all.first?.credential.type == .hotp)
            }
        }
        #expect(got == expected)
    }

    @Test func hotpWithInitialCounterAndSevenDigits() async throws {
        let s = try await OATHSessionTests.session()
        let c = try await s.put(
            CredentialData(
                name: "h", type: .hotp, digits: 6, counter: 5,
                secret: OATHSessionTests.seed(20)))
        #expect(try await s.calculate(c, at: 0).value == "254676")
    }

    @Test func nonDefaultPeriodIsRecalculatedWithItsOwnTimeStep() async throws {
        let s = try await OATHSessionTests.session()
        try await s.put(CredentialData(name: "p60", period: 60, secret: OATHSessionTests.seed(20)))
        // At t=59 the 60 s step is 0; the 30 s step would be 1.
        let all = try await s.calculateAll(at: 59)
        let step0 = OATHSession.format(value: 0, digits: 6, steam: false)
        #expect(all.count == 1 && all[0].credential.period == 60)
        #expect(all[0].code?.validFrom == 0 && all[0].code?.validTo == 60)
        #expect(all[0].code?.value != nil && all[0].code?.value != step0)
        // Same code as a 30 s account at time 0 (both use time step 0).
        try await s.put(CredentialData(name: "p30", secret: OATHSessionTests.seed(20)))
        let at0 = try await s.calculateAll(at: 0)
        #expect(at0.first { $0.credential.period == 30 }?.code?.value == all[0].code?.value)
    }

    @Test func touchAccountsWaitForRequest() async throws {
        let s = try await OATHSessionTests.session()
        let c = try await s.put(
            CredentialData(
                name: "touch", digits: 8, secret: OATHSessionTests.seed(20),
                touch: true))
        let all = try await s.calculateAll(at: 59)
        #expect(all.count == 1 && all[0].code == nil && all[0].credential.touch == true && all[0].digits == 8)
        #expect(try await s.calculate(c, at: 59).value == "94287082")
    }

    @Test func passwordLocksAndUnlocks() async throws {
        let key = VirtualKey()
        var s = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
        try await s.put(CredentialData(name: "x", secret: OATHSessionTests.seed(20)))
        try await s.setKey(await s.deriveKey(password: "hunter2"))
        s = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
        #expect(await s.isLocked)
        await #expect(throws: OATHError.passwordRequired) { _ = try await s.list() }
        await #expect(throws: OATHError.wrongPassword) { try await s.unlock(password: "hunter3") }
        try await s.unlock(password: "hunter2")
        #expect(try await s.list().map(\.id.string) == ["x"])
        try await s.removePassword()
        s = try await OATHSession.make(connection: VirtualKeyConnection(key: key))
        #expect(await !s.isLocked)
    }

    @Test func firmwareGatesRenameAndSHA512() async throws {
        let old = try await OATHSessionTests.session(version: Version(4, 2, 6))
        let c = try await old.put(CredentialData(name: "a", secret: OATHSessionTests.seed(20)))
        await #expect(
            throws: OATHError.notSupported(
                feature: .rename, minimum: Version(5, 3, 1),
                actual: Version(4, 2, 6))
        ) {
            try await old.rename(c, to: CredentialID(name: "b", issuer: nil, type: .totp))
        }
        await #expect(throws: OATHError.self) {
            try await old.put(CredentialData(name: "s", algorithm: .sha512, secret: OATHSessionTests.seed(20)))
        }
    }

    @Test func capacityIs32Before57And64From57() async throws {
        for (version, capacity) in [(Version(5, 4, 3), 32), (Version(5, 7, 2), 64)] {
            let s = try await OATHSessionTests.session(version: version)
            for i in 0..<capacity {
                try await s.put(CredentialData(name: "a\(i)", secret: OATHSessionTests.seed(20)))
            }
            await #expect(throws: OATHError.noSpace) {
                try await s.put(CredentialData(name: "full", secret: OATHSessionTests.seed(20)))
            }
        }
    }
}

extension Array {
    func asyncMap<T>(_ f: (Element) async throws -> T) async rethrows -> [T] {
        var out = [T]()
        for e in self { out.append(try await f(e)) }
        return out
    }
}
