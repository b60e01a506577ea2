import ArgumentParser
import AuthenticatorModel
import FoundationEssentials
import Glibc
import KeyKit

/// OATH on several keys at once (`--all-keys`, `--device A,B`): each key answers in its own time, in parallel; a
/// key whose password is needed is asked for it once, naming the key (one after the other: they share the
/// terminal or standard input), and runs again.
enum OATHOnKeys {
    ///
    /// Keys whose serial `keys` left for later are identified once opened (`EveryKey.identify`), before any is named.
    static func run<T: Sendable>(
        _ keys: inout [KeyInHand], remember: Bool, prompt: Prompt,
        _ body: @escaping @Sendable (OATHOperations, OATHOperations.Unlock) async throws -> OATHOperations.Outcome<T>
    ) async -> [Result<T, any Error>] {
        let operations = keys.map { OATHOperations($0.opener(), store: RememberedKeys.reporting()) }
        var outcomes = await withTaskGroup(of: (Int, Result<OATHOperations.Outcome<T>, any Error>).self) { group in
            for (i, ops) in operations.enumerated() {
                group.addTask {
                    do { return (i, .success(try await body(ops, OATHOperations.Unlock()))) } catch {
                        return (i, .failure(error))
                    }
                }
            }
            var out = [Result<OATHOperations.Outcome<T>, any Error>?](repeating: nil, count: operations.count)
            for await (i, r) in group { out[i] = r }
            return out.map { $0! }
        }
        let deviceIDs = outcomes.map { outcome -> String? in
            switch outcome {
            case .success(.done(_, let opened)), .success(.locked(let opened)): return opened.deviceID
            case .failure: return nil
            }
        }
        await EveryKey.identify(&keys, oathDeviceIDs: deviceIDs)
        for i in outcomes.indices {
            guard case .success(.locked(let opened)) = outcomes[i] else { continue }
            if opened.rememberedForgotten { warn("ykterm: \(keys[i].label): " + words("cli.oath.rememberedForgotten")) }
            do {
                let password = SecretBytes(
                    utf8: try prompt.secret(words("cli.oath.passwordOf", ["key": keys[i].label])))
                outcomes[i] = .success(
                    try await body(operations[i], OATHOperations.Unlock(password: password, remember: remember)))
            } catch {
                outcomes[i] = .failure(error)
            }
        }
        return outcomes.map { outcome in
            switch outcome {
            case .success(.done(let value, _)): return .success(value)
            case .success(.locked): return .failure(OATHError.passwordRequired)
            case .failure(let error): return .failure(error)
            }
        }
    }

    /// The keys `--all-keys` or `--device A,B` name (every key with OATH, or those, in that order).
    /// With `serialsLater`, serials are found by `run` once the keys were opened (see `EveryKey.identify`): for the
    /// commands that need no serial before they ask the keys.
    static func keys(
        allKeys: Bool, devices: [String], reader: String?, serialsLater: Bool = false
    ) async throws -> [KeyInHand] {
        let serials = allKeys ? nil : try devices.map { try KeyChoice.serial(device: $0) }
        return try await EveryKey.keys(with: .oath, serials: serials, reader: reader, serialsLater: serialsLater)
    }

    /// The keys' results, or the first failure when every key failed; a key that failed while others answered is
    /// named on standard error and left out.
    static func answered<T>(_ keys: [KeyInHand], _ results: [Result<T, any Error>]) throws -> [(KeyInHand, T)] {
        var out = [(KeyInHand, T)]()
        var firstError: (any Error)?
        for (key, result) in zip(keys, results) {
            switch result {
            case .success(let value): out.append((key, value))
            case .failure(let error):
                firstError = firstError ?? error
                warn("ykterm: \(key.label): " + explained(error).1)
            }
        }
        if out.isEmpty, let firstError { throw firstError }
        return out
    }

    /// "daily · backup" (key labels), and for an account missing from a key present: "not on backup".
    static func holders(_ keys: [KeyInHand], _ indices: [Int]) -> String {
        var text = indices.map { keys[$0].label }.joined(separator: " · ")
        let missing = keys.indices.filter { !indices.contains($0) }.map { keys[$0].label }
        if !missing.isEmpty { text += "  " + words("cli.oath.notOn", ["keys": missing.joined(separator: ", ")]) }
        return text
    }
}

extension KeyJSON {
    init(_ key: KeyInHand) {
        serial = key.serial.map(Int.init)
        name = key.name
    }
}

extension OATHCommand {
    /// `oath list --all-keys`: each account once, with the keys that hold it.
    static func listAcrossKeys(_ options: OATHChoice, json: Bool) async throws {
        var keys = try await OATHOnKeys.keys(
            allKeys: true, devices: [], reader: options.key.reader, serialsLater: true)
        let at = now()
        let results = await OATHOnKeys.run(&keys, remember: options.remember, prompt: Prompt()) { ops, unlock in
            try await ops.accounts(at: at, unlock)
        }
        let answered = try OATHOnKeys.answered(keys, results)
        let merged = OATHAcrossKeys.merge(answered.map(\.1)) { $0.credential.id }
        let present = answered.map(\.0)
        if json {
            try printJSON(
                merged.map { m in
                    OATHAcrossKeysJSON(
                        row: OATHAccountJSON(m.first.credential, digits: m.first.digits),
                        keys: m.keys.map { KeyJSON(present[$0]) })
                })
            return
        }
        let width = min(merged.map(\.id.count).max() ?? 0, 60)
        for m in merged {
            let pad = String.spaces(max(width - m.id.count, 0))
            out("\(m.id)\(pad)  " + OATHOnKeys.holders(present, m.keys))
        }
    }

    /// `oath code --all-keys`: each account once, with the code of the first key that holds it and the keys that
    /// hold it. Two keys that give the same account different codes hold different secrets: said on standard
    /// error.
    static func codesAcrossKeys(_ options: OATHChoice, query: String?, json: Bool) async throws {
        var keys = try await OATHOnKeys.keys(
            allKeys: true, devices: [], reader: options.key.reader, serialsLater: true)
        let at = now()
        let results = await OATHOnKeys.run(&keys, remember: options.remember, prompt: Prompt()) { ops, unlock in
            try await ops.codes(matching: query, at: at, algorithms: json, unlock)
        }
        let answered = try OATHOnKeys.answered(keys, results)
        let merged = OATHAcrossKeys.merge(answered.map(\.1)) { $0.entry.credential.id }
        let present = answered.map(\.0)
        if let query, merged.isEmpty { throw YktermError.failed(words("cli.oath.noMatch", ["query": query])) }
        for m in merged {
            let codes = Set(m.holders.compactMap { $0.row.entry.code?.value })
            if codes.count > 1 {
                warn(
                    "ykterm: "
                        + words(
                            "cli.oath.codesDiffer",
                            ["account": m.id, "keys": m.keys.map { present[$0].label }.joined(separator: ", ")]))
            }
        }
        if json {
            try printJSON(
                merged.map { m in
                    let row = m.first
                    var c = row.entry.credential
                    c.algorithm = row.listed?.algorithm
                    let e = row.entry
                    return OATHAcrossKeysJSON(
                        row: OATHCodeJSON(
                            account: OATHAccountJSON(c, digits: e.digits), code: e.code?.value,
                            validFrom: e.code.map { Int($0.validFrom) },
                            validTo: e.code.flatMap { $0.validTo == Int64.max ? nil : Int($0.validTo) }),
                        keys: m.keys.map { KeyJSON(present[$0]) })
                })
            return
        }
        let width = min(merged.map(\.id.count).max() ?? 0, 60)
        let lines = merged.map { m -> String in
            let e = m.first.entry
            let code =
                e.code?.value
                ?? (e.credential.touch == true
                    ? "[" + words("cli.oath.touchTag") + "]" : e.credential.type == .hotp ? "[HOTP]" : "")
            let pad = String.spaces(max(width - m.id.count, 0))
            return "\(m.id)\(pad)  \(code.padding(8))  " + OATHOnKeys.holders(present, m.keys)
        }
        if !lines.isEmpty { out(lines.concatenated(separator: "\n")) }
    }
}

extension String {
    /// The text, then spaces up to `width` characters.
    fileprivate func padding(_ width: Int) -> String { self + String.spaces(max(0, width - count)) }
}

extension OATHCommand {
    /// `oath add --all-keys` / `--device A,B`: the accounts to each key, in parallel. A key that already holds one
    /// of the IDs is asked about (per key and ID, or --force); a key that refuses or fails is named, and the
    /// others keep what they were given. Exit status 1 when a key did not take them.
    static func addAcrossKeys(
        _ accounts: [CredentialData], _ options: OATHKeysOptions, force: Bool, prompt: Prompt
    ) async throws {
        var keys = try await OATHOnKeys.keys(
            allKeys: options.allKeys, devices: options.devices, reader: options.reader)
        var results = await OATHOnKeys.run(&keys, remember: options.remember, prompt: prompt) { ops, unlock in
            try await ops.add(accounts, replacing: force, unlock)
        }
        for (i, key) in keys.enumerated() {
            guard case .success(.taken(let ids)) = results[i] else { continue }
            let confirmed = ids.allSatisfy { id in
                prompt.confirm(words("cli.oath.overwriteOn", ["account": id, "key": key.label]))
            }
            guard confirmed else {
                results[i] = .failure(OATHError.credentialExists(ids[0]))
                continue
            }
            var one = [key]
            results[i] = await OATHOnKeys.run(&one, remember: options.remember, prompt: prompt) { ops, unlock in
                try await ops.add(accounts, replacing: true, unlock)
            }[0]
        }
        var failed = false
        for (key, result) in zip(keys, results) {
            switch result {
            case .success(.added(let ids, _)):
                for id in ids { out(words("cli.oath.addedOn", ["account": id, "key": key.label])) }
            case .success(.taken(let ids)):
                failed = true
                warn("ykterm: \(key.label): " + explained(OATHError.credentialExists(ids[0])).1)
            case .failure(let error):
                failed = true
                warn("ykterm: \(key.label): " + explained(error).1)
            }
        }
        if failed { throw ExitCode(ExitStatus.failed) }
    }
}

extension OATHCommand {
    struct Diff: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "diff",
            abstract: "Is my backup complete? The accounts on one key and not the other, and those set up differently.",
            discussion: """
                Compares the OATH accounts of two keys by ID and by their settings (type, digits, period, hash \
                algorithm, touch). Without KEY_A and KEY_B: the two keys plugged in. Secrets cannot be read from a \
                key, so two accounts with the same ID and settings may still hold different secrets: compare their \
                codes (ykterm oath code --all-keys warns when they differ). Exit status 0 when the keys hold the \
                same accounts, 1 when they differ.
                """)

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Only keys whose reader name, hidraw path or HID product name contains NAME.", valueName: "NAME"))
        var reader: String?

        @Argument(help: ArgumentHelp("The first key: serial number or name.", valueName: "KEY_A"))
        var keyA: String?

        @Argument(help: ArgumentHelp("The second key: serial number or name.", valueName: "KEY_B"))
        var keyB: String?

        @Flag(name: .long, help: "Remember the access keys of the keys after a successful unlock.")
        var remember = false

        @Flag(name: .long, help: "JSON: the two keys (serial, name), only_a, only_b, and differing (id, settings).")
        var json = false

        func validate() throws {
            if (keyA == nil) != (keyB == nil) { throw ValidationError(words("cli.oath.diff.twoKeys")) }
            for k in [keyA, keyB].compactMap({ $0 }) { _ = try KeyChoice.serial(device: k) }
        }

        func run() async throws {
            let named = [keyA, keyB].compactMap { $0 }
            var keys = try await OATHOnKeys.keys(allKeys: named.isEmpty, devices: named, reader: reader)
            if named.isEmpty {
                guard keys.count == 2 else {
                    throw YktermError.usage(
                        words(
                            "cli.oath.diff.notTwo",
                            ["count": String(keys.count), "keys": keys.map(\.label).joined(separator: ", ")]))
                }
            }
            keys = Array(keys.prefix(2))
            let at = now()
            let results = await OATHOnKeys.run(&keys, remember: remember, prompt: Prompt()) { ops, unlock in
                try await ops.accounts(at: at, unlock)
            }
            let accounts = try results.map { try $0.get() }
            let difference = OATHAcrossKeys.difference(accounts[0], accounts[1])
            let (a, b) = (keys[0].label, keys[1].label)
            if json {
                try printJSON(DiffJSON(keys: keys.map(KeyJSON.init), difference))
            } else if difference.isEmpty {
                out(words("cli.oath.diff.same", ["a": a, "b": b, "count": String(accounts[0].count)]))
            } else {
                for id in difference.onlyA {
                    out(words("cli.oath.diff.onlyOn", ["account": id, "key": a, "other": b]))
                }
                for id in difference.onlyB {
                    out(words("cli.oath.diff.onlyOn", ["account": id, "key": b, "other": a]))
                }
                for d in difference.differing {
                    let settings = d.settings.map { s in
                        words("cli.oath.diff.setting", ["setting": s.setting.rawValue, "a": s.a, "b": s.b])
                    }
                    out(
                        words("cli.oath.diff.differs", ["account": d.id, "settings": settings.joined(separator: "; ")]))
                }
            }
            if !json { warn(words("cli.oath.diff.secrets")) }
            if !difference.isEmpty { throw ExitCode(ExitStatus.failed) }
        }
    }
}

extension DiffJSON {
    init(keys: [KeyJSON], _ d: OATHAcrossKeys.Difference) {
        self.keys = keys
        onlyA = d.onlyA
        onlyB = d.onlyB
        differing = d.differing.map { x in
            Differing(id: x.id, settings: x.settings.map { Setting(setting: $0.setting.rawValue, a: $0.a, b: $0.b) })
        }
    }
}

extension OATHCommand {
    /// `oath delete --all-keys`: the account is found on each key first, then one question names the keys that hold
    /// it; it is deleted from each in parallel. A key that fails is named, the others go on (exit 1).
    static func deleteAcrossKeys(_ query: String, _ options: OATHChoice, force: Bool, prompt: Prompt) async throws {
        var keys = try await OATHOnKeys.keys(allKeys: true, devices: [], reader: options.key.reader)
        let listed = await OATHOnKeys.run(&keys, remember: options.remember, prompt: prompt) { ops, unlock in
            try await ops.list(unlock)
        }
        var holding = [(KeyInHand, Credential)]()
        var firstError: (any Error)?
        for result in try OATHOnKeys.answered(keys, listed) {
            do {
                holding.append((result.0, try OATHOperations.find(.matching(query), in: result.1)))
            } catch OATHError.noSuchCredential {
                continue
            } catch {
                firstError = firstError ?? error
                warn("ykterm: \(result.0.label): " + explained(error).1)
            }
        }
        guard !holding.isEmpty else { throw firstError ?? OATHError.noSuchCredential(query) }
        let ids = Set(holding.map { $0.1.id.string }).sorted().joined(separator: ", ")
        let names = holding.map { $0.0.label }.joined(separator: ", ")
        try prompt.requireForce(force, otherwise: words("cli.oath.deleteNeedsForce", ["account": ids]))
        try prompt.confirmDeletion(force, words("cli.oath.deleteQuestionOn", ["account": ids, "keys": names]))
        let results = await withTaskGroup(of: (Int, Result<String, any Error>).self) { group in
            for (i, (key, credential)) in holding.enumerated() {
                group.addTask {
                    let ops = OATHOperations(key.opener(), store: RememberedKeys.reporting())
                    do {
                        // The key opened a moment ago: its remembered access key (or none) opens it again.
                        switch try await ops.delete(.account(credential), OATHOperations.Unlock()) {
                        case .done(let changed, _): return (i, .success(changed.detail))
                        case .locked: return (i, .failure(OATHError.passwordRequired))
                        }
                    } catch {
                        return (i, .failure(error))
                    }
                }
            }
            var out = [Result<String, any Error>?](repeating: nil, count: holding.count)
            for await (i, r) in group { out[i] = r }
            return out.map { $0! }
        }
        var failed = firstError != nil
        for ((key, _), result) in zip(holding, results) {
            switch result {
            case .success(let id): out(words("cli.oath.deletedFrom", ["account": id, "key": key.label]))
            case .failure(let error):
                failed = true
                warn("ykterm: \(key.label): " + explained(error).1)
            }
        }
        if failed { throw ExitCode(ExitStatus.failed) }
    }

    /// `oath rename --all-keys`: the account renamed on every key that holds it, in parallel; a key that does not
    /// hold it is said, one that fails is named (exit 1).
    static func renameAcrossKeys(_ query: String, to newText: String, _ options: OATHChoice, prompt: Prompt)
        async throws
    {
        var keys = try await OATHOnKeys.keys(allKeys: true, devices: [], reader: options.key.reader)
        let results = await OATHOnKeys.run(&keys, remember: options.remember, prompt: prompt) { ops, unlock in
            try await ops.rename(.matching(query), to: newText, unlock)
        }
        var renamed = 0, failed = false
        for (key, result) in zip(keys, results) {
            switch result {
            case .success(let changed):
                renamed += 1
                out(
                    words(
                        "cli.oath.renamedOn", ["old": changed.detail.old, "new": changed.detail.new, "key": key.label]))
            case .failure(OATHError.noSuchCredential):
                warn(words("cli.oath.notOnKey", ["account": query, "key": key.label]))
            case .failure(let error):
                failed = true
                warn("ykterm: \(key.label): " + explained(error).1)
            }
        }
        if renamed == 0 && !failed { throw OATHError.noSuchCredential(query) }
        if failed { throw ExitCode(ExitStatus.failed) }
    }
}
