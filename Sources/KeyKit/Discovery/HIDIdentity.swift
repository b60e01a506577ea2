/// The serial of a HID interface's key, from the Management application over HID: the vendor READ CONFIG on
/// the FIDO interface, the serial command on the OTP interface. Nil for other vendors' keys and keys that do
/// not reveal it.
func hidSerial(_ h: FoundHID) async -> UInt32? {
    guard h.info.isYubico else { return nil }
    if h.isFIDO {
        guard let fido = try? await CTAPHIDConnection.open(path: h.info.path, timeout: 5) else { return nil }
        let info = try? await ManagementHID.readDeviceInfo(fido: fido)
        await fido.close()
        return info?.serial
    }
    guard h.isYubiKeyOTP, let otp = try? await OTPHIDConnection.open(path: h.info.path) else { return nil }
    let serial = try? await ManagementHID.serial(otp: otp)
    await otp.close()
    return serial
}

/// An OTP session on the interface that carries the OTP application, and what closes it.
public struct OpenedOTP: Sendable {
    public let session: OTPSession
    /// The interface it was opened on: `.smartCard` or `.otpHID`.
    public let channel: KeyChannel
    public let close: @Sendable () async -> Void

    public init(session: OTPSession, channel: KeyChannel = .smartCard, close: @escaping @Sendable () async -> Void) {
        self.session = session
        self.channel = channel
        self.close = close
    }
}

extension KeyDescriptor {
    /// Opens the OTP application where `channels(for: .otp)` finds it: through the reader when the OTP
    /// application answers there (firmware 5.3 and later, and NFC), else over the OTP HID interface (older
    /// keys, and keys with CCID turned off or pcscd not running). `card` opens the smart-card interface.
    public func openOTP(card: @Sendable () async throws -> any SmartCardConnection) async throws -> OpenedOTP {
        var failure: Error = KeyRouteError.notOnThisKey(.otp, interfaces)
        for channel in channels(for: .otp) {
            switch channel {
            case .smartCard:
                do {
                    let connection = try await card()
                    do {
                        let session = try await OTPSession.make(connection: connection)
                        return OpenedOTP(session: session, close: { await connection.close() })
                    } catch {
                        await connection.close()
                        throw error
                    }
                } catch let e as SmartCardError where otpHID != nil && !e.isKeyGone {
                    // No OTP application on the smart-card side (or pcscd not reachable): the keyboard interface has it.
                    failure = e
                }
            case .otpHID:
                guard let path = otpHID?.path else { continue }
                let hid = try await OTPHIDConnection.open(path: path, name: "\(name) (OTP HID)")
                do {
                    let session = try await OTPSession.make(hid: hid)
                    return OpenedOTP(session: session, channel: .otpHID, close: { await hid.close() })
                } catch {
                    await hid.close()
                    throw error
                }
            default:
                continue
            }
        }
        throw failure
    }

    /// `openOTP` with the key's PC/SC reader as its smart-card interface.
    public func openOTP() async throws -> OpenedOTP {
        let reader = self.reader
        let interfaces = self.interfaces
        return try await openOTP {
            guard let reader else { throw KeyRouteError.notOnThisKey(.otp, interfaces) }
            return try await PCSCConnection.connect(reader: reader)
        }
    }
}
