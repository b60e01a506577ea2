/// The Management application: firmware version and device information.
public actor ManagementSession {
    /// Instructions of the Management application, for this session and the virtual key's applet.
    public enum Ins {
        /// READ CONFIG: one page of device information (P1), as a length and TLVs (`ManagementTag`).
        public static let readConfig: UInt8 = 0x1D
        /// WRITE CONFIG: changes the device configuration (may carry the lock code).
        public static let writeConfig: UInt8 = 0x1C
        /// DEVICE RESET: every application back to its factory state (firmware 5.6).
        public static let deviceReset: UInt8 = 0x1F
        /// SET MODE: the USB interfaces of a key before firmware 5.0 (P1 `setModeP1`).
        public static let setMode: UInt8 = 0x16
        /// SET MODE's P1: the device configuration.
        public static let setModeP1: UInt8 = 0x11
    }

    /// READ CONFIG was added in firmware 4.1.0.
    public static let readConfigMinimum = Version(4, 1, 0)
    /// A sane bound on READ CONFIG pages.
    static let maxPages = 16

    private let proto: SmartCardProtocol
    public nonisolated let version: Version

    private init(proto: SmartCardProtocol, version: Version) {
        self.proto = proto
        self.version = version
    }

    /// SELECTs the Management application. Throws `applicationNotAvailable` on keys without it.
    public static func make(connection: any SmartCardConnection) async throws -> ManagementSession {
        let (proto, answer) = try await SmartCardProtocol.selecting(AID.management, name: "Management", on: connection)
        let text = String(decoding: answer, as: UTF8.self)
        guard let version = Version(parsing: text) else {
            throw SmartCardError.malformedResponse(Malformation(.managementSelect, .value(answer.hex)))
        }
        return ManagementSession(proto: proto, version: version)
    }

    /// READ CONFIG, all pages.
    public func deviceInfo() async throws -> DeviceInfo {
        guard version >= ManagementSession.readConfigMinimum else {
            throw SmartCardError.deviceInfoNeedsFirmware(version)
        }
        let proto = self.proto
        return try await ManagementSession.readPages(defaultVersion: version) { page in
            try await proto.sendChecked(APDU(ins: Ins.readConfig, p1: page, le: 256))
        }
    }

    /// One command to the Management application; its answer's data (a status other than 9000 throws).
    func send(_ apdu: APDU) async throws -> [UInt8] {
        try await proto.sendChecked(apdu)
    }

    /// Reads READ CONFIG pages (a length byte, then TLVs) until one does not announce more, over any
    /// interface: the APDU here, the vendor CTAPHID command or the OTP slot command in `ManagementHID`.
    static func readPages(
        defaultVersion: Version,
        read: @Sendable (UInt8) async throws -> [UInt8]
    ) async throws -> DeviceInfo {
        var tlvs = [UInt32: [UInt8]]()
        var page: UInt8 = 0
        while true {
            let data = try await read(page)
            guard let first = data.first, Int(first) == data.count - 1 else {
                throw SmartCardError.malformedResponse(
                    Malformation(.deviceInfo, .lengthExpected(max(data.count - 1, 0), expected: Int(data.first ?? 0))))
            }
            let parsed: [TLV]
            do {
                parsed = try TLV.parseAll(Array(data.dropFirst()), mode: .simple)
            } catch {
                throw SmartCardError.malformedResponse(Malformation(.deviceInfo, .tlv(error)))
            }
            for t in parsed { tlvs[t.tag] = t.value }
            let more = parsed.value(for: ManagementTag.moreData).map { BigEndian.integer($0) } ?? 0
            tlvs[ManagementTag.moreData] = nil
            page += 1
            if more == 0 { break }
            guard page < ManagementSession.maxPages else {
                throw SmartCardError.malformedResponse(Malformation(.deviceInfo, .neverEnds(parts: Int(page))))
            }
        }
        return try DeviceInfo(tlvs: tlvs, defaultVersion: defaultVersion)
    }
}
