import FoundationEssentials

/// The keys present now, for commands that run once: PC/SC readers with a card (when pcscd answers) and
/// HID interfaces, joined into keys as the monitor joins them.
public enum KeyDiscovery {
    /// Every key matching `selector` (its reader part), and why PC/SC could not be asked, if it could not.
    public static func keys(_ selector: KeySelector = KeySelector()) async -> (keys: [KeyDescriptor], pcscError: Error?)
    {
        var cards = [FoundCard]()
        var pcscError: Error?
        do {
            cards = try PCSCContext().status().filter { $0.cardPresent && !$0.mute }
                .map { FoundCard(reader: $0.name, atr: $0.atr) }
        } catch {
            pcscError = error
        }
        let hid = HIDScan.scan().found
        // All at once: a reader that does not answer costs its deadline once, not once per reader before it.
        let serials = await withTaskGroup(of: (String, UInt32?).self) { group -> [String: UInt32] in
            for address in KeyAssembler.candidatesNeedingSerials(cards: cards, hid: hid) {
                group.addTask { (address, await KeyIdentity.serial(of: address, hid: hid)) }
            }
            var found = [String: UInt32]()
            for await (address, serial) in group { if let serial { found[address] = serial } }
            return found
        }
        let keys = KeyAssembler.group(cards: cards, hid: hid, serials: serials).filter { matches($0, selector) }
        return (keys, pcscError)
    }

    /// `--reader` matches a reader name, a hidraw path or a HID product name (case-insensitive substring).
    public static func matches(_ d: KeyDescriptor, _ selector: KeySelector) -> Bool {
        guard selector.reader != nil else { return true }
        return [d.name, d.reader, d.fidoHID?.path, d.otpHID?.path, d.fidoHID?.productName, d.otpHID?.productName]
            .contains { $0.map(selector.matches(readerName:)) == true }
    }

    /// The one key `selector` designates among those that carry `application`. With a serial, keys are asked
    /// for theirs. Errors say which keys there are, and how to choose. When several keys are candidates, the
    /// readers among them that do not answer (stuck in pcscd, shown holding a card all the same) are left out,
    /// each named to `silentReader`.
    public static func key(
        for application: KeyApplication, _ selector: KeySelector,
        silentReader: (@Sendable (String) -> Void)? = nil
    ) async throws -> KeyDescriptor {
        let (all, pcscError) = await keys(selector)
        var candidates = all.filter { $0.has(application) }
        if candidates.count > 1 {
            let silent = await KeyFinder.silentReaders(candidates.compactMap(\.reader))
            if !silent.isEmpty {
                silent.forEach { silentReader?($0) }
                candidates.removeAll { $0.reader.map(silent.contains) == true }
                if candidates.isEmpty { throw SmartCardError.readerNotAnswering(silent[0]) }
            }
        }
        if let wanted = selector.serial {
            var matching = [KeyDescriptor]()
            for var d in candidates {
                if d.serial == nil { d.serial = await serial(of: d) }
                if d.serial == wanted { matching.append(d) }
            }
            candidates = matching
        }
        if candidates.isEmpty {
            // pcscd not running explains a missing smart-card interface better than "no key".
            if let pcscError, application != .fido { throw pcscError }
            if let some = all.first, selector.serial == nil {
                throw KeyRouteError.notOnThisKey(application, some.interfaces)
            }
            throw KeyFinderError.noKey(selector)
        }
        guard candidates.count == 1 else {
            throw KeyFinderError.ambiguous(candidates.map(label))
        }
        return candidates[0]
    }

    /// The serial of a key: from its reader's Management application, else over HID.
    public static func serial(of d: KeyDescriptor) async -> UInt32? {
        if let reader = d.reader, let s = await KeyIdentity.serial(ofReader: reader) { return s }
        for info in [d.fidoHID, d.otpHID].compactMap({ $0 }) {
            if let s = await KeyIdentity.serial(ofHID: FoundHID(info: info, usbDevice: nil)) { return s }
        }
        return nil
    }

    /// Where a key is: its reader, else its HID nodes.
    public static func place(_ d: KeyDescriptor) -> String {
        d.reader ?? [d.fidoHID?.path, d.otpHID?.path].compactMap { $0 }.joined(separator: ", ")
    }

    /// How lists and errors name a key: its reader or HID nodes, and the serial when known.
    public static func label(_ d: KeyDescriptor) -> String {
        var where_ = [String]()
        if let r = d.reader { where_.append(r) }
        where_ += [d.fidoHID?.path, d.otpHID?.path].compactMap { $0 }
        var text = d.reader == nil ? "\(d.name) (\(where_.joined(separator: ", ")))" : where_.joined(separator: ", ")
        if let s = d.serial { text += " (serial \(s))" }
        return text
    }
}
