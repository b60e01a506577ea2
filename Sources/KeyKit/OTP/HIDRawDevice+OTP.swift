extension HIDRawDevice {
    /// The keyboard usage page and usage of a YubiKey's OTP interface.
    public static let keyboardUsagePage: UInt16 = 1
    public static let keyboardUsage: UInt16 = 6

    /// The YubiKey OTP interfaces (keyboard usage on a Yubico device).
    public static func enumerateOTP() -> [HIDDeviceInfo] {
        enumerateAll().filter {
            $0.isYubico && $0.usagePage == keyboardUsagePage && $0.usage == keyboardUsage
        }
    }
}
