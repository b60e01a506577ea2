import KeyKit

/// A key plugged in, as the commands over several keys (`--all-keys`, `--device A,B`) find, name and open it.
public struct KeyInHand: Sendable {
    public var descriptor: KeyDescriptor
    public var serial: UInt32?
    /// The name the user gave it (`KeyNames`).
    public var name: String?
    /// Whether the serial was looked for (false: `EveryKey.keys` left it for `identify`, which finds it without
    /// asking the key again when the key's OATH application was seen before).
    public var identified = true

    /// How output and prompts call it: its name, else its serial, else its reader or device name.
    public var label: String {
        if let name { return name }
        if let serial { return String(serial) }
        return descriptor.name
    }

    /// Opens this key only: its reader, else its HID node, whatever else is plugged in. Not by serial: that would
    /// have every reader asked for its serial again at each opening.
    public func opener(calls: PCSCCalls = .queued, opened: (@Sendable (String) -> Void)? = nil) -> SelectedKey {
        SelectedKey(
            KeySelector(reader: descriptor.reader ?? descriptor.fidoHID?.path ?? descriptor.otpHID?.path),
            calls: calls, opened: opened)
    }
}

/// What `EveryKey.keys` refuses.
public enum EveryKeyError: Error, Sendable, Equatable {
    /// No key with this serial (named `name`, if it has a name) carries the application.
    case notPluggedIn(serial: UInt32, name: String?)
    /// No key carries the application.
    case noKeys(KeyApplication)
}

/// The keys plugged in, for the commands that work on several at once.
public enum EveryKey {
    /// The keys that carry `application` (on any interface), in discovery order, each with its serial (asked of
    /// the keys at once) and name. With `serials`, exactly those keys, in that order; one that is not plugged in is
    /// refused by serial and name.
    ///
    /// With `serialsLater` (and no `serials` to choose by), a serial the discovery did not give is not asked for
    /// here: `identify` finds it once the keys were opened.
    public static func keys(
        with application: KeyApplication, serials: [UInt32]? = nil, reader: String? = nil,
        names: KeyNames = KeyNames(), serialsLater: Bool = false
    ) async throws -> [KeyInHand] {
        let (found, pcscError) = await KeyDiscovery.keys(KeySelector(reader: reader))
        let carrying = found.filter { $0.has(application) }
        if carrying.isEmpty, let pcscError, application != .fido { throw pcscError }
        let named = names.all()
        let later = serialsLater && serials == nil
        let keys = await withTaskGroup(of: (Int, KeyInHand).self) { group -> [KeyInHand] in
            for (i, d) in carrying.enumerated() {
                group.addTask {
                    var serial = d.serial
                    if serial == nil && !later { serial = await KeyDiscovery.serial(of: d) }
                    var key = KeyInHand(descriptor: d, serial: serial, name: serial.flatMap { named[$0] })
                    key.identified = serial != nil || !later
                    return (i, key)
                }
            }
            var out = [KeyInHand?](repeating: nil, count: carrying.count)
            for await (i, key) in group { out[i] = key }
            return out.compactMap { $0 }
        }
        guard let serials else {
            if keys.isEmpty { throw EveryKeyError.noKeys(application) }
            return keys
        }
        return try serials.map { wanted in
            guard let key = keys.first(where: { $0.serial == wanted }) else {
                throw EveryKeyError.notPluggedIn(serial: wanted, name: named[wanted])
            }
            return key
        }
    }
}

extension EveryKey {
    /// The serials (and names) of the keys `keys` left for later, now that each was opened: the serial the key's
    /// OATH application was last seen with (`oathDeviceIDs[i]`, kept in `KeySerials`), else asked of the keys at
    /// once (and kept for next time).
    public static func identify(
        _ keys: inout [KeyInHand], oathDeviceIDs: [String?], serials cache: KeySerials = KeySerials(),
        names: KeyNames = KeyNames()
    ) async {
        let missing = keys.indices.filter { !keys[$0].identified }
        guard !missing.isEmpty else { return }
        var known = cache.all()
        var ask = [Int]()
        for i in missing {
            if let id = oathDeviceIDs[i], let serial = known[id] { keys[i].serial = serial } else { ask.append(i) }
            keys[i].identified = true
        }
        let descriptors = ask.map { keys[$0].descriptor }
        let found = await withTaskGroup(of: (Int, UInt32?).self) { group -> [Int: UInt32] in
            for (n, d) in descriptors.enumerated() { group.addTask { (n, await KeyDiscovery.serial(of: d)) } }
            var out = [Int: UInt32]()
            for await (n, serial) in group { if let serial { out[n] = serial } }
            return out
        }
        var changed = false
        for (n, i) in ask.enumerated() {
            guard let serial = found[n] else { continue }
            keys[i].serial = serial
            if let id = oathDeviceIDs[i], known[id] != serial {
                known[id] = serial
                changed = true
            }
        }
        if changed { cache.save(known) }
        let named = names.all()
        for i in missing { keys[i].name = keys[i].serial.flatMap { named[$0] } }
    }
}
