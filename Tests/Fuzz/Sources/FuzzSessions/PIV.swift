import KeyKit
import Synchronization
import VirtualKey

/// A PIV card whose answers come from the fuzzer's input, one per command (as `FuzzSmartCard`); once they are
/// used up the card is gone.
///
/// Kind bit 1 of an answer to the second step of management key authentication (GENERAL AUTHENTICATE of 9B
/// with a challenge) makes the card prove it holds the default management key, as a key does: the answer is
/// then 7C { 82 the challenge encrypted } followed by the answer's bytes (a status word). Without it the
/// fuzzer could never get past the authentication, whose challenge is random.
public final class FuzzPIVCard: SmartCardConnection {
    public let answers: FuzzAnswers
    public let name = "Fuzz PIV Card"
    public var atr: [UInt8] { VirtualKey.atr }

    public init(answers: FuzzAnswers) {
        self.answers = answers
    }

    public func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        guard let answer = answers.next() else { throw SmartCardError.cardRemoved }
        if answer.kind & 2 != 0, let proof = FuzzPIVCard.managementKeyProof(command: command) {
            return proof + answer.bytes
        }
        return answer.bytes
    }

    public func close() async {}

    /// 7C { 82 challenge encrypted with the default management key } for the second step of management key
    /// authentication (the algorithm is P1's), nil for any other command.
    static func managementKeyProof(command: [UInt8]) -> [UInt8]? {
        guard let apdu = try? APDU(parsing: command), apdu.ins == PIV.Ins.authenticate,
            apdu.p2 == PIV.Reference.managementKey, let algorithm = PIV.Algorithm(rawValue: apdu.p1),
            let template = (try? TLV.parseAll(apdu.data))?.value(for: PIV.Tag.dynamicAuthentication),
            let challenge = (try? TLV.parseAll(template))?.value(for: PIV.Tag.challenge),
            let encrypted = try? BlockCipher.encrypt(
                algorithm, key: SecretBytes(PIV.defaultManagementKey),
                block: challenge)
        else { return nil }
        return TLV(PIV.Tag.dynamicAuthentication, TLV(PIV.Tag.response, encrypted).encoded).encoded
    }
}

/// Passes commands to a real card (the virtual key) and logs its answers in the layout `FuzzPIVCard` reads: a
/// successful answer to the second step of management key authentication is logged as kind 2 with its status
/// word only, and `FuzzPIVCard` makes the proof again for the challenge of the replay.
public final class RecordingPIVCard: SmartCardConnection {
    public let card: any SmartCardConnection
    public let log = AnswerLog()
    public var atr: [UInt8] { card.atr }
    public var name: String { card.name }

    public init(card: any SmartCardConnection) {
        self.card = card
    }

    public func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        let response = try await card.transmit(command)
        if let proof = FuzzPIVCard.managementKeyProof(command: command), response == proof + [0x90, 0x00] {
            log.append(FuzzAnswer(kind: 2, [0x90, 0x00]))
        } else {
            log.append(FuzzAnswer(kind: 0, response))
        }
        return response
    }

    public func close() async {
        await card.close()
    }
}
