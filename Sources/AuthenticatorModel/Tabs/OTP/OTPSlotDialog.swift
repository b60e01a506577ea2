import KeyKit

// MARK: - Slot dialogs: program, swap, delete, access code

/// The fields of the slot dialogs. The program dialog shows those of the chosen type only; the access code
/// dialog its new code (typed twice) only when it does not remove the code.
public enum OTPSlotField: String, FormFieldID {
    case slot, type, password, length, layout, secret, digits, hmacKey, touch, accessCode
    case removeAccessCode, newAccessCode, repeatAccessCode
}

/// What the program dialog writes (the type field's choices, in order).
public enum OTPSlotType: String, CaseIterable, Sendable, Hashable {
    case yubicoOTP = "Yubico OTP"
    case staticPassword = "static"
    case hotp = "OATH-HOTP"
    case challengeResponse = "chal-resp"
}

public enum OTPSlotDialogKind: Sendable, Hashable { case program, swap, delete, accessCode }

public typealias OTPSlotDialog = TabDialog<OTPSlotDialogKind>

/// What a program command writes. Random values (Yubico OTP IDs and key, a generated password or HMAC key)
/// are drawn by the work, not here: `update` stays pure.
public enum OTPSlotProgram: Sendable, Equatable {
    /// Public ID from the serial number, random private ID and AES key (shown once).
    case yubicoOTP
    /// `password` typed, or nil: a random one of `length` characters the layout types.
    case staticPassword(password: String?, length: Int, layout: ScanCodeLayout)
    case hotp(secret: [UInt8], digits: Int)
    /// `key` typed (1 to 20 bytes), or nil: a random 20-byte key (shown once).
    case challengeResponse(key: [UInt8]?, touch: Bool)
}

/// What a slot write did, and what it made that is shown once.
public enum OTPSlotWrite: Sendable, Equatable {
    case programmed(slot: Int, OTPProgrammedSecrets?)
    case swapped
    case deleted(slot: Int)
    /// The slot's access code was set (or changed), or with `removed` taken away.
    case accessCodeChanged(slot: Int, removed: Bool)
}

/// The values a programmed slot holds that nothing else will ever show again.
public struct OTPProgrammedSecrets: Sendable, Hashable {
    public var slot: Int
    /// Modhex (Yubico OTP).
    public var publicID: String?
    /// Hex (Yubico OTP).
    public var privateID: String?
    /// Hex: the Yubico OTP AES key, or the HMAC-SHA1 key.
    public var key: String
    public var serial: UInt32?
}

extension OTPTabState {
    /// The default length of a generated static password.
    public static let defaultPasswordLength = 32
}

private func accessCodeField() -> Form.Field {
    Form.Field(OTPSlotField.accessCode, UIText("otp.slots.field.accessCode"), TextField(secret: true, maxLength: 16))
}

private func slotField(_ slot: Int) -> Form.Field {
    Form.Field(OTPSlotField.slot, UIText("otp.chalresp.slot"), TextField(String(slot)), choices: ["1", "2"])
}

/// The program dialog's form for `type`, on `slot`, with the access code typed so far.
func programForm(slot: Int, type: OTPSlotType, accessCode: String = "") -> Form {
    var fields = [
        slotField(slot),
        Form.Field(
            OTPSlotField.type, UIText("otp.slots.field.type"), TextField(type.rawValue),
            choices: OTPSlotType.allCases.map(\.rawValue)),
    ]
    switch type {
    case .yubicoOTP:
        break
    case .staticPassword:
        fields += [
            Form.Field(
                OTPSlotField.password, UIText("otp.slots.field.password"),
                TextField(secret: true, maxLength: OTPSlotConfiguration.scanCodesSize)),
            Form.Field(
                OTPSlotField.length, UIText("otp.slots.field.length"),
                TextField(String(OTPTabState.defaultPasswordLength), maxLength: 2)),
            Form.Field(
                OTPSlotField.layout, UIText("otp.slots.field.layout"), TextField("MODHEX"),
                choices: ScanCodeLayout.allCases.map { $0.rawValue.uppercased() }),
        ]
    case .hotp:
        fields += [
            Form.Field(OTPSlotField.secret, UIText("otp.slots.field.secret"), TextField(secret: true, maxLength: 128)),
            Form.Field(OTPSlotField.digits, UIText("otp.slots.field.digits"), TextField("6"), choices: ["6", "8"]),
        ]
    case .challengeResponse:
        fields += [
            Form.Field(OTPSlotField.hmacKey, UIText("otp.slots.field.hmacKey"), TextField(secret: true, maxLength: 40)),
            Form.Field(OTPSlotField.touch, UIText("otp.slots.field.touch"), TextField("no"), toggle: true),
        ]
    }
    var access = accessCodeField()
    access.input = TextField(accessCode, secret: true, maxLength: 16)
    fields.append(access)
    let note: String
    switch type {
    case .yubicoOTP: note = "otp.slots.note.yubico"
    case .staticPassword: note = "otp.slots.note.static"
    case .hotp: note = "otp.slots.note.hotp"
    case .challengeResponse: note = "otp.slots.note.chalresp"
    }
    return Form(title: UIText("otp.slots.program.title"), fields: fields, note: UIText(note))
}

/// The access code dialog's form: the slot, whether the code is removed, the current code, and (unless it
/// is removed) the new one twice. `current` is what was typed so far when the form is rebuilt.
func accessCodeForm(slot: Int, remove: Bool, current: String = "") -> Form {
    var access = accessCodeField()
    access.label = UIText("otp.slots.field.currentAccessCode")
    access.input = TextField(current, secret: true, maxLength: 16)
    var fields = [
        slotField(slot),
        Form.Field(
            OTPSlotField.removeAccessCode, UIText("otp.slots.field.removeAccessCode"),
            TextField(remove ? "yes" : "no"), toggle: true),
        access,
    ]
    if !remove {
        fields += [
            Form.Field(
                OTPSlotField.newAccessCode, UIText("otp.slots.field.newAccessCode"),
                TextField(secret: true, maxLength: 16)),
            Form.Field(
                OTPSlotField.repeatAccessCode, UIText("otp.slots.field.repeatAccessCode"),
                TextField(secret: true, maxLength: 16)),
        ]
    }
    return Form(title: UIText("otp.slots.access.title"), fields: fields, note: UIText("otp.slots.access.note"))
}

/// Opens a slot dialog on the selected key: program (on the first empty slot, else slot 1), swap, delete,
/// access code (on the first programmed slot).
func openSlotDialog(_ state: inout AppState, _ kind: OTPSlotDialogKind) -> [Command] {
    guard let key = state.selectedKey, key.descriptor.has(.otp) else {
        state.status = StatusMessage(UIText("otp.noKey"), kind: .warning, expires: state.now + statusSeconds)
        return []
    }
    guard state.otp.busy == nil else { return [] }
    let status = state.otp.slots?.keyID == key.id ? state.otp.slots?.status : nil
    let form: Form
    switch kind {
    case .program:
        let slot = status.map { $0.isConfigured(slot: 1) && !$0.isConfigured(slot: 2) ? 2 : 1 } ?? 1
        form = programForm(slot: slot, type: .yubicoOTP)
    case .swap:
        form = Form(
            title: UIText("otp.slots.swap.title"), fields: [accessCodeField()], note: UIText("otp.slots.swap.note"))
    case .delete:
        let slot = status.map { !$0.isConfigured(slot: 1) && $0.isConfigured(slot: 2) ? 2 : 1 } ?? 1
        form = Form(
            title: UIText("otp.slots.delete.title"), fields: [slotField(slot), accessCodeField()],
            note: UIText("otp.slots.delete.note"))
    case .accessCode:
        let slot = status.map { !$0.isConfigured(slot: 1) && $0.isConfigured(slot: 2) ? 2 : 1 } ?? 1
        var access = accessCodeForm(slot: slot, remove: false)
        access.problem = accessCodeSlotProblem(status, slot: slot)
        form = access
    }
    state.otp.slotDialog = OTPSlotDialog(kind: kind, form: form)
    return []
}

/// Why a slot dialog cannot write yet (the form's problem line).
struct SlotProblem: Error, Equatable {
    var text: UIText
    init(_ text: UIText) { self.text = text }
}

/// What a slot dialog writes: the slot, the program (none for swap and delete), the current access code,
/// and for the access code dialog the new one (nil: the code is removed).
struct SlotWrite: Equatable {
    var slot: Int
    var program: OTPSlotProgram?
    var accessCode: [UInt8]?
    var newAccessCode: [UInt8]?
}

/// Hex digits (spaces allowed) to bytes, or why not.
private func hexBytes(_ text: String) -> Result<[UInt8], SlotProblem> {
    let digits = text.filter { $0 != " " }
    if let bad = digits.first(where: { !$0.isHexDigit }) {
        return .failure(SlotProblem(UIText("otp.chalresp.notHex", ["char": String(bad)])))
    }
    if digits.count % 2 != 0 { return .failure(SlotProblem(UIText("otp.chalresp.odd"))) }
    guard let bytes = try? Hex.decode(digits) else { return .failure(SlotProblem(UIText("otp.chalresp.odd"))) }
    return .success(bytes)
}

/// The access code typed in field `field` (nil: none), or why it is not one.
private func accessCode(_ form: Form, _ field: OTPSlotField = .accessCode) -> Result<[UInt8]?, SlotProblem> {
    let text = form[field]
    guard !text.isEmpty else { return .success(nil) }
    switch hexBytes(text) {
    case .failure(let why): return .failure(why)
    case .success(let code):
        guard code.count == OTPSlotConfiguration.accessCodeSize else {
            return .failure(SlotProblem(ErrorExplanation(OTPError.invalidAccessCode).text))
        }
        return .success(code)
    }
}

/// What the dialog writes, or the first problem with what is typed. While editing (`submitting` false)
/// empty fields are no problem yet.
func slotDialogOutcome(_ dialog: OTPSlotDialog, submitting: Bool = false) -> Result<SlotWrite, SlotProblem> {
    let form = dialog.form
    let slot = form[OTPSlotField.slot] == "2" ? 2 : 1
    var program: OTPSlotProgram?
    if dialog.kind == .program {
        switch OTPSlotType(rawValue: form[OTPSlotField.type]) ?? .yubicoOTP {
        case .yubicoOTP:
            program = .yubicoOTP
        case .staticPassword:
            let layout = ScanCodeLayout(rawValue: form[OTPSlotField.layout].lowercased()) ?? .modhex
            let password = form[OTPSlotField.password]
            if password.isEmpty {
                guard let n = Int(form[OTPSlotField.length]), (1...OTPSlotConfiguration.scanCodesSize).contains(n)
                else {
                    return .failure(
                        SlotProblem(
                            ErrorExplanation(OTPError.invalidPasswordLength(Int(form[OTPSlotField.length]) ?? 0)).text))
                }
                program = .staticPassword(password: nil, length: n, layout: layout)
            } else {
                if case .failure(let e) = layout.encode(password) {
                    return .failure(
                        SlotProblem(
                            ErrorExplanation(OTPError.unencodableCharacter(offset: e.offset, layout: layout)).text))
                }
                program = .staticPassword(password: password, length: password.count, layout: layout)
            }
        case .hotp:
            let text = form[OTPSlotField.secret]
            if text.isEmpty {
                if submitting { return .failure(SlotProblem(UIText("otp.slots.rule.secretEmpty"))) }
            } else {
                do {
                    let secret = try Base32.decode(text)
                    guard !secret.isEmpty else { return .failure(SlotProblem(UIText("otp.slots.rule.secretEmpty"))) }
                    program = .hotp(secret: secret, digits: form[OTPSlotField.digits] == "8" ? 8 : 6)
                } catch {
                    return .failure(SlotProblem(ErrorExplanation(error).text))
                }
            }
        case .challengeResponse:
            let text = form[OTPSlotField.hmacKey]
            var key: [UInt8]?
            if !text.isEmpty {
                switch hexBytes(text) {
                case .failure(let why): return .failure(why)
                case .success(let bytes):
                    guard (1...OTPSlotConfiguration.hmacKeySize).contains(bytes.count) else {
                        return .failure(SlotProblem(ErrorExplanation(OTPError.invalidKey(bytes.count)).text))
                    }
                    key = bytes
                }
            }
            program = .challengeResponse(key: key, touch: form.isOn(OTPSlotField.touch))
        }
    }
    if dialog.kind == .accessCode { return accessCodeOutcome(form, slot: slot, submitting: submitting) }
    // A code being typed is not wrong until it is complete (or has a character that is not hex).
    if !submitting && isBeingTyped(form, .accessCode) {
        return .success(SlotWrite(slot: slot, program: program, accessCode: nil))
    }
    switch accessCode(form) {
    case .failure(let why): return .failure(why)
    case .success(let code): return .success(SlotWrite(slot: slot, program: program, accessCode: code))
    }
}

/// Whether field `field` holds the start of an access code: fewer than 12 digits, all hex.
private func isBeingTyped(_ form: Form, _ field: OTPSlotField) -> Bool {
    let typed = form[field].filter { $0 != " " }
    return typed.count < 2 * OTPSlotConfiguration.accessCodeSize && typed.allSatisfy(\.isHexDigit)
}

/// The access code dialog: the current code (needed to remove one), and the new code, 12 hex digits not all
/// zero (zeros are no code), typed the same twice.
private func accessCodeOutcome(_ form: Form, slot: Int, submitting: Bool) -> Result<SlotWrite, SlotProblem> {
    var current: [UInt8]?
    if submitting || !isBeingTyped(form, .accessCode) {
        switch accessCode(form) {
        case .failure(let why): return .failure(why)
        case .success(let code): current = code
        }
    }
    if form.isOn(OTPSlotField.removeAccessCode) {
        if submitting && current == nil { return .failure(SlotProblem(UIText("otp.slots.access.removeNeedsCurrent"))) }
        return .success(SlotWrite(slot: slot, accessCode: current, newAccessCode: nil))
    }
    var new: [UInt8]?
    if submitting || !isBeingTyped(form, .newAccessCode) {
        switch accessCode(form, .newAccessCode) {
        case .failure(let why): return .failure(why)
        case .success(nil):
            if submitting { return .failure(SlotProblem(UIText("otp.slots.access.newEmpty"))) }
        case .success(let code?):
            if code.allSatisfy({ $0 == 0 }) { return .failure(SlotProblem(UIText("otp.slots.access.zero"))) }
            new = code
        }
    }
    let again = form[OTPSlotField.repeatAccessCode].filter { $0 != " " }.lowercased()
    if submitting || !again.isEmpty && !isBeingTyped(form, .repeatAccessCode),
        again != form[OTPSlotField.newAccessCode].filter({ $0 != " " }).lowercased()
    {
        return .failure(SlotProblem(UIText("otp.slots.access.mismatch")))
    }
    return .success(SlotWrite(slot: slot, accessCode: current, newAccessCode: new))
}

/// Why the access code of `slot` cannot be changed with an UPDATE, as far as the key's status tells: an
/// empty slot has none, and a challenge-response slot (programmed, not typing on touch) would lose its
/// settings with it.
func accessCodeSlotProblem(_ status: OTPSession.Status?, slot: Int) -> UIText? {
    guard let status else { return nil }
    guard status.isConfigured(slot: slot) else { return ErrorExplanation(OTPError.slotEmpty(slot)).text }
    guard status.isTouchTriggered(slot: slot) else {
        return UIText("otp.slots.access.chalresp", ["slot": String(slot)])
    }
    return nil
}

/// The question a dialog asks before it writes, or nil: swap and delete always ask, program when the slot
/// holds something.
private func slotQuestion(_ state: AppState, _ dialog: OTPSlotDialog, slot: Int) -> UIText? {
    switch dialog.kind {
    case .swap: return UIText("otp.slots.swap.confirm")
    case .delete: return UIText("otp.slots.delete.confirm", ["slot": String(slot)])
    case .accessCode:
        let remove = dialog.form.isOn(OTPSlotField.removeAccessCode)
        return UIText(remove ? "otp.slots.access.confirmRemove" : "otp.slots.access.confirm", ["slot": String(slot)])
    case .program:
        guard let status = state.otp.slots?.status, status.isConfigured(slot: slot) else { return nil }
        return UIText("otp.slots.overwrite", ["slot": String(slot)])
    }
}

func slotDialogKey(_ state: inout AppState, _ key: KeyPress) -> [Command] {
    guard var dialog = state.otp.slotDialog else { return [] }
    let type = dialog.form[OTPSlotField.type]
    switch dialog.form.handle(key, now: state.now) {
    case .cancel:
        // A dialog closed while its command runs: the answer still comes, in the status line.
        dialog.form.wipeSecrets()
        state.otp.slotDialog = nil
        return []
    case .editing:
        if dialog.kind == .program, dialog.form[OTPSlotField.type] != type,
            let newType = OTPSlotType(rawValue: dialog.form[OTPSlotField.type])
        {
            // Another type: its own fields, the slot, type and access code kept.
            let focus = dialog.form.focus
            var form = programForm(
                slot: dialog.form[OTPSlotField.slot] == "2" ? 2 : 1, type: newType,
                accessCode: dialog.form[OTPSlotField.accessCode])
            form.focus = focus
            dialog.form = form
        }
        if dialog.kind == .accessCode,
            dialog.form.isOn(OTPSlotField.removeAccessCode) == dialog.form.has(OTPSlotField.newAccessCode)
        {
            // Remove turned on or off: the new code's fields go or come, the slot and current code kept.
            let focus = dialog.form.focus
            var form = accessCodeForm(
                slot: dialog.form[OTPSlotField.slot] == "2" ? 2 : 1,
                remove: dialog.form.isOn(OTPSlotField.removeAccessCode),
                current: dialog.form[OTPSlotField.accessCode])
            dialog.form.wipeSecrets()
            form.focus = focus
            dialog.form = form
        }
        if !dialog.form.busy && dialog.form.confirming == nil { dialog.form.problem = slotDialogProblem(dialog, state) }
        state.otp.slotDialog = dialog
        return []
    case .submit:
        let outcome = slotDialogOutcome(dialog, submitting: true)
        guard case .success(let write) = outcome else {
            if case .failure(let why) = outcome { dialog.form.problem = why.text }
            state.otp.slotDialog = dialog
            return []
        }
        guard let entry = state.selectedKey else {
            dialog.form.problem = UIText("otp.noKey")
            state.otp.slotDialog = dialog
            return []
        }
        if dialog.kind == .accessCode, let why = accessCodeSlotProblem(slotStatus(state), slot: write.slot) {
            dialog.form.problem = why
            state.otp.slotDialog = dialog
            return []
        }
        if !dialog.form.confirmed, let question = slotQuestion(state, dialog, slot: write.slot) {
            dialog.form.problem = nil
            dialog.form.ask(question, at: state.now)
            state.otp.slotDialog = dialog
            return []
        }
        let d = entry.descriptor
        let command: OTPTabCommand
        switch dialog.kind {
        case .program:
            guard let program = write.program else { return [] }
            command = .program(d, slot: write.slot, program, accessCode: write.accessCode)
        case .swap:
            command = .swapSlots(d, accessCode: write.accessCode)
        case .delete:
            command = .deleteSlot(d, slot: write.slot, accessCode: write.accessCode)
        case .accessCode:
            command = .setAccessCode(d, slot: write.slot, current: write.accessCode, new: write.newAccessCode)
        }
        dialog.form.sent()
        state.otp.slotDialog = dialog
        state.otp.busy = .slots
        return [.otp(command)]
    }
}

/// The first problem with the dialog as typed so far (nil while nothing is wrong yet); for the access code
/// dialog, then what the key's status says of the slot chosen.
func slotDialogProblem(_ dialog: OTPSlotDialog, _ state: AppState) -> UIText? {
    switch slotDialogOutcome(dialog) {
    case .failure(let why): return why.text
    case .success(let write):
        guard dialog.kind == .accessCode else { return nil }
        return accessCodeSlotProblem(slotStatus(state), slot: write.slot)
    }
}

/// The selected key's slot status, when it was read.
func slotStatus(_ state: AppState) -> OTPSession.Status? {
    state.otp.slots?.keyID == state.selectedKeyID ? state.otp.slots?.status : nil
}

/// Pasted text into the slot dialog's focused field.
func slotDialogPaste(_ state: inout AppState, _ text: String) -> Bool {
    guard var dialog = state.otp.slotDialog, dialog.form.paste(text) else { return false }
    dialog.form.problem = slotDialogProblem(dialog, state)
    state.otp.slotDialog = dialog
    return true
}
