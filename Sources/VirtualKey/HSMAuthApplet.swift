import KeyKit

/// The YubiHSM Auth application as a YubiKey 5 answers it: up to 32 credentials (symmetric: K-ENC and K-MAC;
/// asymmetric, from firmware 5.6: a P-256 key imported or generated), each behind a 16-byte credential password
/// with 8 tries (the credential is deleted when they run out), a 16-byte management key with 8 tries (16 zero
/// bytes after a reset) for adding and deleting them, and the session keys of the YubiHSM 2's protocol:
/// SCP03's for symmetric credentials over the 16-byte context, SCP11's for asymmetric ones with the ephemeral
/// key of the GET CHALLENGE before (checking the YubiHSM 2's receipt). A credential that wants a touch waits
/// for the simulated one. Changing a credential's password needs firmware 5.8.
///
/// Status words follow ykman's reading of the YubiKey's: 63Cx for a wrong management key or credential
/// password (x tries left), 6983 for a label that is taken (PUT) or a credential that is not asymmetric (GET
/// PUBLIC KEY), 6A82 for a label that is not there, 6A84 when no room is left, 6A80 for bad data (and for an
/// asymmetric CALCULATE without its GET CHALLENGE), 6984 for a YubiHSM 2 receipt that does not check.
final class HSMAuthApplet: Applet {
    let aid = AID.hsmauth
    let capabilities: Capabilities = .hsmauth
    /// The button a credential that requires touch waits for.
    let button: SimulatedButton

    typealias Ins = HSMAuth.Ins
    typealias Tag = HSMAuth.Tag

    /// The ephemeral key of the last GET CHALLENGE of an asymmetric credential, and the credential's label;
    /// forgotten on power cycles and used once.
    private var ephemeral: (label: String, key: P256PrivateKey)?

    init(touchDelay: Double = 0.5) {
        button = SimulatedButton(delay: touchDelay)
    }

    func powerReset() {
        ephemeral = nil
    }

    func select(state: inout VirtualKeyState) -> Response {
        Response(data: TLV(Tag.version, state.version.bytes).encoded, status: .ok)
    }

    static let notFound = Response(status: .fileNotFound)
    static let unsupported = Response(status: .invalidInstruction)

    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        guard apdu.cla == 0 else { return Response(status: .classNotSupported) }
        let asymmetric = state.version >= HSMAuth.asymmetricFirmware
        switch apdu.ins {
        case Ins.list: return list(state.hsmauth)
        case Ins.getVersion: return Response(data: state.version.bytes, status: .ok)
        case Ins.getManagementKeyRetries:
            return Response(data: [UInt8(clamping: state.hsmauth.managementKeyRetries)], status: .ok)
        case Ins.reset:
            guard apdu.p1 == 0xDE, apdu.p2 == 0xAD else { return Response(status: .wrongP1P2) }
            state.hsmauth = HSMAuthState()
            ephemeral = nil
            return Self.done
        case Ins.put: return put(apdu.data, &state.hsmauth, asymmetric: asymmetric)
        case Ins.delete: return delete(apdu.data, &state.hsmauth)
        case Ins.putManagementKey: return putManagementKey(apdu.data, &state.hsmauth)
        case Ins.calculate: return calculate(apdu.data, &state.hsmauth)
        case Ins.getChallenge where asymmetric:
            return challenge(
                apdu.data, &state.hsmauth, withPassword: state.version >= HSMAuth.challengePasswordFirmware)
        case Ins.getPublicKey where asymmetric: return publicKey(apdu.data, state.hsmauth)
        case Ins.changeCredentialPassword where state.version >= HSMAuth.changePasswordFirmware:
            return changePassword(apdu, &state.hsmauth)
        default: return Self.unsupported
        }
    }

    // MARK: Parsing

    /// The command's TLVs; nil when they do not parse.
    private func fields(_ data: [UInt8]) -> [TLV]? {
        try? TLV.parseAll(data)
    }

    private func label(_ tlvs: [TLV]) -> String? {
        guard let bytes = tlvs.value(for: Tag.label), HSMAuth.labelLengths.contains(bytes.count) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    private func index(_ label: String, _ s: HSMAuthState) -> Int? {
        s.credentials.firstIndex { $0.label == label }
    }

    /// Checks the management key: nil when right (its tries start again), else the answer to give.
    private func checkManagementKey(_ given: [UInt8]?, _ s: inout HSMAuthState) -> Response? {
        guard let given, given.count == HSMAuth.managementKeyLength else { return Self.badData }
        guard s.managementKeyRetries > 0 else { return Response(status: .verifyFailNoRetry) }
        guard Crypto.constantTimeEqual(given, s.managementKey) else {
            s.managementKeyRetries -= 1
            return Response(status: StatusWord(rawValue: 0x63C0 | UInt16(s.managementKeyRetries)))
        }
        s.managementKeyRetries = HSMAuth.initialRetries
        return nil
    }

    /// Checks a credential's password: nil when right (its tries start again, and a touch is waited for when
    /// the credential wants one), else the answer to give. The last wrong try deletes the credential.
    private func checkPassword(_ given: [UInt8]?, _ i: Int, _ s: inout HSMAuthState, touch: Bool = true)
        -> Response?
    {
        guard let given, given.count == HSMAuth.credentialPasswordLength else { return Self.badData }
        guard Crypto.constantTimeEqual(given, s.credentials[i].password) else {
            s.credentials[i].retries -= 1
            let left = s.credentials[i].retries
            if left <= 0 { s.credentials.remove(at: i) }
            return Response(status: StatusWord(rawValue: 0x63C0 | UInt16(max(0, left))))
        }
        s.credentials[i].retries = HSMAuth.initialRetries
        if touch, s.credentials[i].touchRequired { button.touch() }
        return nil
    }

    // MARK: Commands

    private func list(_ s: HSMAuthState) -> Response {
        let entries = s.credentials.map {
            TLV(
                Tag.labelList,
                HSMAuthCredential(
                    label: $0.label, algorithm: $0.algorithm, touchRequired: $0.touchRequired, retries: $0.retries
                ).entry
            ).encoded
        }
        return Response(data: entries.flatMap { $0 }, status: .ok)
    }

    private func put(_ data: [UInt8], _ s: inout HSMAuthState, asymmetric: Bool) -> Response {
        guard let tlvs = fields(data), let label = label(tlvs),
            let algorithmByte = tlvs.value(for: Tag.algorithm), algorithmByte.count == 1,
            let algorithm = HSMAuth.Algorithm(rawValue: algorithmByte[0]),
            let password = tlvs.value(for: Tag.credentialPassword),
            password.count == HSMAuth.credentialPasswordLength
        else { return Self.badData }
        let touch = tlvs.value(for: Tag.touch) ?? [0]
        guard touch.count == 1, touch[0] <= 1 else { return Self.badData }
        let key: [UInt8]
        switch algorithm {
        case .aes128:
            guard let enc = tlvs.value(for: Tag.keyEnc), let mac = tlvs.value(for: Tag.keyMac), enc.count == 16,
                mac.count == 16
            else { return Self.badData }
            key = enc + mac
        case .ecP256:
            guard asymmetric, let given = tlvs.value(for: Tag.privateKey) else { return Self.badData }
            if given.isEmpty {
                key = P256PrivateKey().raw
            } else {
                guard given.count == 32, (try? P256PrivateKey(raw: given)) != nil else { return Self.badData }
                key = given
            }
        }
        if let refusal = checkManagementKey(tlvs.value(for: Tag.managementKey), &s) { return refusal }
        guard index(label, s) == nil else { return Response(status: .authMethodBlocked) }
        guard s.credentials.count < HSMAuth.maxCredentials else { return Response(status: .noSpace) }
        s.credentials.append(
            HSMAuthState.Credential(
                label: label, algorithm: algorithm, touchRequired: touch[0] == 1, password: password, key: key))
        return Self.done
    }

    private func delete(_ data: [UInt8], _ s: inout HSMAuthState) -> Response {
        guard let tlvs = fields(data), let label = label(tlvs) else { return Self.badData }
        if let refusal = checkManagementKey(tlvs.value(for: Tag.managementKey), &s) { return refusal }
        guard let i = index(label, s) else { return Self.notFound }
        s.credentials.remove(at: i)
        if ephemeral?.label == label { ephemeral = nil }
        return Self.done
    }

    private func putManagementKey(_ data: [UInt8], _ s: inout HSMAuthState) -> Response {
        guard let tlvs = fields(data) else { return Self.badData }
        let keys = tlvs.filter { $0.tag == Tag.managementKey }.map(\.value)
        guard keys.count == 2, keys[1].count == HSMAuth.managementKeyLength else { return Self.badData }
        if let refusal = checkManagementKey(keys[0], &s) { return refusal }
        s.managementKey = keys[1]
        return Self.done
    }

    private func changePassword(_ apdu: APDU, _ s: inout HSMAuthState) -> Response {
        guard apdu.p1 <= 1, let tlvs = fields(apdu.data), let label = label(tlvs) else { return Self.badData }
        let passwords = tlvs.filter { $0.tag == Tag.credentialPassword }.map(\.value)
        guard let new = passwords.last, new.count == HSMAuth.credentialPasswordLength else { return Self.badData }
        if apdu.p1 == 1 {
            guard passwords.count == 1 else { return Self.badData }
            if let refusal = checkManagementKey(tlvs.value(for: Tag.managementKey), &s) { return refusal }
            guard let i = index(label, s) else { return Self.notFound }
            s.credentials[i].password = new
            s.credentials[i].retries = HSMAuth.initialRetries
        } else {
            guard passwords.count == 2 else { return Self.badData }
            guard let i = index(label, s) else { return Self.notFound }
            if let refusal = checkPassword(passwords[0], i, &s, touch: false) { return refusal }
            s.credentials[i].password = new
        }
        return Self.done
    }

    private func challenge(_ data: [UInt8], _ s: inout HSMAuthState, withPassword: Bool) -> Response {
        guard let tlvs = fields(data), let label = label(tlvs) else { return Self.badData }
        guard let i = index(label, s) else { return Self.notFound }
        guard s.credentials[i].algorithm == .ecP256 else {
            return Response(data: Crypto.random(8), status: .ok)
        }
        if withPassword, let given = tlvs.value(for: Tag.credentialPassword) {
            if let refusal = checkPassword(given, i, &s, touch: false) { return refusal }
        }
        let key = P256PrivateKey()
        ephemeral = (label, key)
        return Response(data: key.publicKey.uncompressed, status: .ok)
    }

    private func publicKey(_ data: [UInt8], _ s: HSMAuthState) -> Response {
        guard let tlvs = fields(data), let label = label(tlvs) else { return Self.badData }
        guard let i = index(label, s) else { return Self.notFound }
        guard s.credentials[i].algorithm == .ecP256, let key = try? P256PrivateKey(raw: s.credentials[i].key) else {
            return Response(status: .authMethodBlocked)
        }
        return Response(data: key.publicKey.uncompressed, status: .ok)
    }

    private func calculate(_ data: [UInt8], _ s: inout HSMAuthState) -> Response {
        guard let tlvs = fields(data), let label = label(tlvs), let context = tlvs.value(for: Tag.context) else {
            return Self.badData
        }
        guard let i = index(label, s) else { return Self.notFound }
        let credential = s.credentials[i]
        switch credential.algorithm {
        case .aes128:
            guard context.count == 16 else { return Self.badData }
        case .ecP256:
            guard context.count == 130, let point = tlvs.value(for: Tag.publicKey),
                let pkSD = try? P256PublicKey(uncompressed: point), let receipt = tlvs.value(for: Tag.response),
                receipt.count == 16, let epkSD = try? P256PublicKey(uncompressed: Array(context[65...]))
            else { return Self.badData }
            guard let (forLabel, esk) = ephemeral, forLabel == label,
                esk.publicKey.uncompressed == Array(context[0..<65])
            else { return Self.badData }
            if let refusal = checkPassword(tlvs.value(for: Tag.credentialPassword), i, &s) { return refusal }
            ephemeral = nil
            guard let sk = try? P256PrivateKey(raw: credential.key),
                let shsee = try? esk.sharedSecret(with: epkSD), let shsss = try? sk.sharedSecret(with: pkSD)
            else { return Self.badData }
            guard
                let keys = try? HSMAuth.asymmetricSessionKeys(
                    ephemeralShared: shsee, staticShared: shsss, epkOCE: esk.publicKey.uncompressed,
                    epkSD: epkSD.uncompressed, receipt: receipt)
            else { return Response(status: .dataInvalid) }
            return Response(data: keys.encoded, status: .ok)
        }
        if let refusal = checkPassword(tlvs.value(for: Tag.credentialPassword), i, &s) { return refusal }
        guard
            let keys = try? HSMAuth.symmetricSessionKeys(
                enc: Array(credential.key[0..<16]), mac: Array(credential.key[16..<32]), context: context)
        else { return Self.badData }
        return Response(data: keys.encoded, status: .ok)
    }
}
