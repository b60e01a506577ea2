/// A tab's open dialog: which one (the tab's own kinds) and its form. The tabs name it with their kinds
/// (`FIDODialog = TabDialog<FIDODialogKind>`, ...); the OATH tab's dialog, which also remembers the URI it was
/// filled from, has a type of its own.
public struct TabDialog<Kind: Sendable & Hashable>: Sendable, Hashable {
    public var kind: Kind
    public var form: Form

    public init(kind: Kind, form: Form) {
        self.kind = kind
        self.form = form
    }
}
