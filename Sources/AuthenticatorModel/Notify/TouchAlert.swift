import KeyKit

/// How a touch the key waits for is signalled to a user who may not be looking at the screen (`[notify] touch`).
public enum TouchSignal: String, Sendable, Hashable, CaseIterable {
    /// The terminal's bell (BEL): tmux and screen mark the window, many terminals flash or beep.
    case bell
    /// A desktop notification through the terminal: OSC 777 (`notify`: foot, WezTerm, Ghostty, rxvt's
    /// extension, VTE with its patch) and OSC 9 (iTerm2, Windows Terminal, kitty, ConEmu). Terminals that know
    /// neither pass over them. They travel through SSH like any output, so they reach the desktop the user sits at.
    case osc
}

/// A key waiting for a touch: which key and what for, once per wait (`id` grows with each new wait, so the face
/// signals each once).
public struct TouchAlert: Sendable, Equatable {
    public var id: Int
    /// "Touch your key YubiKey 5 NFC 28123456: FIDO2 credential deletion".
    public var text: UIText

    /// The words: the key (its name and serial when known) and the purpose.
    public static func text(key: String, purpose: UIText) -> UIText {
        UIText("touch.alert", ["key": key], nested: ["purpose": purpose])
    }

    /// What the terminal is sent for `message`, as `signals` says: BEL, then the notification as OSC 777 and as
    /// OSC 9, each ended with ST. Control characters (and OSC 777's field separator) are taken out of the text.
    public static func escapes(title: String, message: String, signals: Set<TouchSignal>) -> String {
        func clean(_ text: String, separator: Bool) -> String {
            String(
                String.UnicodeScalarView(
                    text.unicodeScalars.filter {
                        $0.value >= 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value)
                            && !(separator && $0 == ";")
                    }))
        }
        var out = ""
        if signals.contains(.bell) { out += "\u{07}" }
        if signals.contains(.osc) {
            out +=
                "\u{1B}]777;notify;" + clean(title, separator: true) + ";" + clean(message, separator: true)
                + "\u{1B}\\"
            out += "\u{1B}]9;" + clean(message, separator: false) + "\u{1B}\\"
        }
        return out
    }
}

extension AppState {
    /// The selected key as a touch alert names it: its model and the name given it, else its model and serial,
    /// else its reader or device name.
    var touchKeyLabel: String { touchLabel(of: selectedKey) }

    /// `key` as a touch alert names it.
    func touchLabel(of key: KeyEntry?) -> String {
        guard let key else { return "" }
        if givenName(of: key) != nil { return displayName(of: key) }
        let name = key.model ?? key.descriptor.name
        guard let serial = key.serial ?? key.info?.device.serial ?? key.descriptor.serial else { return name }
        return "\(name) \(serial)"
    }

    /// A new wait for a touch on the selected key, for `purpose`: the status line says which key and what for, and
    /// the face rings and notifies once for it.
    mutating func alertTouch(_ purpose: UIText) {
        alertTouch(purpose, on: selectedKey)
    }

    /// A new wait for a touch on `key` (the all-keys view calculates on keys other than the selected one).
    mutating func alertTouch(_ purpose: UIText, on key: KeyEntry?) {
        let text = TouchAlert.text(key: touchLabel(of: key), purpose: purpose)
        touchAlert = TouchAlert(id: (touchAlert?.id ?? 0) + 1, text: text)
        status = StatusMessage(text, kind: .warning, expires: now + 30, subject: .touch)
    }

    /// Whether a tab waits for the key to be touched.
    var waitingForTouch: Bool {
        fido.busy?.touch == true || piv.busy?.touch == true || ssh.busy?.touch == true || otp.waitingForTouch
            || oath.accounts.contains { $0.calculating && $0.requiresTouch }
            || oath.others.values.contains { $0.accounts.contains { $0.calculating && $0.requiresTouch } }
    }

    /// The touch line goes once nothing waits for a touch any more.
    mutating func endTouchAlertWhenDone() {
        if status?.subject == .touch, !waitingForTouch { status = nil }
    }
}
