@testable import KeyKit
import Synchronization
import Testing

/// A CTAP2 key that records what it is sent: getInfo answers `info`; the bioEnrollment commands answer
/// `answer` (success without data when nil).
private final class RecordingBioKey: FIDOConnection, Sendable {
    let name = "recording"
    let info: CBOR
    let answer: CBOR?
    private let log = Mutex<[[UInt8]]>([])

    init(info: CBOR, answer: CBOR? = nil) {
        self.info = info
        self.answer = answer
    }

    var requests: [[UInt8]] { log.withLock { $0 } }

    func sendCBOR(_ request: [UInt8], progress: (@Sendable (FIDOProgress) -> Void)?) async throws -> [UInt8] {
        log.withLock { $0.append(request) }
        switch CTAP2.Command(rawValue: request.first ?? 0) {
        case .getInfo: return [0x00] + info.encoded
        case .bioEnrollment, .bioEnrollmentPreview: return [0x00] + (answer?.encoded ?? [])
        default: return [CTAPError.invalidCommand]
        }
    }

    func sendU2F(_ apdu: [UInt8]) async throws -> [UInt8] { [0x6D, 0x00] }
    func cancel() async {}
    func close() async {}
}

private func info(_ options: [CBOR: CBOR]) -> CBOR {
    [1: ["FIDO_2_1"], 3: .bytes([UInt8](repeating: 0x2F, count: 16)), 4: .map(options), 6: [2]]
}

@Suite("FIDO: authenticatorBioEnrollment as CTAP 2.1 encodes it")
struct FIDOBioEnrollmentTests {
    @Test func theAuthenticatedMessageIsModalitySubcommandAndParameters() {
        typealias Bio = CTAP2.BioEnrollment
        let params: CBOR = [
            CBOR(Bio.SubcommandKey.templateID): .bytes([0x01, 0x02]),
            CBOR(Bio.SubcommandKey.templateFriendlyName): "a",
        ]
        #expect(
            Bio.authenticatedMessage(
                modality: Bio.fingerprintModality, subcommand: Bio.Subcommand.setFriendlyName,
                params: params)
                == [0x01, 0x05, 0xA2, 0x01, 0x42, 0x01, 0x02, 0x02, 0x61, 0x61])
        #expect(
            Bio.authenticatedMessage(modality: 1, subcommand: Bio.Subcommand.enumerateEnrollments, params: nil)
                == [0x01, 0x04])
    }

    @Test func sampleStatusesHaveTheSpecificationsNumbersAndNames() {
        typealias Status = CTAP2.BioEnrollment.SampleStatus
        #expect(Status.known.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14])
        for s in Status.known { #expect(Status(name: s.name ?? "") == s) }
        #expect(Status.tooFast.name == "too-fast" && Status(rawValue: 0x0C).name == nil)
        #expect(Status(name: "sideways") == nil)
    }

    @Test func theCommandFollowsGetInfoAndAKeyWithoutASensorIsRefusedBeforeSending() async throws {
        let sensor: CBOR = [1: 1, 2: 1, 3: 5, 8: 15]
        let full = RecordingBioKey(info: info(["bioEnroll": false, "clientPin": true]), answer: sensor)
        let s = try await CTAP2Session.make(connection: full)
        #expect(
            try await s.fingerprintSensorInfo()
                == CTAP2Session.FingerprintSensorInfo(kind: 1, samplesRequired: 5, maxNameLength: 15))
        let sent = full.requests.last ?? []
        #expect(sent.first == CTAP2.Command.bioEnrollment.rawValue)
        // No token for getFingerprintSensorInfo: modality and subcommand only.
        #expect(try CBOR.decode(Array(sent.dropFirst())) == [1: 1, 2: 7])

        let preview = RecordingBioKey(info: info(["userVerificationMgmtPreview": true]), answer: sensor)
        _ = try await CTAP2Session.make(connection: preview).cancelCurrentEnrollment()
        #expect(preview.requests.last?.first == CTAP2.Command.bioEnrollmentPreview.rawValue)

        let none = RecordingBioKey(info: info(["clientPin": true]))
        let n = try await CTAP2Session.make(connection: none)
        await #expect(throws: FIDOSessionError.notSupported(.bioEnrollment)) { try await n.fingerprints() }
        #expect(none.requests.count == 1)
    }

    @Test func aNameLongerThanTheKeyTakesIsRefusedBeforeSending() async throws {
        let key = RecordingBioKey(info: info(["bioEnroll": true]))
        let s = try await CTAP2Session.make(connection: key)
        await #expect(throws: FIDOSessionError.fingerprintNameTooLong(maximum: 4, bytes: 6)) {
            try await s.setFingerprintName(templateID: [1], name: "thümb", maxNameLength: 4)
        }
        #expect(key.requests.count == 1)
    }

    @Test func anEnrollmentStepWithoutItsFieldsIsMalformed() throws {
        #expect(throws: FIDOSessionError.malformed(Malformation(.enrollmentStep, .incomplete))) {
            _ = try CTAP2Session.enrollmentStep([5: 0], templateID: [1])
        }
    }
}
