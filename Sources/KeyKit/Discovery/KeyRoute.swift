/// The applications a key can carry, as far as choosing an interface goes.
public enum KeyApplication: String, Sendable, Hashable, CaseIterable {
    case management, oath, piv, openPGP, hsmAuth, otp, fido, ndef, apdu
}

/// How a connection to an application is made.
public enum KeyChannel: Sendable, Hashable {
    /// APDUs through the key's PC/SC reader (CCID on USB, or NFC).
    case smartCard
    /// CTAP wrapped in APDUs through the PC/SC reader (NFCCTAP): FIDO on an NFC reader.
    case ctapOverSmartCard
    /// CTAPHID on the FIDO HID interface: on USB the only way to FIDO2 and U2F.
    case fidoHID
    /// The OTP HID interface's feature reports.
    case otpHID
}

extension KeyDescriptor {
    /// The one place that decides which interface serves an application, best first; empty when the key
    /// has no interface that carries it. The TUI and every command use it.
    ///
    /// - FIDO2 and U2F: FIDO HID on USB; CTAP over PC/SC on an NFC reader (or a reader that is not a USB
    ///   YubiKey's own CCID interface, which never carries FIDO).
    /// - OATH, PIV, OpenPGP, YubiHSM Auth, NDEF, the APDU console: the PC/SC reader.
    /// - OTP: the reader when the OTP application answers there (firmware 5.3 and later, and NFC), else OTP HID.
    /// - Management: whichever is present, the reader first.
    public func channels(for application: KeyApplication) -> [KeyChannel] {
        switch application {
        case .fido:
            if fidoHID != nil { return [.fidoHID] }
            if reader != nil && !readerIsUSBYubiKey { return [.ctapOverSmartCard] }
            return []
        case .oath, .piv, .openPGP, .hsmAuth, .ndef, .apdu:
            return reader != nil ? [.smartCard] : []
        case .otp:
            return (reader != nil ? [.smartCard] : []) + (otpHID != nil ? [.otpHID] : [])
        case .management:
            return (reader != nil ? [.smartCard] : []) + (fidoHID != nil ? [.fidoHID] : [])
                + (otpHID != nil ? [.otpHID] : [])
        }
    }

    /// True when some interface carries `application`.
    public func has(_ application: KeyApplication) -> Bool {
        !channels(for: application).isEmpty
    }
}

/// A key has no interface that carries what was asked for.
public enum KeyRouteError: Error, Equatable, Sendable {
    case notOnThisKey(KeyApplication, [KeyInterfaceKind])
    /// The key (named by its HID product name) has no smart-card interface at all, as its name says (a Security
    /// Key's "FIDO" alone, or a YubiKey with CCID turned off): `application` is not on it, pcscd or not.
    case noSmartCardInterface(KeyApplication, key: String, [KeyInterfaceKind])

}

extension KeyDescriptor {
    /// Opens FIDO (CTAP2 and U2F) on the interface `channels(for: .fido)` picks: CTAPHID on the FIDO HID
    /// interface, or NFCCTAP through the smart-card connection `card` opens. `inline`: a CTAPHID connection
    /// makes its device calls on the calling thread (see `CTAPHIDConnection`).
    public func openFIDO(
        observer: (@Sendable (APDUExchange) -> Void)? = nil, inline: Bool = false,
        card: () async throws -> any SmartCardConnection
    ) async throws -> any FIDOConnection {
        switch channels(for: .fido).first {
        case .fidoHID?:
            guard let fidoHID else { throw KeyRouteError.notOnThisKey(.fido, interfaces) }
            return try await CTAPHIDConnection.open(fidoHID, inline: inline)
        case .ctapOverSmartCard?:
            let connection = try await card()
            do {
                return try await PCSCFIDOConnection.open(card: connection, observer: observer)
            } catch {
                await connection.close()
                throw error
            }
        default:
            throw KeyRouteError.notOnThisKey(.fido, interfaces)
        }
    }

    /// `openFIDO` with the key's PC/SC reader as its smart-card interface.
    public func openFIDO(
        observer: (@Sendable (APDUExchange) -> Void)? = nil,
        inline: Bool = false
    ) async throws -> any FIDOConnection {
        try await openFIDO(observer: observer, inline: inline) {
            guard let reader else { throw KeyRouteError.notOnThisKey(.fido, interfaces) }
            return try await PCSCConnection.connect(reader: reader)
        }
    }
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

/// The Management application on the interface that carries it, and what closes it.
public struct OpenedManagement: Sendable {
    public let link: ManagementLink
    /// The interface it goes through: CCID or NFC for a reader (by its ATR), FIDO or OTP for HID.
    public let interface: KeyInterfaceKind
    public let close: @Sendable () async -> Void

    /// Management selected on a smart-card connection, which closes with it (closed at once when the select
    /// fails).
    public static func card(_ connection: any SmartCardConnection) async throws -> OpenedManagement {
        do {
            let session = try await ManagementSession.make(connection: connection)
            return OpenedManagement(
                link: .card(session), interface: KeyProbe.isNFC(atr: connection.atr) ? .nfc : .ccid,
                close: { await connection.close() })
        } catch {
            await connection.close()
            throw error
        }
    }
}

extension KeyDescriptor {
    /// The interface `openManagement` uses: the reader, else FIDO HID, else OTP HID (`channels(for:)`); nil when
    /// the key has none of them.
    public var managementInterface: KeyInterfaceKind? {
        switch channels(for: .management).first {
        case .smartCard?: return overNFC ? .nfc : .ccid
        case .fidoHID?: return .fido
        case .otpHID?: return .otp
        default: return nil
        }
    }

    /// Opens the Management application where `channels(for: .management)` finds it first: through the smart-card
    /// interface `card` opens, else FIDO HID (`fido` opens it; Management needs CTAPHID's vendor commands), else
    /// OTP HID. Close it with `close`, or use `withManagement`.
    public func openManagement(
        card: () async throws -> any SmartCardConnection,
        fido: () async throws -> any FIDOConnection
    ) async throws -> OpenedManagement {
        switch channels(for: .management).first {
        case .smartCard?:
            return try await OpenedManagement.card(try await card())
        case .fidoHID?:
            let connection = try await fido()
            guard let hid = connection as? CTAPHIDConnection else {
                await connection.close()
                throw KeyRouteError.notOnThisKey(.management, interfaces)
            }
            return OpenedManagement(link: .fido(hid), interface: .fido, close: { await hid.close() })
        case .otpHID?:
            guard let path = otpHID?.path else { break }
            let hid = try await OTPHIDConnection.open(path: path, name: "\(name) (OTP HID)")
            return OpenedManagement(link: .otp(hid), interface: .otp, close: { await hid.close() })
        default:
            break
        }
        throw KeyRouteError.notOnThisKey(.management, interfaces)
    }

    /// `openManagement` with the key's own reader and FIDO HID interface.
    public func openManagement() async throws -> OpenedManagement {
        let (reader, fidoHID, interfaces) = (self.reader, self.fidoHID, self.interfaces)
        return try await openManagement(
            card: {
                guard let reader else { throw KeyRouteError.notOnThisKey(.management, interfaces) }
                return try await PCSCConnection.connect(reader: reader)
            },
            fido: {
                guard let fidoHID else { throw KeyRouteError.notOnThisKey(.management, interfaces) }
                return try await CTAPHIDConnection.open(fidoHID)
            })
    }

    /// Opens the Management application (`openManagement`), runs `body` on it and closes it, whether `body`
    /// returned or threw.
    public func withManagement<T>(
        card: () async throws -> any SmartCardConnection,
        fido: () async throws -> any FIDOConnection,
        _ body: (OpenedManagement) async throws -> T
    ) async throws -> T {
        let opened = try await openManagement(card: card, fido: fido)
        do {
            let result = try await body(opened)
            await opened.close()
            return result
        } catch {
            await opened.close()
            throw error
        }
    }
}
