import FoundationEssentials

/// What `ykterm piv info` and the PIV tab show of a key's PIV application, read in one go: version, serial,
/// PIN and PUK tries, the management key, and each slot's key and certificate. The command line and the TUI
/// both read it here, so they cannot tell different stories.
public struct PIVOverview: Sendable {
    public var version: Version
    /// nil before firmware 5 (no GET SERIAL).
    public var serial: UInt32?
    public var pinRetries: Int
    /// PIN and PUK metadata (firmware 5.3 and later): total tries and whether each is the default.
    public var pin: PIVPINMetadata?
    public var puk: PIVPINMetadata?
    /// The management key's algorithm, touch policy and whether it is the default (5.3 and later).
    public var managementKey: PIVManagementKeyMetadata?
    /// The slots that hold a key or a certificate, in slot order.
    public var slots: [Slot]

    public struct Slot: Sendable {
        public var slot: PIV.Slot
        /// The key's metadata (5.3 and later); nil without a key, or on older firmware.
        public var key: PIVSlotMetadata?
        public var certificate: X509Certificate?
        /// The certificate object holds something that is not a certificate (the reason).
        public var certificateProblem: PIVError?

        /// The key's algorithm: the metadata's, else the certificate's.
        public var algorithm: PIV.Algorithm? {
            key?.algorithm
                ?? certificate?.subjectPublicKeyInfo.flatMap { try? AsymmetricPublicKey(spki: $0) }?.pivAlgorithm
        }

        /// Whether the certificate's public key is the slot's key (nil when either is unknown).
        public var certificateMatchesKey: Bool? {
            guard let key, let spki = certificate?.subjectPublicKeyInfo,
                let certificateKey = try? AsymmetricPublicKey(spki: spki)
            else { return nil }
            return certificateKey == key.publicKey
        }
    }

    /// Reads everything. Slots without metadata (firmware before 5.3) are known by their certificates only.
    public static func read(_ session: PIVSession) async throws -> PIVOverview {
        let version = session.version
        let serial = PIVFeature.serial.isSupported(by: version) ? try await session.serial() : nil
        let hasMetadata = PIVFeature.metadata.isSupported(by: version)
        let pin = hasMetadata ? try await session.pinMetadata() : nil
        let puk = hasMetadata ? try await session.pukMetadata() : nil
        let managementKey = hasMetadata ? try await session.managementKeyMetadata() : nil
        let retries = if let pin { pin.retriesLeft } else { try await session.pinRetries() }
        var slots = [Slot]()
        for slot in PIV.Slot.all {
            var entry = Slot(slot: slot)
            if hasMetadata {
                do { entry.key = try await session.slotMetadata(slot) } catch PIVError.noKeyInSlot {}
            }
            do {
                entry.certificate = try await session.certificate(in: slot)
            } catch let e as PIVError {
                entry.certificateProblem = e
            }
            if entry.key != nil || entry.certificate != nil || entry.certificateProblem != nil { slots.append(entry) }
        }
        return PIVOverview(
            version: version, serial: serial, pinRetries: retries, pin: pin, puk: puk,
            managementKey: managementKey, slots: slots)
    }

    /// The slot's entry, if it holds anything.
    public func slot(_ slot: PIV.Slot) -> Slot? { slots.first { $0.slot == slot } }
}

extension PIVOverview.Slot {
    public init(slot: PIV.Slot) {
        self.slot = slot
    }
}

/// The mobile SDK's PC/SC demo, as `ykterm piv verify` and the PIV tab's `v` run it: the slot's key signs a
/// fresh challenge and the slot certificate's public key verifies the signature.
public enum PIVSignatureCheck {
    /// What the check found.
    public enum Outcome: Sendable, Equatable {
        /// The signature verified with the certificate's key (the algorithm that signed).
        case verified(PIV.Algorithm)
        /// The slot has no certificate to verify with.
        case noCertificate
        /// The certificate's key is of a kind a PIV key cannot have.
        case unsupportedCertificateKey
        /// The signature does not verify with the certificate's key: the certificate is not the key's.
        case mismatch(PIV.Algorithm)
        /// The certificate's key is of another algorithm than the slot's key: it cannot be the key's.
        case differentAlgorithm(certificate: PIV.Algorithm, key: PIV.Algorithm)
    }

    /// Whether the slot's key wants a touch for each signature (from its metadata; false when unknown).
    public static func needsTouch(_ key: PIVSlotMetadata?) -> Bool {
        guard let key else { return false }
        return key.touchPolicy == .always || key.touchPolicy == .cached
    }

    /// Verifies `pin` (when given), signs 32 random bytes with the key in `slot` and checks the signature with
    /// the public key of the slot's certificate. `beforeSigning` runs just before the key is asked to sign
    /// (where a face says "Touch your key" when the slot's policy asks for it).
    public static func run(
        _ session: PIVSession, slot: PIV.Slot, pin: SecretBytes?,
        beforeSigning: @Sendable () async -> Void = {}
    ) async throws -> Outcome {
        guard let certificate = try await session.certificate(in: slot) else { return .noCertificate }
        guard let spki = certificate.subjectPublicKeyInfo, let certificateKey = try? AsymmetricPublicKey(spki: spki),
            let algorithm = certificateKey.pivAlgorithm, certificateKey.type != .x25519
        else {
            return .unsupportedCertificateKey
        }
        let keyAlgorithm = try await session.keyAlgorithm(in: slot)
        guard keyAlgorithm == algorithm else { return .differentAlgorithm(certificate: algorithm, key: keyAlgorithm) }
        if let pin { try await session.verifyPIN(pin) }
        let challenge = Crypto.random(32)
        await beforeSigning()
        let signature = try await session.sign(challenge, in: slot, algorithm: algorithm)
        let digest: SignatureDigest = .sha256
        return certificateKey.verify(signature: signature, message: challenge, digest: digest, padding: .pkcs1)
            ? .verified(algorithm) : .mismatch(algorithm)
    }
}

extension PIVSignatureCheck {
    /// Whether the slot's key wants the PIN before it signs: its PIN policy, or the slot's default (the PIN for
    /// 9A, 9C, 9D and the retired slots, never for 9E) when the policy is the default or unknown.
    public static func needsPIN(_ slot: PIV.Slot, pinPolicy: PIV.PINPolicy?) -> Bool {
        switch pinPolicy {
        case .never?: return false
        case .once?, .always?, .matchOnce?, .matchAlways?: return true
        case .default?, nil: return slot != .cardAuthentication
        }
    }
}
