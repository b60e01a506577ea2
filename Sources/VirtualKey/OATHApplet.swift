import FoundationEssentials
import Glibc
import KeyKit

/// The OATH application (YKOATH), as a YubiKey 5 answers it: TOTP and HOTP accounts, an optional access
/// key with mutual challenge-response, and long answers fetched with SEND REMAINING.
///
/// Status words follow the real application: 6984 for an account that does not exist (and for VALIDATE
/// when no password is set), 6A80 for malformed data and for a wrong VALIDATE response, 6A84 when full,
/// 6982 for commands sent while locked.
final class OATHApplet: Applet {
    let aid = AID.oath
    let capabilities: Capabilities = .oath
    let remainingInstruction: UInt8 = Ins.sendRemaining
    /// The button an account that requires touch waits for.
    let button: SimulatedButton

    /// Unlocked with VALIDATE (or by SET CODE) in this session; SELECT and power cycles lock again.
    private var unlocked = false
    /// The challenge sent with the last SELECT, when a password is set.
    private var challenge: [UInt8]?

    /// Instructions this key does not have, answered with the status word given (see `VirtualKeyProfile`).
    let refused: [UInt8: StatusWord]

    init(touchDelay: Double = 0.5, refused: [UInt8: StatusWord] = [:]) {
        button = SimulatedButton(delay: touchDelay)
        self.refused = refused
    }

    typealias Ins = YKOATH.Ins
    typealias Tag = YKOATH.Tag

    static let requireTouch = YKOATH.requireTouch
    static let renameMinimum = Version(5, 3, 1)

    private static let wrongData = Response(status: .incorrectParameters)
    /// "No such object", "response does not match" (SET CODE) and "no password set" (VALIDATE).
    private static let noSuchObject = Response(status: .dataInvalid)

    func powerReset() {
        unlocked = false
        challenge = nil
    }

    private func isLocked(_ state: VirtualKeyState) -> Bool {
        state.oath.hasPassword && !unlocked
    }

    func select(state: inout VirtualKeyState) -> Response {
        powerReset()
        if state.oath.salt.isEmpty { state.oath.salt = Crypto.random(8) }
        var body = TLV(Tag.version, state.version.bytes).encoded + TLV(Tag.name, state.oath.salt).encoded
        if state.oath.hasPassword {
            let c = Crypto.random(8)
            challenge = c
            body += TLV(Tag.challenge, c).encoded
            body += TLV(Tag.algorithm, [state.oath.passwordAlgorithm.oathCode]).encoded
        }
        return Response(data: body, status: .ok)
    }

    func process(_ apdu: APDU, state: inout VirtualKeyState) -> Response {
        if let status = refused[apdu.ins] { return Response(status: status) }
        if isLocked(state) && apdu.ins != Ins.validate && apdu.ins != Ins.reset {
            return Response(status: .securityConditionNotSatisfied)
        }
        switch apdu.ins {
        case Ins.put: return put(apdu, &state)
        case Ins.delete: return delete(apdu, &state)
        case Ins.setCode: return setCode(apdu, &state)
        case Ins.reset: return reset(apdu, &state)
        case Ins.rename: return rename(apdu, &state)
        case Ins.list: return list(state)
        case Ins.calculate: return calculate(apdu, &state)
        case Ins.validate: return validate(apdu, state)
        case Ins.calculateAll: return calculateAll(apdu, state)
        case Ins.sendRemaining: return Self.done  // nothing left to send
        default: return Response(status: .invalidInstruction)
        }
    }

    // MARK: Commands

    private func put(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        // TLVs, except that the property is its tag followed directly by one byte.
        var name: [UInt8]?
        var key: [UInt8]?
        var property: UInt8 = 0
        var imf: [UInt8]?
        var i = 0
        let data = apdu.data
        while i < data.count {
            if data[i] == Tag.property {
                guard i + 1 < data.count else { return Self.wrongData }
                property = data[i + 1]
                i += 2
                continue
            }
            guard let parsed = try? TLV.parse(data, at: i, mode: .simple) else { return Self.wrongData }
            let (tlv, next) = parsed
            switch tlv.tag {
            case Tag.name: name = tlv.value
            case Tag.key: key = tlv.value
            case Tag.imf: imf = tlv.value
            default: break
            }
            i = next
        }
        guard let name, Self.validName(name), let key, key.count > 2,
            let type = OATHType(rawValue: key[0] & YKOATH.typeMask),
            let algorithm = HashAlgorithm(oathCode: key[0])
        else {
            return Self.wrongData
        }
        let digits = Int(key[1])
        let secret = Array(key[2...])
        let touch = property & Self.requireTouch != 0
        guard (6...8).contains(digits), secret.count <= algorithm.blockSize,
            algorithm != .sha512 || OATHFeature.sha512.isSupported(by: state.version),
            !touch || OATHFeature.touch.isSupported(by: state.version)
        else {
            return Self.wrongData
        }
        var counter: UInt64 = 0
        if let imf {
            guard imf.count == 4 else { return Self.wrongData }
            counter = BigEndian.integer(imf)
        }
        let credential = OATHState.StoredCredential(
            id: name, type: type, algorithm: algorithm, digits: digits,
            secret: secret, touch: touch, counter: counter)
        if let index = state.oath.index(of: name) {
            state.oath.credentials[index] = credential
        } else {
            guard state.oath.credentials.count < OATHState.capacity(for: state.version) else {
                return Response(status: .noSpace)
            }
            state.oath.credentials.append(credential)
        }
        return Self.done
    }

    private func delete(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard let tlvs = Self.parse(apdu.data), let name = tlvs.value(for: Tag.name) else { return Self.wrongData }
        guard let index = state.oath.index(of: name) else { return Self.noSuchObject }
        state.oath.credentials.remove(at: index)
        return Self.done
    }

    private func rename(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard state.version >= Self.renameMinimum else { return Response(status: .invalidInstruction) }
        guard let tlvs = Self.parse(apdu.data) else { return Self.wrongData }
        let names = tlvs.filter { $0.tag == Tag.name }.map(\.value)
        guard names.count == 2, Self.validName(names[1]) else { return Self.wrongData }
        let (old, new) = (names[0], names[1])
        guard let index = state.oath.index(of: old) else { return Self.noSuchObject }
        if old == new { return Self.done }
        guard state.oath.index(of: new) == nil else { return Self.wrongData }
        state.oath.credentials[index].id = new
        return Self.done
    }

    private func list(_ state: VirtualKeyState) -> Response {
        let body = state.oath.credentials.flatMap { c in
            TLV(Tag.nameList, [c.type.rawValue | c.algorithm.oathCode] + c.id).encoded
        }
        return Response(data: body, status: .ok)
    }

    private func calculate(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard apdu.p1 == 0, [0, YKOATH.truncateResponse].contains(apdu.p2) else { return Response(status: .wrongP1P2) }
        guard let tlvs = Self.parse(apdu.data), let name = tlvs.value(for: Tag.name),
            let given = tlvs.value(for: Tag.challenge)
        else {
            return Self.wrongData
        }
        guard let index = state.oath.index(of: name) else { return Self.noSuchObject }
        let credential = state.oath.credentials[index]
        if credential.touch { button.touch() }
        let challenge: [UInt8]
        if credential.type == .hotp {
            challenge = BigEndian.bytes(credential.counter, count: 8)
            state.oath.credentials[index].counter = credential.counter &+ 1
        } else {
            challenge = given
        }
        let truncate = apdu.p2 == YKOATH.truncateResponse
        return Response(data: Self.answer(credential, challenge: challenge, truncate: truncate).encoded, status: .ok)
    }

    private func calculateAll(_ apdu: APDU, _ state: VirtualKeyState) -> Response {
        guard apdu.p1 == 0, [0, YKOATH.truncateResponse].contains(apdu.p2) else { return Response(status: .wrongP1P2) }
        guard let tlvs = Self.parse(apdu.data), let challenge = tlvs.value(for: Tag.challenge) else {
            return Self.wrongData
        }
        var body = [UInt8]()
        for c in state.oath.credentials {
            body += TLV(Tag.name, c.id).encoded
            if c.type == .hotp {
                // HOTP counters only advance on request, touch or not.
                body += TLV(Tag.hotp, [UInt8(c.digits)]).encoded
            } else if c.touch {
                body += TLV(Tag.touch, [UInt8(c.digits)]).encoded
            } else {
                // Every TOTP account with the one challenge, whatever its period (clients redo the others).
                body += Self.answer(c, challenge: challenge, truncate: apdu.p2 == YKOATH.truncateResponse).encoded
            }
        }
        return Response(data: body, status: .ok)
    }

    private func validate(_ apdu: APDU, _ state: VirtualKeyState) -> Response {
        guard let key = state.oath.passwordKey else { return Self.noSuchObject }
        guard let tlvs = Self.parse(apdu.data), let response = tlvs.value(for: Tag.response),
            let theirs = tlvs.value(for: Tag.challenge), !theirs.isEmpty, let challenge
        else {
            return Self.wrongData
        }
        let algorithm = state.oath.passwordAlgorithm
        guard Crypto.constantTimeEqual(response, Crypto.hmac(algorithm, key: key, data: challenge)) else {
            return Self.wrongData
        }
        unlocked = true
        return Response(
            data: TLV(Tag.response, Crypto.hmac(algorithm, key: key, data: theirs)).encoded,
            status: .ok)
    }

    private func setCode(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard let tlvs = Self.parse(apdu.data), let keyData = tlvs.value(for: Tag.key) else {
            return Self.wrongData
        }
        if keyData.isEmpty {
            state.oath.passwordKey = nil
            state.oath.passwordAlgorithm = .sha1
            return Self.done
        }
        guard keyData.count > 1, let algorithm = HashAlgorithm(oathCode: keyData[0]),
            let challenge = tlvs.value(for: Tag.challenge), let response = tlvs.value(for: Tag.response)
        else {
            return Self.wrongData
        }
        let key = Array(keyData[1...])
        guard Crypto.constantTimeEqual(response, Crypto.hmac(algorithm, key: key, data: challenge)) else {
            return Response(status: .dataInvalid)
        }
        state.oath.passwordKey = key
        state.oath.passwordAlgorithm = algorithm
        // Whoever set the key knows it: this session stays open.
        unlocked = true
        return Self.done
    }

    private func reset(_ apdu: APDU, _ state: inout VirtualKeyState) -> Response {
        guard apdu.p1 == YKOATH.resetP1, apdu.p2 == YKOATH.resetP2 else { return Response(status: .wrongP1P2) }
        state.oath = OATHState(salt: Crypto.random(8))
        unlocked = false
        challenge = nil
        return Self.done
    }

    // MARK: Helpers

    private static func parse(_ data: [UInt8]) -> [TLV]? {
        try? TLV.parseAll(data, mode: .simple)
    }

    private static func validName(_ name: [UInt8]) -> Bool {
        !name.isEmpty && name.count <= CredentialID.maxLength
    }

    /// The code as CALCULATE answers it: 0x76 digits + the four dynamically truncated bytes (RFC 4226
    /// section 5.3, top bit cleared), or 0x75 digits + the whole HMAC.
    static func answer(_ credential: OATHState.StoredCredential, challenge: [UInt8], truncate: Bool) -> TLV {
        let mac = Crypto.hmac(credential.algorithm, key: credential.secret, data: challenge)
        let digits = UInt8(credential.digits)
        guard truncate else { return TLV(Tag.response, [digits] + mac) }
        let offset = Int(mac[mac.count - 1] & 0x0F)
        var part = Array(mac[offset..<(offset + 4)])
        part[0] &= 0x7F
        return TLV(Tag.truncated, [digits] + part)
    }
}
