import ArgumentParser
import AuthenticatorModel
import KeyKit

/// `fido pin`: the PIN itself (set, change, verify) and the key's rules for it (minimum length, forced change).
extension FIDOCommand {
    struct PIN: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pin",
            abstract: "Set, change or verify the FIDO2 PIN; raise its minimum length or force a change.",
            discussion: """
                set asks for the new PIN (twice on a terminal); change asks for the current PIN, then the new \
                one; verify asks for the PIN and reports the attempts left. A PIN has at least 4 characters (or \
                the key's minimum) and at most 63 bytes of UTF-8. Three wrong PINs in a row need the key to be \
                removed and inserted again; 8 block the PIN until a FIDO reset. set-min-length and force-change \
                need a key with CTAP 2.1 authenticatorConfig (YubiKey 5.7 and later).
                """,
            subcommands: [SetPIN.self, ChangePIN.self, VerifyPIN.self, SetMinLength.self, ForceChange.self])
    }

    /// The FIDO operations on the key `key` chose and its PIN state, read before a PIN is asked for (the key is
    /// not held while the user types); a key without PIN support, or whose PIN is not as `pinSet` needs, ends the
    /// command with the words for that.
    static func pinOperations(
        _ key: KeyChoice, pinSet wanted: Bool,
        check: (FIDOInfo) throws -> Void = { _ in }
    ) async throws -> (FIDOOperations, FIDOInfo) {
        let operations = fidoOperations(key)
        let info = try await operations.info()
        try check(info)
        switch (info.pinSet, wanted) {
        case (nil, _): throw FIDOSessionError.noPINSupport
        case (true?, false): throw YktermError.failed(words("cli.fido.pin.alreadySet"))
        case (false?, true): throw CTAPError(CTAPError.pinNotSet)
        default: return (operations, info)
        }
    }

    struct SetPIN: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set", abstract: "Set a PIN on a key that has none (asked twice on a terminal).")

        @OptionGroup var key: KeyOptions

        func run() async throws {
            let prompt = Prompt()
            let (operations, info) = try await FIDOCommand.pinOperations(key.choice, pinSet: false)
            let pin = try askPIN(prompt, words("fido.pin.new"), minimum: info.minPINLength, new: true)
            _ = try await operations.setPIN(pin)
            out(words("cli.fido.pin.set"))
        }
    }

    struct ChangePIN: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "change",
            abstract: "Change the PIN: the current PIN first, then the new one.",
            discussion: """
                This is also how a key that wants a new PIN (a forced change) is made usable again. With \
                --all-keys, every key plugged in that has a FIDO2 PIN, one after the other, each asked for by \
                name; a key that refuses is named and the others go on (exit status 1).
                """)

        @OptionGroup var key: KeyOptions

        @Flag(name: .long, help: "Every key plugged in that has a FIDO2 PIN, one prompt per key.")
        var allKeys = false

        func validate() throws {
            try key.refuse(allKeys: allKeys)
        }

        func run() async throws {
            let prompt = Prompt()
            guard allKeys else {
                let (operations, info) = try await FIDOCommand.pinOperations(key.choice, pinSet: true)
                try await Self.change(operations, info, prompt: prompt, naming: nil)
                out(words("cli.fido.pin.changed"))
                return
            }
            var failed = false
            for k in try await EveryKey.keys(with: .fido, reader: key.reader) {
                do {
                    let operations = fidoOperations(k.opener())
                    let info = try await operations.info()
                    guard info.pinSet == true else {
                        warn(words("cli.fido.pin.skippedNoPIN", ["key": k.label]))
                        continue
                    }
                    try await Self.change(operations, info, prompt: prompt, naming: k.label)
                    out(words("cli.fido.pin.changedOn", ["key": k.label]))
                } catch {
                    failed = true
                    warn("ykterm: \(k.label): " + (error is YktermError ? "\(error)" : explained(error).1))
                }
            }
            if failed { throw ExitCode(ExitStatus.failed) }
        }

        /// The current PIN, the new one (asked for naming the key when there are several), then the change.
        static func change(_ operations: FIDOOperations, _ info: FIDOInfo, prompt: Prompt, naming key: String?)
            async throws
        {
            let (current, new) =
                key.map {
                    (words("cli.fido.pin.currentOf", ["key": $0]), words("cli.fido.pin.newOf", ["key": $0]))
                } ?? (words("fido.pin.current"), words("fido.pin.new"))
            let old = try askPIN(prompt, current, minimum: info.minPINLength, new: false)
            let pin = try askPIN(prompt, new, minimum: info.minPINLength, new: true)
            do {
                _ = try await operations.changePIN(current: old, new: pin)
            } catch FIDOOperationError.pinChangeUncertain(let cause) {
                throw YktermError.failed(words("cli.fido.pin.changeUncertain", ["reason": explained(cause).1]))
            } catch let e where FIDOOperations.keyAnswered(e) && !(e is FIDOSessionError) {
                // The key answered: it refused, so nothing changed.
                throw YktermError.failed(words("cli.fido.pin.notChanged", ["reason": explained(e).1]))
            }
        }
    }

    struct VerifyPIN: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify", abstract: "Check the PIN and show the attempts left.")

        @OptionGroup var key: KeyOptions

        func run() async throws {
            let prompt = Prompt()
            let (operations, info) = try await FIDOCommand.pinOperations(key.choice, pinSet: true)
            let pin = try askPIN(prompt, words("fido.pin.pin"), minimum: info.minPINLength, new: false)
            let after = try await operations.verifyPIN(pin)
            out(
                after.retries.map { words("cli.fido.pin.correctRetries", ["count": String($0)]) }
                    ?? words("cli.fido.pin.correct"))
        }
    }

    /// Runs a settings operation without the PIN first: when the key has one and the operation gets that far
    /// (`FIDOOperationError.pinNeeded`, after the key's own checks), the PIN is asked for and it runs again. A key
    /// without a PIN, or a refusal, asks nothing.
    static func askingPIN<T>(_ prompt: Prompt, _ body: (String?) async throws -> T) async throws -> T {
        do {
            return try await body(nil)
        } catch FIDOOperationError.pinNeeded {
            // The PIN the key has: no rule to check before it is sent.
            return try await body(try askPIN(prompt, words("fido.pin.pin"), minimum: 0, new: false))
        }
    }

    /// `body` with the FIDO operations of the key `key` chooses, run as `askingPIN` runs a settings operation.
    static func askingPIN<T>(_ key: KeyOptions, _ body: (FIDOOperations, String?) async throws -> T) async throws
        -> T
    {
        try await askingPIN(Prompt()) { pin in try await body(fidoOperations(key.choice), pin) }
    }

    struct SetMinLength: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-min-length",
            abstract: "Raise the key's minimum PIN length, and name the sites that may read it.",
            discussion: """
                The minimum only grows: a lower one is refused before anything is sent, and only a FIDO reset \
                brings it back to the default. When the current PIN is shorter than the new minimum, the key \
                wants it changed before its next use (`ykterm fido pin change`). Each --rp-id names a relying \
                party that may read the minimum through the minPinLength extension when it registers a \
                credential; the list replaces the key's earlier one. Asks for the PIN when one is set.
                """)

        @OptionGroup var key: KeyOptions

        @Argument(help: "The new minimum, in characters (4 to 63).")
        var length: Int

        @Option(
            name: .customLong("rp-id"),
            help: ArgumentHelp(
                "A relying party that may read the minimum (repeatable).",
                valueName: "ID"))
        var rpIDs: [String] = []

        func run() async throws {
            // Checked here, not in validate(): an unknown option is reported first.
            guard (4...PINRules.maxBytes).contains(length) else {
                throw YktermError.usage(
                    words("cli.fido.pin.minLengthRange", ["max": String(PINRules.maxBytes), "length": String(length)]))
            }
            let (length, rpIDs) = (self.length, self.rpIDs)
            let forced = try await FIDOCommand.askingPIN(key) {
                try await $0.setMinPINLength(length, rpIDs: rpIDs, pin: $1)
            }
            out(words("cli.fido.pin.minLengthSet", ["length": String(length)]))
            if !rpIDs.isEmpty { out(words("cli.fido.pin.minLengthReaders", ["rps": rpIDs.joined(separator: ", ")])) }
            if forced {
                out(words("cli.fido.pin.currentTooShort"))
            }
        }
    }

    struct ForceChange: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "force-change",
            abstract: "Make the key refuse its PIN until it is changed.",
            discussion: """
                The PIN stays valid for `ykterm fido pin change` only: signing in, credential management and \
                settings fail until a new PIN is set that way. Asks for the current PIN.
                """)

        @OptionGroup var key: KeyOptions

        func run() async throws {
            try await FIDOCommand.askingPIN(key) { try await $0.forcePINChange(pin: $1) }
            out(words("cli.fido.pin.forcedChange"))
        }
    }
}
