/// The numbers of authenticatorBioEnrollment (CTAP 2.1 section 6.7, or the preview command 0x40 of keys
/// that announce userVerificationMgmtPreview): fingerprint templates enrolled sample by sample, listed,
/// named and removed.
extension CTAP2 {
    public enum BioEnrollment {
        /// The modality this client speaks: fingerprints.
        public static let fingerprintModality = 0x01

        /// The keys of the parameter map.
        public enum Key {
            public static let modality = 0x01
            public static let subcommand = 0x02
            public static let subcommandParams = 0x03
            public static let pinUVAuthProtocol = 0x04
            public static let pinUVAuthParam = 0x05
            public static let getModality = 0x06
        }

        /// The fingerprint subcommands.
        public enum Subcommand {
            public static let enrollBegin = 0x01
            public static let enrollCaptureNextSample = 0x02
            public static let cancelCurrentEnrollment = 0x03
            public static let enumerateEnrollments = 0x04
            public static let setFriendlyName = 0x05
            public static let removeEnrollment = 0x06
            public static let getFingerprintSensorInfo = 0x07
        }

        /// The keys of the subcommand parameters' map.
        public enum SubcommandKey {
            public static let templateID = 0x01
            public static let templateFriendlyName = 0x02
            public static let timeoutMilliseconds = 0x03
        }

        /// The keys of the answers.
        public enum ResponseKey {
            public static let modality = 0x01
            public static let fingerprintKind = 0x02
            public static let maxCaptureSamplesRequiredForEnroll = 0x03
            public static let templateID = 0x04
            public static let lastEnrollSampleStatus = 0x05
            public static let remainingSamples = 0x06
            public static let templateInfos = 0x07
            public static let maxTemplateFriendlyName = 0x08
        }

        /// The keys of one entry of templateInfos.
        public enum TemplateInfoKey {
            public static let templateID = 0x01
            public static let templateFriendlyName = 0x02
        }

        /// What pinUvAuthParam authenticates (section 6.7.2): the modality, the subcommand, and the subcommand
        /// parameters as they are encoded in the request, if any.
        public static func authenticatedMessage(modality: Int, subcommand: Int, params: CBOR?) -> [UInt8] {
            [UInt8(truncatingIfNeeded: modality), UInt8(truncatingIfNeeded: subcommand)] + (params?.encoded ?? [])
        }

        /// How one captured sample went (lastEnrollSampleStatus, section 6.7.1). Only a good sample counts
        /// towards the template.
        public struct SampleStatus: RawRepresentable, Hashable, Sendable {
            public let rawValue: UInt8
            public init(rawValue: UInt8) { self.rawValue = rawValue }

            public static let good = SampleStatus(rawValue: 0x00)
            public static let tooHigh = SampleStatus(rawValue: 0x01)
            public static let tooLow = SampleStatus(rawValue: 0x02)
            public static let tooLeft = SampleStatus(rawValue: 0x03)
            public static let tooRight = SampleStatus(rawValue: 0x04)
            public static let tooFast = SampleStatus(rawValue: 0x05)
            public static let tooSlow = SampleStatus(rawValue: 0x06)
            public static let poorQuality = SampleStatus(rawValue: 0x07)
            public static let tooSkewed = SampleStatus(rawValue: 0x08)
            public static let tooShort = SampleStatus(rawValue: 0x09)
            public static let mergeFailure = SampleStatus(rawValue: 0x0A)
            public static let exists = SampleStatus(rawValue: 0x0B)
            /// 0x0C is not given out.
            public static let noUserActivity = SampleStatus(rawValue: 0x0D)
            public static let noUserPresenceTransition = SampleStatus(rawValue: 0x0E)

            /// The statuses the specification names, in the order of their numbers.
            public static let known: [SampleStatus] = [
                .good, .tooHigh, .tooLow, .tooLeft, .tooRight, .tooFast,
                .tooSlow, .poorQuality, .tooSkewed, .tooShort,
                .mergeFailure, .exists, .noUserActivity,
                .noUserPresenceTransition,
            ]

            /// A short name (the string tables' key part, and what `virtual-key serve --bio-samples` takes);
            /// nil for a number the specification does not name.
            public var name: String? {
                guard let i = SampleStatus.known.firstIndex(of: self) else { return nil }
                return [
                    "good", "too-high", "too-low", "too-left", "too-right", "too-fast", "too-slow",
                    "poor-quality", "too-skewed", "too-short", "merge-failure", "exists", "no-user-activity",
                    "no-up-transition",
                ][i]
            }

            /// The status named `name` (see `name`).
            public init?(name: String) {
                guard let s = SampleStatus.known.first(where: { $0.name == name }) else { return nil }
                self = s
            }
        }
    }
}

/// Fingerprint enrollment (authenticatorBioEnrollment): every subcommand but getFingerprintSensorInfo and
/// cancelCurrentEnrollment wants a token with the be permission (`verifyPIN(_:permissions: [.bioEnrollment])`
/// first). The key picks the command: 0x09 when getInfo has the bioEnroll option, the preview 0x40 when it has
/// userVerificationMgmtPreview only.
extension CTAP2Session {
    public typealias SampleStatus = CTAP2.BioEnrollment.SampleStatus

    /// What getFingerprintSensorInfo tells (each nil when the key leaves it out).
    public struct FingerprintSensorInfo: Sendable, Equatable {
        /// 1: a sensor the finger is laid on, 2: one it is swiped over.
        public var kind: Int?
        /// The good samples a new template needs (maxCaptureSamplesRequiredForEnroll).
        public var samplesRequired: Int?
        /// The longest friendly name, in bytes of UTF-8 (maxTemplateFriendlyName).
        public var maxNameLength: Int?

        public init(kind: Int?, samplesRequired: Int?, maxNameLength: Int?) {
            self.kind = kind
            self.samplesRequired = samplesRequired
            self.maxNameLength = maxNameLength
        }
    }

    /// One step of an enrollment: the new template's ID, how the sample went, and how many good samples are
    /// still needed (0: the template is enrolled).
    public struct EnrollmentStep: Sendable, Equatable {
        public var templateID: [UInt8]
        public var status: SampleStatus
        public var remaining: Int

        public init(templateID: [UInt8], status: SampleStatus, remaining: Int) {
            self.templateID = templateID
            self.status = status
            self.remaining = remaining
        }
    }

    /// An enrolled fingerprint: its template ID and friendly name (nil when it has none).
    public struct Fingerprint: Sendable, Hashable {
        public var templateID: [UInt8]
        public var name: String?

        public init(templateID: [UInt8], name: String?) {
            self.templateID = templateID
            self.name = name
        }
    }

    typealias BioSub = CTAP2.BioEnrollment.Subcommand
    typealias BioSubKey = CTAP2.BioEnrollment.SubcommandKey
    typealias BioAnswer = CTAP2.BioEnrollment.ResponseKey

    private var bioCommand: CTAP2.Command {
        info.options[CTAP2.Option.bioEnrollment] != nil ? .bioEnrollment : .bioEnrollmentPreview
    }

    /// Sends one fingerprint subcommand, with pinUvAuthParam when `authenticated`.
    private func bio(_ sub: Int, _ subParams: CTAPParameters? = nil, authenticated: Bool = true) async throws -> CBOR? {
        guard info.supportsBioEnrollment else { throw FIDOSessionError.notSupported(.bioEnrollment) }
        typealias Key = CTAP2.BioEnrollment.Key
        let modality = CTAP2.BioEnrollment.fingerprintModality
        let encodedParams = subParams?.cbor
        var params: CTAPParameters = [Key.modality: CBOR(modality), Key.subcommand: CBOR(sub)]
        if let encodedParams { params[Key.subcommandParams] = encodedParams }
        if authenticated {
            let t = try requireToken()
            let message = CTAP2.BioEnrollment.authenticatedMessage(
                modality: modality, subcommand: sub,
                params: encodedParams)
            params[Key.pinUVAuthProtocol] = CBOR(t.protocolVersion.version)
            params[Key.pinUVAuthParam] = .bytes(t.protocolVersion.authenticate(key: t.value, message))
        }
        return try await send(bioCommand, params)
    }

    /// getFingerprintSensorInfo (needs no token).
    public func fingerprintSensorInfo() async throws -> FingerprintSensorInfo {
        let r = try await bio(BioSub.getFingerprintSensorInfo, authenticated: false)
        return FingerprintSensorInfo(
            kind: r?[BioAnswer.fingerprintKind]?.int,
            samplesRequired: r?[BioAnswer.maxCaptureSamplesRequiredForEnroll]?.int,
            maxNameLength: r?[BioAnswer.maxTemplateFriendlyName]?.int)
    }

    /// enrollBegin: starts a new template and waits (up to `timeoutMilliseconds`, or as long as the key
    /// waits) for the first sample.
    public func enrollBegin(timeoutMilliseconds: Int? = nil) async throws -> EnrollmentStep {
        var p = CTAPParameters()
        if let timeoutMilliseconds { p[BioSubKey.timeoutMilliseconds] = CBOR(timeoutMilliseconds) }
        let r = try await bio(BioSub.enrollBegin, p.isEmpty ? nil : p)
        guard let id = r?[BioAnswer.templateID]?.bytes else {
            throw FIDOSessionError.malformed(Malformation(.enrollmentStep, .incomplete))
        }
        return try CTAP2Session.enrollmentStep(r, templateID: id)
    }

    /// enrollCaptureNextSample: waits for the next sample of the template enrollBegin started.
    public func enrollCaptureNextSample(templateID: [UInt8], timeoutMilliseconds: Int? = nil) async throws
        -> EnrollmentStep
    {
        var p: CTAPParameters = [BioSubKey.templateID: .bytes(templateID)]
        if let timeoutMilliseconds { p[BioSubKey.timeoutMilliseconds] = CBOR(timeoutMilliseconds) }
        return try CTAP2Session.enrollmentStep(
            try await bio(BioSub.enrollCaptureNextSample, p),
            templateID: templateID)
    }

    static func enrollmentStep(_ r: CBOR?, templateID: [UInt8]) throws -> EnrollmentStep {
        guard let status = r?[BioAnswer.lastEnrollSampleStatus]?.int, (0...255).contains(status),
            let remaining = r?[BioAnswer.remainingSamples]?.int, remaining >= 0
        else {
            throw FIDOSessionError.malformed(Malformation(.enrollmentStep, .incomplete))
        }
        return EnrollmentStep(
            templateID: templateID, status: SampleStatus(rawValue: UInt8(status)),
            remaining: remaining)
    }

    /// cancelCurrentEnrollment: drops the template being enrolled (needs no token).
    public func cancelCurrentEnrollment() async throws {
        _ = try await bio(BioSub.cancelCurrentEnrollment, authenticated: false)
    }

    /// enumerateEnrollments: the enrolled fingerprints (none: the key answers CTAP2_ERR_INVALID_OPTION).
    public func fingerprints() async throws -> [Fingerprint] {
        let r: CBOR?
        do {
            r = try await bio(BioSub.enumerateEnrollments)
        } catch let e as CTAPError where e.code == CTAPError.invalidOption {
            return []
        }
        guard let infos = r?[BioAnswer.templateInfos]?.array else {
            throw FIDOSessionError.malformed(Malformation(.fingerprintEntry, .missing))
        }
        typealias Info = CTAP2.BioEnrollment.TemplateInfoKey
        return try infos.map { entry in
            guard let id = entry[Info.templateID]?.bytes else {
                throw FIDOSessionError.malformed(Malformation(.fingerprintEntry, .incomplete))
            }
            let name = entry[Info.templateFriendlyName]?.string
            return Fingerprint(templateID: id, name: name?.isEmpty == false ? name : nil)
        }
    }

    /// setFriendlyName: the template's new name, at most `maxNameLength` bytes of UTF-8 when the key says (an
    /// unknown template: `noSuchFingerprint`).
    public func setFingerprintName(templateID: [UInt8], name: String, maxNameLength: Int? = nil) async throws {
        if let maxNameLength, name.utf8.count > maxNameLength {
            throw FIDOSessionError.fingerprintNameTooLong(maximum: maxNameLength, bytes: name.utf8.count)
        }
        do {
            _ = try await bio(
                BioSub.setFriendlyName,
                [
                    BioSubKey.templateID: .bytes(templateID),
                    BioSubKey.templateFriendlyName: .text(name),
                ])
        } catch let e as CTAPError where e.code == CTAPError.invalidOption {
            throw FIDOSessionError.noSuchFingerprint(templateID: templateID)
        }
    }

    /// removeEnrollment: deletes the template (an unknown one: `noSuchFingerprint`).
    public func removeFingerprint(templateID: [UInt8]) async throws {
        do {
            _ = try await bio(BioSub.removeEnrollment, [BioSubKey.templateID: .bytes(templateID)])
        } catch let e as CTAPError where e.code == CTAPError.invalidOption {
            throw FIDOSessionError.noSuchFingerprint(templateID: templateID)
        }
    }
}
