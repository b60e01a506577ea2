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
    static func failure(_ operation: OTPTabFailure.Operation, _ error: any Error) -> OTPTabFailure {
        let explanation = ErrorExplanation(error)
        switch error {
        case SmartCardError.applicationNotAvailable:
            return OTPTabFailure(operation: operation,
                                 message: UIText(operation == .ndef ? "otp.ndef.notAvailable" : "otp.chalresp.notAvailable"))
        case OTPError.slotEmpty(let s):
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
