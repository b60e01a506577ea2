/// YKOATH instruction and tag numbers, shared by the client session and the virtual key's applet.
public enum YKOATH {
    public enum Ins {
        public static let put: UInt8 = 0x01
        public static let delete: UInt8 = 0x02
        public static let setCode: UInt8 = 0x03
        public static let reset: UInt8 = 0x04
        public static let rename: UInt8 = 0x05
        public static let list: UInt8 = 0xA1
        public static let calculate: UInt8 = 0xA2
        public static let validate: UInt8 = 0xA3
        public static let calculateAll: UInt8 = 0xA4
        public static let sendRemaining: UInt8 = 0xA5
    }

    public enum Tag {
        public static let name: UInt32 = 0x71
        public static let nameList: UInt32 = 0x72
        public static let key: UInt32 = 0x73
        public static let challenge: UInt32 = 0x74
        public static let response: UInt32 = 0x75
        public static let truncated: UInt32 = 0x76
        public static let hotp: UInt32 = 0x77
        public static let property: UInt8 = 0x78
        public static let version: UInt32 = 0x79
        public static let imf: UInt32 = 0x7A
        public static let algorithm: UInt32 = 0x7B
        public static let touch: UInt32 = 0x7C
    }

    /// The property byte that makes an account require touch (sent after tag 0x78, without a length).
    public static let requireTouch: UInt8 = 0x02

    /// The bits of the type-and-algorithm byte (PUT's key, LIST's entries) that give the type (`OATHType`);
    /// the others give the algorithm (`HashAlgorithm(oathCode:)`).
    public static let typeMask: UInt8 = 0xF0

    /// CALCULATE and CALCULATE ALL P2: answer the truncated code (tag 0x76) instead of the whole HMAC (0x75).
    public static let truncateResponse: UInt8 = 0x01

    /// RESET's P1 and P2, which confirm it.
    public static let resetP1: UInt8 = 0xDE
    public static let resetP2: UInt8 = 0xAD
}
