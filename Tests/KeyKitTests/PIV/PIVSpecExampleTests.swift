import Testing
@testable import KeyKit

private func h(_ hex: String) -> [UInt8] { try! Hex.decode(hex) }

/// The published PIV tables and the command examples of SP 800-73-4 part 2, appendix A, against what
/// `PIVSession` sends: numbers written here from the standards, not from the code under test.
@Suite struct PIVSpecExampleTests {
    /// SP 800-73-4 part 1, table 3 (the containers' BER-TLV tags), for the key slots of part 1, table 4b.
    @Test func certificateContainersOfSP800_73_4() {
        let published: [(UInt8, String)] = [
            (0x9A, "5F C1 05"), (0x9C, "5F C1 0A"), (0x9D, "5F C1 0B"), (0x9E, "5F C1 01"),
            (0x82, "5F C1 0D"), (0x83, "5F C1 0E"), (0x84, "5F C1 0F"), (0x85, "5F C1 10"), (0x86, "5F C1 11"),
            (0x87, "5F C1 12"), (0x88, "5F C1 13"), (0x89, "5F C1 14"), (0x8A, "5F C1 15"), (0x8B, "5F C1 16"),
            (0x8C, "5F C1 17"), (0x8D, "5F C1 18"), (0x8E, "5F C1 19"), (0x8F, "5F C1 1A"), (0x90, "5F C1 1B"),
            (0x91, "5F C1 1C"), (0x92, "5F C1 1D"), (0x93, "5F C1 1E"), (0x94, "5F C1 1F"), (0x95, "5F C1 20"),
        ]
        #expect(published.count == PIV.Slot.all.count)
        for (slot, tag) in published {
            #expect(PIV.Slot(rawValue: slot).certificateObject == h(tag), "slot \(PIV.Slot(rawValue: slot))")
            #expect(PIV.Slot.all.contains(PIV.Slot(rawValue: slot)))
        }
        #expect(PIV.ObjectID.chuid == h("5F C1 02"))
        #expect(PIV.ObjectID.cardCapabilityContainer == h("5F C1 07"))
        #expect(PIV.ObjectID.keyHistory == h("5F C1 0C"))
        #expect(PIV.ObjectID.discovery == h("7E"))
        // Part 1, table 4b: the PIV Card Application Administration Key, the PIN and the PUK.
        #expect(PIV.Reference.managementKey == 0x9B)
        #expect(PIV.Reference.pin == 0x80)
        #expect(PIV.Reference.puk == 0x81)
    }

    /// SP 800-78-4 table 6-2: the cryptographic algorithm identifiers.
    @Test func algorithmIdentifiersOfSP800_78_4() {
        let published: [(PIV.Algorithm, UInt8)] = [
            (.tripleDES, 0x03), (.rsa1024, 0x06), (.rsa2048, 0x07), (.aes128, 0x08), (.aes192, 0x0A),
            (.aes256, 0x0C), (.eccP256, 0x11), (.eccP384, 0x14),
        ]
        for (algorithm, identifier) in published { #expect(algorithm.rawValue == identifier, "\(algorithm)") }
    }

    /// Appendix A.1, the PIV Card Application Administrator's mutual authentication with the
    /// Administration Key (9B): GENERAL AUTHENTICATE asks for a witness with an empty 80 in the dynamic
    /// authentication template 7C; the card gives the witness encrypted; the client answers with the witness
    /// decrypted (80) and a challenge of its own (81); the card's response (82) is that challenge encrypted.
    /// The key is the default management key, the witness encrypted by OpenSSL's DES-EDE3 (`openssl enc
    /// -des-ede3 -nopad` on eight zero bytes gives B0 73 DC 3F B2 09 53 6D).
    @Test func mutualAuthenticationOfAppendixA1() async throws {
        let key = PIV.defaultManagementKey
        let card = PIVRespondingCard(version: [5, 4, 3]) { apdu in
            guard apdu.ins == 0x87, apdu.p1 == 0x03, apdu.p2 == 0x9B else { return [0x6A, 0x86] }
            if apdu.data == h("7C 02 80 00") { return h("7C 0A 80 08 B0 73 DC 3F B2 09 53 6D 90 00") }
            let fields = try! TLV.parseAll(TLV.parseAll(apdu.data).value(for: 0x7C)!)
            guard fields.value(for: 0x80) == [UInt8](repeating: 0, count: 8), let challenge = fields.value(for: 0x81),
                challenge.count == 8
            else { return [0x69, 0x82] }
            let encrypted = try! BlockCipher.encrypt(
                BlockCipher.Algorithm.tripleDES, key: SecretBytes(key), block: challenge)
            return TLV(0x7C, TLV(0x82, encrypted).encoded).encoded + [0x90, 0x00]
        }
        let session = try await PIVSession.make(connection: card)
        try await session.authenticate(managementKey: SecretBytes(key), algorithm: .tripleDES)
        let sent = card.received.filter { $0.ins == 0x87 }
        #expect(sent.count == 2)
        #expect(try sent.first?.encoded() == h("00 87 03 9B 04 7C 02 80 00 00"))
        #expect(sent.last.map { Array($0.data.prefix(14)) } == h("7C 14 80 08 00 00 00 00 00 00 00 00 81 08"))
    }

    /// The same exchange with AES-192 (the YubiKey's default from firmware 5.7, algorithm 0A), the witness
    /// block encrypted by `openssl enc -aes-192-ecb -nopad`.
    @Test func mutualAuthenticationWithAES192() async throws {
        let witness = h("00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF")
        let card = PIVRespondingCard { apdu in
            guard apdu.ins == 0x87, apdu.p1 == 0x0A, apdu.p2 == 0x9B else { return [0x6A, 0x86] }
            if apdu.data == h("7C 02 80 00") {
                return h("7C 12 80 10 C5 3C 74 BB 02 93 9C 2F D3 D9 23 07 8F 3E 75 7D 90 00")
            }
            let fields = try! TLV.parseAll(TLV.parseAll(apdu.data).value(for: 0x7C)!)
            guard fields.value(for: 0x80) == witness, let challenge = fields.value(for: 0x81) else {
                return [0x69, 0x82]
            }
            let encrypted = try! BlockCipher.encrypt(
                BlockCipher.Algorithm.aes192, key: SecretBytes(PIV.defaultManagementKey), block: challenge)
            return TLV(0x7C, TLV(0x82, encrypted).encoded).encoded + [0x90, 0x00]
        }
        let session = try await PIVSession.make(connection: card)
        try await session.authenticate(managementKey: SecretBytes(PIV.defaultManagementKey), algorithm: .aes192)
        #expect(try card.received.filter { $0.ins == 0x87 }.first?.encoded() == h("00 87 0A 9B 04 7C 02 80 00 00"))
    }

    /// Part 2, 3.2.1 VERIFY: the PIN reference 80, the PIN padded with FF to eight bytes; 63 CX gives the
    /// tries left.
    @Test func verifyOfPart2() async throws {
        let (session, card) = try await pivSession([
            ("00 20 00 80 08 31 32 33 34 35 36 FF FF", "63 C2"),
            ("00 20 00 80 08 31 32 33 34 35 36 37 38", "90 00"),
        ])
        await #expect(throws: PIVError.wrongPIN(retriesLeft: 2)) {
            try await session.verifyPIN(SecretBytes(utf8: "123456"))
        }
        try await session.verifyPIN(SecretBytes(utf8: "12345678"))
        #expect(card.remaining == 0)
    }

    /// Part 2, 3.3.2 GENERATE ASYMMETRIC KEY PAIR: the control reference template AC with the algorithm (80);
    /// the answer a public key template 7F49 with the point (86), here P-256's generator as the public key.
    @Test func generateOfPart2() async throws {
        let x = "6B 17 D1 F2 E1 2C 42 47 F8 BC E6 E5 63 A4 40 F2 77 03 7D 81 2D EB 33 A0 F4 A1 39 45 D8 98 C2 96"
        let y = "4F E3 42 E2 FE 1A 7F 9B 8E E7 EB 4A 7C 0F 9E 16 2B CE 33 57 6B 31 5E CE CB B6 40 68 37 BF 51 F5"
        let (session, card) = try await pivSession([
            ("00 47 00 9D 05 AC 03 80 01 11 00", "7F 49 43 86 41 04 \(x) \(y) 90 00")
        ])
        let key = try await session.generateKey(in: .keyManagement, algorithm: .eccP256)
        #expect(key.ecPoint == h("04 \(x) \(y)"))
        #expect(card.remaining == 0)
    }
}
