import KeyKit
import Testing
import VirtualKey

/// The PIV application's SELECT, PIN and PUK, management key and data objects, as a YubiKey 5 answers them.
@Suite struct PIVAccessTests {
    @Test func selectAnswersTheApplicationPropertyTemplate() throws {
        let key = VirtualKey()
        // 61 { 4F PIX, 79 { 4F NIST RID } }, as a YubiKey 5 answers.
        let expected = pivHex("61 11 4F 06 00 00 10 00 01 00 79 07 4F 05 A0 00 00 03 08 90 00")
        #expect(key.process(try APDU.select(aid: AID.piv).encoded()) == expected)
        #expect(key.process(pivHex("00 FD 00 00")) == [5, 7, 2, 0x90, 0x00])
        #expect(key.process(pivHex("00 F8 00 00")) == BigEndian.bytes(UInt64(28_123_456), count: 4) + [0x90, 0x00])
        #expect(key.process(pivHex("00 01 00 00")) == [0x6D, 0x00])
    }

    @Test func wrongPINsCountDownAndBlock() async throws {
        let card = try await PIVCard()
        #expect(try await card.send(PIV.Ins.verify, p2: 0x80).status.rawValue == 0x63C3)
        #expect(try await card.verify("654321").status.rawValue == 0x63C2)
        #expect(try await card.verify("000000").status.rawValue == 0x63C1)
        // A right PIN gives every try back.
        #expect(try await card.verify().status == .ok)
        #expect(try await card.send(PIV.Ins.verify, p2: 0x80).status == .ok)
        #expect(try await card.metadata(0x80)[0x06] == [3, 3])
        for left in [2, 1, 0] {
            #expect(try await card.verify("999999").status.rawValue == 0x63C0 | UInt16(left))
        }
        #expect(try await card.verify().status == .authMethodBlocked)
        #expect(try await card.send(PIV.Ins.verify, p2: 0x80).status == .authMethodBlocked)
        // Not eight bytes, and references that are not verified this way.
        #expect(try await card.send(PIV.Ins.verify, p2: 0x80, [0x31, 0x32]).status == .incorrectParameters)
        #expect(try await card.send(PIV.Ins.verify, p2: 0x96).status == .referencedDataNotFound)
    }

    @Test func verifyWithP1FFForgetsThePIN() async throws {
        let card = try await PIVCard()
        #expect(try await card.verify().status == .ok)
        #expect(try await card.send(PIV.Ins.verify, p1: 0xFF, p2: 0x80).status == .ok)
        #expect(try await card.send(PIV.Ins.verify, p2: 0x80).status.rawValue == 0x63C3)
    }

    @Test func pinAndPUKChange() async throws {
        let card = try await PIVCard()
        let change = { (p2: UInt8, old: String, new: String) in
            try await card.send(PIV.Ins.changeReference, p2: p2, PIVCard.padded(old) + PIVCard.padded(new))
        }
        #expect(try await card.metadata(0x80)[0x05] == [1])
        #expect(try await change(0x80, "111111", "24681357").status.rawValue == 0x63C2)
        // Too short a new PIN is refused once the current one is right, and nothing changes.
        #expect(try await change(0x80, "123456", "12345").status == .incorrectParameters)
        #expect(try await change(0x80, "123456", "24681357").status == .ok)
        #expect(try await card.metadata(0x80)[0x05] == [0])
        #expect(try await card.metadata(0x80)[0x06] == [3, 3])
        #expect(try await card.verify("123456").status.rawValue == 0x63C2)
        #expect(try await card.verify("24681357").status == .ok)

        #expect(try await change(0x81, "87654321", "11223344").status.rawValue == 0x63C2)
        #expect(try await change(0x81, "12345678", "11223344").status == .ok)
        #expect(try await card.metadata(0x81)[0x05] == [0])
        #expect(try await card.metadata(0x81)[0x06] == [3, 3])
    }

    @Test func thePUKUnblocksThePIN() async throws {
        let card = try await PIVCard()
        for _ in 0..<3 { _ = try await card.verify("000000") }
        #expect(try await card.verify().status == .authMethodBlocked)
        let unblock = { (puk: String, pin: String) in
            try await card.send(PIV.Ins.resetRetryCounter, p2: 0x80, PIVCard.padded(puk) + PIVCard.padded(pin))
        }
        #expect(try await unblock("00000000", "654321").status.rawValue == 0x63C2)
        #expect(try await unblock("12345678", "654321").status == .ok)
        #expect(try await card.metadata(0x80)[0x06] == [3, 3])
        #expect(try await card.metadata(0x81)[0x06] == [3, 3])
        #expect(try await card.verify("654321").status == .ok)
        // A blocked PUK unblocks nothing.
        for _ in 0..<3 { _ = try await unblock("00000000", "654321") }
        #expect(try await unblock("12345678", "654321").status == .authMethodBlocked)
        #expect(try await card.metadata(0x81)[0x06] == [3, 0])
    }

    @Test func resetNeedsPINAndPUKBlocked() async throws {
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        #expect(try await card.generate(.authentication, .eccP256).status == .ok)
        #expect(try await card.putData(PIV.ObjectID.chuid, [0x30, 0x01, 0x00]).status == .ok)
        let attestation = try await card.metadata(PIV.Slot.attestation.rawValue)
        #expect(try await card.send(PIV.Ins.reset).status == .conditionsNotSatisfied)
        for _ in 0..<3 { _ = try await card.verify("000000") }
        #expect(try await card.send(PIV.Ins.reset).status == .conditionsNotSatisfied)
        for _ in 0..<3 {
            _ = try await card.send(PIV.Ins.resetRetryCounter, p2: 0x80, [UInt8](repeating: 0xFF, count: 16))
        }
        #expect(try await card.send(PIV.Ins.reset).status == .ok)
        #expect(try await card.verify().status == .ok)
        #expect(try await card.send(PIV.Ins.getMetadata, p2: 0x9A).status == .referencedDataNotFound)
        #expect(try await card.getData(PIV.ObjectID.chuid).status == .fileNotFound)
        #expect(try await card.metadata(0x9B)[0x05] == [1])
        // The attestation key survives a reset.
        #expect(try await card.metadata(PIV.Slot.attestation.rawValue) == attestation)
    }

    @Test func setPINRetriesNeedsTheManagementKeyAndThePIN() async throws {
        let card = try await PIVCard()
        #expect(try await card.send(PIV.Ins.setPINRetries, p1: 5, p2: 4).status == .securityConditionNotSatisfied)
        #expect(try await card.authenticate(.aes192) == .ok)
        #expect(try await card.send(PIV.Ins.setPINRetries, p1: 5, p2: 4).status == .securityConditionNotSatisfied)
        _ = try await card.send(PIV.Ins.changeReference, p2: 0x80, PIVCard.padded("123456") + PIVCard.padded("777777"))
        #expect(try await card.verify("777777").status == .ok)
        #expect(try await card.send(PIV.Ins.setPINRetries, p1: 5, p2: 4).status == .ok)
        #expect(try await card.metadata(0x80)[0x06] == [5, 5])
        #expect(try await card.metadata(0x81)[0x06] == [4, 4])
        // The PIN is the default again.
        #expect(try await card.metadata(0x80)[0x05] == [1])
        #expect(try await card.verify("777777").status.rawValue == 0x63C4)
    }
}

@Suite struct PIVManagementKeyTests {
    @Test func defaultKeyIs3DESBefore57AndAES192From57() async throws {
        let old = try await PIVCard(state: .yubiKey5NFC(version: Version(5, 4, 3)))
        #expect(try await old.metadata(0x9B) == [0x01: [0x03], 0x02: [0x00, 0x01], 0x05: [0x01]])
        #expect(try await old.authenticate(.aes192) == .incorrectParameters)
        #expect(try await old.authenticate(.tripleDES) == .ok)
        let new = try await PIVCard()
        #expect(try await new.metadata(0x9B)[0x01] == [0x0A])
        #expect(try await new.authenticate(.tripleDES) == .incorrectParameters)
        #expect(try await new.authenticate(.aes192) == .ok)
    }

    @Test func aWrongKeyIsRefused() async throws {
        let card = try await PIVCard()
        let denied = StatusWord.securityConditionNotSatisfied
        #expect(try await card.authenticate(.aes192, key: [UInt8](repeating: 7, count: 24)) == denied)
        #expect(try await card.putData(PIV.ObjectID.chuid, [1]).status == .securityConditionNotSatisfied)
        // A returned witness with no witness asked for is refused as well.
        let zeros = [UInt8](repeating: 0, count: 16)
        let template = TLV(0x7C, TLV(0x80, zeros).encoded + TLV(0x81, zeros).encoded)
        #expect(try await card.send(PIV.Ins.authenticate, p1: 0x0A, p2: 0x9B, template.encoded).status == denied)
    }

    @Test func singleAuthentication() async throws {
        let card = try await PIVCard()
        let ask = TLV(0x7C, TLV(0x81, []).encoded).encoded
        let r = try await card.send(PIV.Ins.authenticate, p1: 0x0A, p2: 0x9B, ask)
        let challenge = try #require(try TLV.parseAll(r.data).first?.children().value(for: 0x81))
        #expect(challenge.count == 16)
        let key = SecretBytes(PIV.defaultManagementKey)
        let answer = try BlockCipher.encrypt(PIV.Algorithm.aes192, key: key, block: challenge)
        let reply = TLV(0x7C, TLV(0x82, answer).encoded).encoded
        #expect(try await card.send(PIV.Ins.authenticate, p1: 0x0A, p2: 0x9B, reply).status == .ok)
        #expect(try await card.putData(PIV.ObjectID.chuid, [1]).status == .ok)
        // The same answer again: the challenge was used up.
        let again = try await card.send(PIV.Ins.authenticate, p1: 0x0A, p2: 0x9B, reply)
        #expect(again.status == .securityConditionNotSatisfied)
    }

    @Test func setManagementKey() async throws {
        let card = try await PIVCard()
        let newKey = [UInt8](0..<32)
        let set = [PIV.Algorithm.aes256.rawValue] + TLV(0x9B, newKey).encoded
        let denied = StatusWord.securityConditionNotSatisfied
        #expect(try await card.send(PIV.Ins.setManagementKey, p1: 0xFF, p2: 0xFE, set).status == denied)
        #expect(try await card.authenticate(.aes192) == .ok)
        // A key of the wrong length for its algorithm.
        let short = [PIV.Algorithm.aes256.rawValue] + TLV(0x9B, Array(newKey.prefix(24))).encoded
        #expect(try await card.send(PIV.Ins.setManagementKey, p1: 0xFF, p2: 0xFF, short).status == .incorrectParameters)
        #expect(try await card.send(PIV.Ins.setManagementKey, p1: 0xFF, p2: 0xFE, set).status == .ok)
        // Touch required (02), not the default.
        #expect(try await card.metadata(0x9B) == [0x01: [0x0C], 0x02: [0x00, 0x02], 0x05: [0x00]])
        try await card.select()
        #expect(try await card.authenticate(.aes256, key: [UInt8](repeating: 1, count: 32)) == denied)
        #expect(try await card.authenticate(.aes256, key: newKey) == .ok)
        // Before 5.4 only 3DES keys.
        let old = try await PIVCard(state: .yubiKey5NFC(version: Version(5, 3, 0)))
        #expect(try await old.authenticate(.tripleDES) == .ok)
        #expect(try await old.send(PIV.Ins.setManagementKey, p1: 0xFF, p2: 0xFF, set).status == .incorrectParameters)
    }
}

@Suite struct PIVObjectTests {
    @Test func putAndGetData() async throws {
        let card = try await PIVCard()
        #expect(try await card.getData(PIV.ObjectID.chuid).status == .fileNotFound)
        #expect(try await card.authenticate(.aes192) == .ok)
        let long = (0..<1200).map { UInt8(truncatingIfNeeded: $0) }
        #expect(try await card.putData(PIV.ObjectID.chuid, long).status == .ok)
        let r = try await card.getData(PIV.ObjectID.chuid)
        #expect(r.status == .ok && r.data == TLV(0x53, long).encoded)
        // The YubiKey's own objects (5FFFxx) too; an empty value deletes.
        #expect(try await card.putData([0x5F, 0xFF, 0x00], [0x80, 0x00]).status == .ok)
        #expect(try await card.getData([0x5F, 0xFF, 0x00]).data == [0x53, 0x02, 0x80, 0x00])
        #expect(try await card.putData(PIV.ObjectID.chuid, []).status == .ok)
        #expect(try await card.getData(PIV.ObjectID.chuid).status == .fileNotFound)
        // Not an object, and too big.
        #expect(try await card.getData([0x12, 0x34]).status == .incorrectParameters)
        #expect(try await card.putData(PIV.ObjectID.chuid, [UInt8](repeating: 1, count: 3100)).status == .noSpace)
    }

    @Test func printedInformationNeedsThePIN() async throws {
        let card = try await PIVCard()
        #expect(try await card.authenticate(.aes192) == .ok)
        #expect(try await card.putData(PIV.ObjectID.printedInformation, [0x88, 0x00]).status == .ok)
        #expect(try await card.getData(PIV.ObjectID.printedInformation).status == .securityConditionNotSatisfied)
        #expect(try await card.verify().status == .ok)
        #expect(try await card.getData(PIV.ObjectID.printedInformation).data == [0x53, 0x02, 0x88, 0x00])
    }

    @Test func discoveryObjectIsBuiltIn() async throws {
        let card = try await PIVCard()
        let r = try await card.getData([0x7E])
        #expect(r.data == pivHex("7E 12 4F 0B A0 00 00 03 08 00 00 10 00 01 00 5F 2F 02 40 00"))
        #expect(try await card.authenticate(.aes192) == .ok)
        #expect(try await card.putData([0x7E], [0x01]).status == .incorrectParameters)
    }

    @Test func metadataNeedsFirmware53() async throws {
        let old = try await PIVCard(state: .yubiKey5NFC(version: Version(5, 2, 7)))
        #expect(try await old.send(PIV.Ins.getMetadata, p2: 0x80).status == .invalidInstruction)
        let card = try await PIVCard()
        #expect(try await card.metadata(0x80) == [0x01: [0xFF], 0x02: [0x00, 0x00], 0x05: [0x01], 0x06: [3, 3]])
        // No biometrics on a YubiKey 5, and nothing in an empty slot.
        #expect(try await card.send(PIV.Ins.getMetadata, p2: 0x96).status == .referencedDataNotFound)
        #expect(try await card.send(PIV.Ins.getMetadata, p2: 0x9C).status == .referencedDataNotFound)
    }
}
