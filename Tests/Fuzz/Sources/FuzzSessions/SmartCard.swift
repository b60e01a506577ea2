import KeyKit
import Synchronization
import VirtualKey

/// A smart card whose answers (response APDUs: data and status word) come from the fuzzer's input, one per
/// command; once they are used up the card is gone (`SmartCardError.cardRemoved`).
///
/// Kind bit 0 of an answer to an OATH VALIDATE makes the card prove it knows the access key set with
/// `setOATHKey`, as a key does: the answer is then TLV 75 (HMAC-SHA1 of the command's challenge) followed by
/// the answer's bytes. Without it the fuzzer could never get past VALIDATE, whose challenge is random.
public final class FuzzSmartCard: SmartCardConnection {
    public let answers: FuzzAnswers
    public let name = "Fuzz Card"
    public var atr: [UInt8] { VirtualKey.atr }
    private let oathKey = Mutex<[UInt8]?>(nil)

    public init(answers: FuzzAnswers) {
        self.answers = answers
    }

    /// The OATH access key the card proves it knows.
    public func setOATHKey(_ key: [UInt8]?) {
        oathKey.withLock { $0 = key }
    }

    public func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        guard let answer = answers.next() else { throw SmartCardError.cardRemoved }
        if answer.kind & 1 != 0, let key = oathKey.withLock({ $0 }),
            let proof = FuzzSmartCard.validateProof(command: command, key: key)
        {
            return proof + answer.bytes
        }
        return answer.bytes
    }

    public func close() async {}

    /// TLV 75 with HMAC-SHA1(key, challenge) for an OATH VALIDATE command, nil for any other command.
    static func validateProof(command: [UInt8], key: [UInt8]) -> [UInt8]? {
        guard let apdu = try? APDU(parsing: command), apdu.ins == YKOATH.Ins.validate,
            let fields = try? TLV.parseAll(apdu.data, mode: .simple),
            let challenge = fields.value(for: YKOATH.Tag.challenge)
        else { return nil }
        return TLV(YKOATH.Tag.response, Crypto.hmac(.sha1, key: key, data: challenge)).encoded
    }
}

/// Passes commands to a real card (the virtual key) and logs its answers in the layout `FuzzSmartCard` reads.
/// The answer to an OATH VALIDATE that starts with the key's proof (TLV 75 of 20 bytes) is logged as kind 1
/// without the proof, which `FuzzSmartCard` computes again for the challenge of the replay.
public final class RecordingSmartCard: SmartCardConnection {
    public let card: any SmartCardConnection
    public let log = AnswerLog()
    public var atr: [UInt8] { card.atr }
    public var name: String { card.name }

    public init(card: any SmartCardConnection) {
        self.card = card
    }

    public func transmit(_ command: [UInt8]) async throws -> [UInt8] {
        let response = try await card.transmit(command)
        let isValidate = (try? APDU(parsing: command))?.ins == YKOATH.Ins.validate
        if isValidate, response.count >= 22, response[0] == UInt8(YKOATH.Tag.response), response[1] == 20 {
            log.append(FuzzAnswer(kind: 1, Array(response.dropFirst(22))))
        } else {
            log.append(FuzzAnswer(kind: 0, response))
        }
        return response
    }

    public func close() async {
        await card.close()
    }
}
