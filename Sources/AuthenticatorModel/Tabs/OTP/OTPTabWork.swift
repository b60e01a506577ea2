import KeyKit

/// Performs the OTP tab's commands: each opens a short-lived connection, does its work, closes, and posts
/// what came of it.
struct OTPTabWork: Sendable {
    let backend: any KeyBackend
    let environment: RunnerEnvironment
    let post: @Sendable (Msg) -> Void

    func perform(_ command: OTPTabCommand) async {
        switch command {
        case .touch:
            post(.otp(.touched(backend.touchForOTP())))
        case .readNDEF(let d):
            await withConnection(d, .ndef) { connection in
                let records = try await NDEFSession(connection: connection).read()
                var otp = Config.OTP()
                otp.parsers = environment.otpParsers
                return .ndefRead(keyID: d.id, otp: try otp.extract(from: records))
            }
        case .readSlots(let d):
            do {
                let backend = self.backend
                let opened = try await d.openOTP { try await backend.connect(d) }
                let status = await opened.session.status
                await opened.close()
                post(.otp(.slotsRead(OTPSlots(keyID: d.id, status: status, overHID: opened.channel == .otpHID))))
            } catch {
                post(.otp(.slotsRead(OTPSlots(keyID: d.id, status: nil,
                                              problem: Self.failure(.challenge, error).message))))
            }
        case .program(let d, let slot, let program, let accessCode):
            await writeSlots(d) { session in
                .programmed(slot: slot, try await Self.program(session, slot: slot, program, accessCode: accessCode))
            }
        case .swapSlots(let d, let accessCode):
            await writeSlots(d) { session in
                try await session.swapSlots(accessCode: accessCode)
                return .swapped
            }
        case .deleteSlot(let d, let slot, let accessCode):
            await writeSlots(d) { session in
                try await session.deleteSlot(slot: slot, accessCode: accessCode)
                return .deleted(slot: slot)
            }
        case .setAccessCode(let d, let slot, let current, let new):
            await writeSlots(d, accessCode: true) { session in
                // The settings an UPDATE carries return to their defaults (as `ykterm otp settings` writes them).
                let update = try OTPSlotConfiguration.update(OTPSlotConfiguration.Settings(), accessCode: new)
                try await session.update(slot: slot, update, currentAccessCode: current)
                return .accessCodeChanged(slot: slot, removed: new == nil)
            }
        case .challengeResponse(let d, let slot, let challenge):
            // The OTP application through the reader when it answers there, else over the OTP HID interface.
            do {
                let backend = self.backend
                let opened = try await d.openOTP { try await backend.connect(d) }
                do {
                    let post = self.post
                    let response = try await opened.session.calculateHMAC(slot: slot, challenge: challenge) {
                        post(.otp(.challengeWaitingForTouch(keyID: d.id)))
                    }
                    await opened.close()
                    post(.otp(.challengeAnswered(keyID: d.id, slot: slot, challenge: challenge, response: response)))
                } catch {
                    await opened.close()
                    throw error
                }
            } catch {
                post(.otp(.failed(keyID: d.id, Self.failure(.challenge, error))))
            }
        }
    }

    /// The key reveals no serial number, so a Yubico OTP slot has no public ID to take from it.
    struct NoSerial: Error {}

    /// Writes `slot` as `program` asks, drawing the random values here; returns those shown once.
    static func program(_ session: OTPSession, slot: Int, _ program: OTPSlotProgram,
                        accessCode: [UInt8]?) async throws -> OTPProgrammedSecrets? {
        switch program {
        case .yubicoOTP:
            guard let serial = try await session.serial() else { throw NoSerial() }
            let publicID = YubicoOTP.publicID(serial: serial)
            let privateID = Crypto.random(OTPSlotConfiguration.uidSize)
            let key = Crypto.random(OTPSlotConfiguration.keySize)
            let config = try OTPSlotConfiguration.yubicoOTP(publicID: publicID, privateID: privateID, key: key,
                                                            accessCode: accessCode)
            try await session.put(slot: slot, config, currentAccessCode: accessCode)
            return OTPProgrammedSecrets(slot: slot, publicID: Modhex.encode(publicID), privateID: privateID.hex,
                                        key: key.hex, serial: serial)
        case .staticPassword(let password, let length, let layout):
            let text = password ?? layout.generatePassword(length: length)
            let scanCodes: [UInt8]
            switch layout.encode(text) {
            case .success(let s): scanCodes = s
            case .failure(let e): throw OTPError.unencodableCharacter(offset: e.offset, layout: layout)
            }
            let config = try OTPSlotConfiguration.staticPassword(scanCodes: scanCodes, accessCode: accessCode)
            try await session.put(slot: slot, config, currentAccessCode: accessCode)
            return nil
        case .hotp(let secret, let digits):
            let config = try OTPSlotConfiguration.oathHOTP(secret: secret, digits: digits, accessCode: accessCode)
            try await session.put(slot: slot, config, currentAccessCode: accessCode)
            return nil
        case .challengeResponse(let given, let touch):
            let key = given ?? Crypto.random(OTPSlotConfiguration.hmacKeySize)
            try await session.programChallengeResponse(slot: slot, key: key, requireTouch: touch, accessCode: accessCode)
            return given == nil ? OTPProgrammedSecrets(slot: slot, key: key.hex) : nil
        }
    }

    /// Opens the OTP application (reader or OTP HID), performs a slot write and posts it with the status the
    /// key reports after it.
    /// A refusal of an access code change says so in the words for that (`accessCode`).
    private func writeSlots(_ d: KeyDescriptor, accessCode: Bool = false,
                            _ body: (OTPSession) async throws -> OTPSlotWrite) async {
        do {
            let backend = self.backend
            let opened = try await d.openOTP { try await backend.connect(d) }
            do {
                let write = try await body(opened.session)
                let status = await opened.session.status
                await opened.close()
                post(.otp(.slotsWritten(write, OTPSlots(keyID: d.id, status: status, overHID: opened.channel == .otpHID))))
            } catch {
                await opened.close()
                throw error
            }
        } catch {
            post(.otp(.failed(keyID: d.id, Self.failure(.slots, error, accessCode: accessCode))))
        }
    }

    private func withConnection(_ d: KeyDescriptor, _ operation: OTPTabFailure.Operation,
                                _ body: (any SmartCardConnection) async throws -> OTPTabMsg) async {
        var connection: (any SmartCardConnection)?
        do {
            let c = try await backend.connect(d)
            connection = c
            let msg = try await body(c)
            await c.close()
            post(.otp(msg))
        } catch {
            if let connection { await connection.close() }
            post(.otp(.failed(keyID: d.id, Self.failure(operation, error))))
        }
    }

    /// What the tab shows for `error` (`ErrorExplanation`), in the tab's own words where it knows more: which
    /// of its features the key lacks, what the slot holds and what to do about it.
    /// `accessCode`: the write was an access code change, whose refusal has words of its own.
    static func failure(_ operation: OTPTabFailure.Operation, _ error: any Error, accessCode: Bool = false) -> OTPTabFailure {
        let explanation = ErrorExplanation(error)
        switch error {
        case is NoSerial:
            return OTPTabFailure(operation: operation, message: UIText("otp.slots.noSerial"))
        case OTPError.configurationRefused where operation == .slots && accessCode:
            return OTPTabFailure(operation: operation, message: UIText("otp.slots.access.refused"))
        case OTPError.configurationRefused where operation == .slots:
            return OTPTabFailure(operation: operation, message: UIText("otp.slots.refused"))
        case SmartCardError.applicationNotAvailable:
            return OTPTabFailure(operation: operation,
                                 message: UIText(operation == .ndef ? "otp.ndef.notAvailable" : "otp.chalresp.notAvailable"))
        case OTPError.slotEmpty(let s) where operation != .slots:
            return OTPTabFailure(operation: operation, message: UIText("otp.chalresp.slotEmpty", ["slot": String(s)]))
        case OTPError.notChallengeResponse(let s):
            return OTPTabFailure(operation: operation, message: UIText("otp.chalresp.notHMAC", ["slot": String(s)]))
        case OTPError.touchTimeout(let s):
            return OTPTabFailure(operation: operation, message: UIText("otp.chalresp.touchTimeout", ["slot": String(s)]))
        default:
            return OTPTabFailure(operation: operation, message: explanation.text, keyGone: explanation.kind.keyGone)
        }
    }
}
