import KeyKit

/// authenticatorBioEnrollment (CTAP 2.1 section 6.7, and the preview command 0x40) as a YubiKey Bio has it,
/// for a key whose profile has a fingerprint sensor: fingerprint templates enrolled sample by sample, listed,
/// named and removed, kept in the key's state (the --state file) until a reset. The sensor is simulated: each
/// capture waits for the user as a touch does, then the sample's `sensorDelays` more, and reports the next status of
/// `bioSampleStatuses` (good once the sequence is used up). A capture cancelled while it waits (CTAPHID_CANCEL,
/// or NFCCTAP_GETRESPONSE with the cancel flag) is answered CTAP2_ERR_KEEPALIVE_CANCEL and counts nothing; the
/// enrollment stays open for the next capture until cancelCurrentEnrollment drops it. It matches no finger:
/// getInfo has no uv option.
extension FIDOAuthenticator {
    /// Good samples a template needs (getFingerprintSensorInfo's maxCaptureSamplesRequiredForEnroll).
    public static let samplesPerFingerprint = 5
    /// Fingerprints the key holds.
    public static let maxFingerprints = 5
    /// The longest friendly name, in bytes of UTF-8 (maxTemplateFriendlyName).
    public static let maxFingerprintNameLength = 15
    /// getInfo's uvModality of a fingerprint sensor (FIDO Registry, USER_VERIFY_FINGERPRINT_INTERNAL).
    static let fingerprintModality = 0x02

    /// The enrollment under way (power-cycle state): its template ID and the good samples it still needs.
    struct PendingEnrollment {
        var templateID: [UInt8]
        var remaining: Int
    }

    /// The getInfo options of a key with a sensor: bioEnroll (and the preview's name) true once a fingerprint
    /// is enrolled.
    static func bioOptions(_ fido: FIDOState) -> [CBOR: CBOR] {
        let enrolled = CBOR.bool(!fido.fingerprints.isEmpty)
        return [.text(CTAP2.Option.bioEnrollment): enrolled, .text(CTAP2.Option.bioEnrollmentPreview): enrolled]
    }

    func bioEnrollment(_ p: Fields, _ state: inout VirtualKeyState, _ presence: () -> Presence) throws(Failure)
        -> [UInt8]
    {
        guard profile.hasBioEnrollment else { throw .status(CTAPError.invalidCommand) }
        typealias Key = CTAP2.BioEnrollment.Key
        typealias Sub = CTAP2.BioEnrollment.Subcommand
        typealias SubKey = CTAP2.BioEnrollment.SubcommandKey
        typealias Answer = CTAP2.BioEnrollment.ResponseKey
        let fingerprint = CTAP2.BioEnrollment.fingerprintModality
        if try p.bool(Key.getModality) == true { return Self.ok([Answer.modality: CBOR(fingerprint)]) }
        guard let modality = try p.int(Key.modality), let sub = try p.int(Key.subcommand) else {
            throw .status(CTAPError.missingParameter)
        }
        guard modality == fingerprint else { throw .status(CTAPError.unsupportedOption) }
        let subParams = try p.map(Key.subcommandParams)

        switch sub {
        case Sub.getFingerprintSensorInfo:
            return Self.ok([
                Answer.modality: CBOR(fingerprint), Answer.fingerprintKind: 1,
                Answer.maxCaptureSamplesRequiredForEnroll: CBOR(Self.samplesPerFingerprint),
                Answer.maxTemplateFriendlyName: CBOR(Self.maxFingerprintNameLength),
            ])
        case Sub.cancelCurrentEnrollment:
            pendingEnrollment = nil
            return [CTAP2.ok]
        case Sub.enrollBegin, Sub.enrollCaptureNextSample, Sub.enumerateEnrollments, Sub.setFriendlyName,
            Sub.removeEnrollment:
            break
        default:
            throw .status(CTAPError.invalidSubcommand)
        }

        guard let auth = try p.bytes(Key.pinUVAuthParam) else { throw .status(CTAPError.pinRequired) }
        let pinProtocol = try requestProtocol(p, key: Key.pinUVAuthProtocol)
        let message = CTAP2.BioEnrollment.authenticatedMessage(
            modality: modality, subcommand: sub,
            params: p[Key.subcommandParams])
        try authorize(pinProtocol, auth, message, permission: .bioEnrollment, rpID: nil)

        switch sub {
        case Sub.enrollBegin:
            _ = try subParams?.int(SubKey.timeoutMilliseconds)
            guard state.fido.fingerprints.count < Self.maxFingerprints else {
                throw .status(CTAPError.fingerprintDatabaseFull)
            }
            var id: [UInt8]
            repeat { id = Crypto.random(2) } while state.fido.fingerprints.contains { $0.templateID == id }
            let enrollment = PendingEnrollment(templateID: id, remaining: Self.samplesPerFingerprint)
            let (status, remaining) = try capture(enrollment, &state, presence)
            return Self.ok([
                Answer.templateID: .bytes(id), Answer.lastEnrollSampleStatus: CBOR(Int(status.rawValue)),
                Answer.remainingSamples: CBOR(remaining),
            ])
        case Sub.enrollCaptureNextSample:
            guard let subParams, let id = try subParams.bytes(SubKey.templateID) else {
                throw .status(CTAPError.missingParameter)
            }
            _ = try subParams.int(SubKey.timeoutMilliseconds)
            guard let enrollment = pendingEnrollment, enrollment.templateID == id else {
                throw .status(CTAPError.invalidParameter)
            }
            let (status, remaining) = try capture(enrollment, &state, presence)
            return Self.ok([
                Answer.lastEnrollSampleStatus: CBOR(Int(status.rawValue)),
                Answer.remainingSamples: CBOR(remaining),
            ])
        case Sub.enumerateEnrollments:
            // No fingerprint: CTAP2_ERR_INVALID_OPTION, as section 6.7.6 says.
            guard !state.fido.fingerprints.isEmpty else { throw .status(CTAPError.invalidOption) }
            typealias Info = CTAP2.BioEnrollment.TemplateInfoKey
            let infos = state.fido.fingerprints.map { f -> CBOR in
                [CBOR(Info.templateID): .bytes(f.templateID), CBOR(Info.templateFriendlyName): .text(f.name ?? "")]
            }
            return Self.ok([Answer.templateInfos: .array(infos)])
        case Sub.setFriendlyName:
            guard let subParams, let id = try subParams.bytes(SubKey.templateID),
                let name = try subParams.text(SubKey.templateFriendlyName)
            else {
                throw .status(CTAPError.missingParameter)
            }
            guard name.utf8.count <= Self.maxFingerprintNameLength else { throw .status(CTAPError.invalidParameter) }
            guard let i = state.fido.fingerprints.firstIndex(where: { $0.templateID == id }) else {
                throw .status(CTAPError.invalidOption)
            }
            state.fido.fingerprints[i].name = name.isEmpty ? nil : name
            return [CTAP2.ok]
        default:  // removeEnrollment
            guard let subParams, let id = try subParams.bytes(SubKey.templateID) else {
                throw .status(CTAPError.missingParameter)
            }
            guard let i = state.fido.fingerprints.firstIndex(where: { $0.templateID == id }) else {
                throw .status(CTAPError.invalidOption)
            }
            state.fido.fingerprints.remove(at: i)
            return [CTAP2.ok]
        }
    }

    /// Whether `request` is a capture (enrollBegin or enrollCaptureNextSample), whose wait for the user includes
    /// the sensor's.
    func isFingerprintCapture(_ request: [UInt8]) -> Bool {
        guard profile.hasBioEnrollment, let command = request.first,
            command == CTAP2.Command.bioEnrollment.rawValue || command == CTAP2.Command.bioEnrollmentPreview.rawValue,
            let params = try? CBOR.decode(Array(request.dropFirst())).map,
            let sub = params[CBOR(CTAP2.BioEnrollment.Key.subcommand)]?.int
        else { return false }
        return sub == CTAP2.BioEnrollment.Subcommand.enrollBegin
            || sub == CTAP2.BioEnrollment.Subcommand.enrollCaptureNextSample
    }

    /// One sample for `enrollment`: waits for the finger (as for a touch) and the sensor, both in the
    /// transport's presence check (`userWait(for:)`); a good sample counts, and the last one stores the
    /// template. Nothing changes before the wait is over, nor when it is cancelled.
    func capture(
        _ enrollment: PendingEnrollment, _ state: inout VirtualKeyState,
        _ presence: () -> Presence
    ) throws(Failure) -> (CTAP2.BioEnrollment.SampleStatus, Int) {
        try collectPresence(presence)
        var enrollment = enrollment
        let status = nextSampleStatus < bioSampleStatuses.count ? bioSampleStatuses[nextSampleStatus] : .good
        nextSampleStatus += 1
        if status == .good { enrollment.remaining -= 1 }
        if enrollment.remaining == 0 {
            state.fido.fingerprints.append(FIDOState.Fingerprint(templateID: enrollment.templateID, name: nil))
            pendingEnrollment = nil
        } else {
            pendingEnrollment = enrollment
        }
        return (status, enrollment.remaining)
    }
}
