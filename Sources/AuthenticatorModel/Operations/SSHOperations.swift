import Glibc
import KeyKit

/// An SSH key on the key: a discoverable FIDO credential whose relying party is `ssh:...`, as OpenSSH makes them
/// (`ssh-keygen -t ed25519-sk -O resident`) and finds them again (`ssh-keygen -K`).
public struct SSHKeyOnKey: Sendable, Hashable {
    /// The key as OpenSSH sees it: public key, application, flags and key handle (the credential ID).
    public var key: SecurityKeySSHKey
    /// The credential's user ID: OpenSSH's `-O user=NAME` (NUL-padded to 32 bytes), or 32 zero bytes.
    public var userID: [UInt8]
    /// The credential's user name ("openssh" for the keys OpenSSH and ykterm make).
    public var userName: String?
    /// The credProtect level: 2 for a resident key, 3 when every use needs the PIN.
    public var credProtect: Int?

    public var credentialID: [UInt8] { key.keyHandle }
    public var application: String { key.application }

    /// The user OpenSSH was given (`-O user=`): the user ID without its trailing zero bytes; nil when it is all
    /// zeros (no user given).
    public var user: String? {
        let trimmed = Self.userBytes(userID)
        guard !trimmed.isEmpty else { return nil }
        return String(decoding: trimmed, as: UTF8.self)
    }

    /// The `authorized_keys` line, with the application as its comment (as `ssh-keygen -K` writes the `.pub`).
    public var authorizedKeysLine: String { key.authorizedKeysLine(comment: application) }

    /// The file name `ssh-keygen -K` gives the key (`exportName(type:application:userID:)`).
    public var exportName: String {
        switch key.publicKey {
        case .ecdsaP256: Self.exportName(type: .ecdsa, application: application, userID: userID)
        case .ed25519: Self.exportName(type: .ed25519, application: application, userID: userID)
        }
    }

    /// The file name `ssh-keygen -K` gives a key of `type` for `application` and `userID`: `id_ecdsa_sk_rk` or
    /// `id_ed25519_sk_rk`, then `_` and the application without "ssh:", then `_` and the user (in hex when it holds
    /// a path character). Known before the key is made, so a file it would replace can be asked about first.
    public static func exportName(type: SSHKeyType, application: String, userID: [UInt8]) -> String {
        let name = type == .ecdsa ? "id_ecdsa_sk_rk" : "id_ed25519_sk_rk"
        var suffix = application
        for prefix in ["ssh://", "ssh:"] where suffix.hasPrefix(prefix) {
            suffix = String(suffix.dropFirst(prefix.count))
            break
        }
        let trimmed = userBytes(userID)
        if !trimmed.isEmpty {
            let text = String(decoding: trimmed, as: UTF8.self)
            let unsafe = text.contains("/") || text.contains("..") || text.contains("\\")
            suffix += "_" + (unsafe ? trimmed.hex : text)
        }
        return suffix.isEmpty ? name : name + "_" + suffix
    }

    /// The user ID OpenSSH gives a key made for `user` (`-O user=`): its UTF-8, NUL-padded to 32 bytes; 32 zero
    /// bytes without one. A user of 32 bytes or more is refused.
    public static func userID(for user: String?) throws(SSHOperationError) -> [UInt8] {
        var userID = [UInt8](repeating: 0, count: 32)
        if let user {
            let bytes = Array(user.utf8)
            guard bytes.count < 32 else { throw .userTooLong(user) }
            userID.replaceSubrange(0..<bytes.count, with: bytes)
        }
        return userID
    }

    /// The user OpenSSH was given, as bytes: the user ID without its trailing zero bytes.
    static func userBytes(_ userID: [UInt8]) -> [UInt8] {
        Array(userID.reversed().drop(while: { $0 == 0 }).reversed())
    }

    /// The files `writeFiles(to:)` writes for `path`: the handle file and its `.pub`.
    public static func files(at path: String) -> [String] { [path, path + ".pub"] }

    /// Writes the handle file (`path`, 0600) and the `.pub` beside it (0644), as `ssh-keygen -K` does; a missing
    /// directory is made (0700, as `~/.ssh` is). Existing files are replaced: the faces ask first.
    public func writeFiles(to path: String) throws {
        let directory = PathString.directory(of: path)
        if access(directory, F_OK) != 0 { mkdir(directory, 0o700) }
        try AtomicFile.write(Array(key.privateKeyFile(comment: application).utf8), to: path, mode: 0o600)
        try AtomicFile.write(Array((authorizedKeysLine + "\n").utf8), to: path + ".pub", mode: 0o644)
    }
}

/// A PIV slot's key in SSH's form. OpenSSH reaches it through a PKCS #11 module (`ssh -I libykcs11.so`), which
/// shows the slot only while it holds a certificate.
public struct PIVSSHKey: Sendable, Hashable {
    public var slot: PIV.Slot
    public var publicKey: AsymmetricPublicKey
    /// The SSH key type (`ssh-rsa`, `ecdsa-sha2-nistp256`, `ssh-ed25519`, ...).
    public var typeName: String
    public var fingerprint: String
    /// The certificate's subject; nil when the slot holds no certificate.
    public var certificateSubject: String?

    /// nil for a key SSH has no type for (X25519).
    public init?(slot: PIV.Slot, publicKey: AsymmetricPublicKey, certificateSubject: String?) {
        guard let (type, _) = SSHPublicKey.blob(publicKey), let fingerprint = SSHPublicKey.fingerprint(publicKey)
        else { return nil }
        self.slot = slot
        self.publicKey = publicKey
        self.typeName = type
        self.fingerprint = fingerprint
        self.certificateSubject = certificateSubject
    }

    /// The slot as it is read: its key from the metadata (firmware 5.3 and later), else the certificate's.
    public init?(_ s: PIVOverview.Slot) {
        guard
            let key = s.key?.publicKey
                ?? s.certificate?.subjectPublicKeyInfo.flatMap({ try? AsymmetricPublicKey(spki: $0) })
        else { return nil }
        self.init(slot: s.slot, publicKey: key, certificateSubject: s.certificate?.subject)
    }

    /// The comment `ykterm piv ssh-key` gives the line unless told another.
    public static func comment(_ slot: PIV.Slot) -> String { "PIV slot \(slot)" }

    /// The `authorized_keys` line, with `comment(slot)` as its comment.
    public var authorizedKeysLine: String {
        SSHPublicKey.authorizedKeysLine(publicKey, comment: Self.comment(slot)) ?? ""
    }
}

extension PIVOperations {
    /// The slots whose key SSH can use (every key type but X25519), in slot order, from one read of the application.
    public func sshKeys() async throws -> [PIVSSHKey] {
        try await overview().slots.compactMap(PIVSSHKey.init).sorted { $0.slot < $1.slot }
    }
}

/// What `newSSHKey` makes.
public enum SSHKeyType: String, Sendable, CaseIterable {
    case ed25519, ecdsa

    var coseAlgorithm: Int { self == .ed25519 ? COSE.Algorithm.edDSA : COSE.Algorithm.es256 }
}

/// A question or refusal of the SSH key operations.
public enum SSHOperationError: Error, Sendable, Equatable {
    /// The key already holds an SSH key for this application and user: making one replaces it.
    case exists(application: String, user: String?)
    /// An application that is not `ssh:` and a name.
    case notAnSSHApplication(String)
    /// A user name longer than the 31 bytes OpenSSH's user ID holds.
    case userTooLong(String)
    /// No SSH key on the key has this credential ID (or unique start of it).
    case noSuchKey(String)
    /// More than one SSH key starts with this ID.
    case ambiguousKey(String)
}

extension FIDOOperations {
    /// Every SSH key on the key (discoverable credentials of `ssh:` relying parties), with a token for credential
    /// management (`auth`).
    public func sshKeys(_ auth: FIDOAuthorization) async throws -> [SSHKeyOnKey] {
        try await withAuthorized(auth) { s in
            let builtInUV = await s.info.options["uv"] == true
            return try await Self.sshKeys(s, builtInUV: builtInUV)
        }
    }

    static func sshKeys(_ s: CTAP2Session, builtInUV: Bool) async throws -> [SSHKeyOnKey] {
        var out = [SSHKeyOnKey]()
        for rp in try await s.relyingParties() where rp.id.lowercased().hasPrefix("ssh:") {
            for c in try await s.credentials(of: rp) {
                // As `ssh-keygen -K` gives them: a touch and a resident key always; the PIN for credProtect 3
                // on a key that has no verification of its own.
                var flags: SecurityKeySSHKey.Flags = [.userPresenceRequired, .residentKey]
                if c.credProtect == 3 && !builtInUV { flags.insert(.userVerificationRequired) }
                guard let cose = c.publicKey,
                    let key = SecurityKeySSHKey(
                        cose: cose, application: rp.id, flags: flags, keyHandle: c.credentialID)
                else { continue }
                out.append(
                    SSHKeyOnKey(key: key, userID: c.user.id, userName: c.user.name, credProtect: c.credProtect))
            }
        }
        return out.sorted { ($0.application, $0.user ?? "") < ($1.application, $1.user ?? "") }
    }

    /// Makes an SSH key as OpenSSH does for `ssh-keygen -t TYPE-sk -O resident -O application=… -O user=…`: a
    /// discoverable credential for `application` with user ID `user` (NUL-padded to 32 bytes), user name and
    /// display name "openssh", credProtect 2 (3 with `verifyRequired`). A key that already holds an SSH key for
    /// this application and user is refused (`SSHOperationError.exists`) unless `replacing`. The PIN, when the key
    /// has one, is needed (`FIDOOperationError.pinNeeded`). Needs a touch.
    public func newSSHKey(
        application: String, user: String?, type: SSHKeyType, verifyRequired: Bool, touchRequired: Bool,
        replacing: Bool, pin: String?
    ) async throws -> SSHKeyOnKey {
        guard application.hasPrefix("ssh:") else { throw SSHOperationError.notAnSSHApplication(application) }
        let userID = try SSHKeyOnKey.userID(for: user)
        return try await withSession { s in
            let pinSet = await s.info.pinSet == true
            if pinSet && pin == nil { throw FIDOOperationError.pinNeeded }
            if let pin, pinSet, !replacing, await s.info.supportsCredentialManagement {
                try await s.verifyPIN(pin, permissions: [.credentialManagement])
                let builtInUV = await s.info.options["uv"] == true
                if try await Self.sshKeys(s, builtInUV: builtInUV).contains(where: {
                    $0.application == application && $0.userID == userID
                }) {
                    throw SSHOperationError.exists(application: application, user: user)
                }
                await s.dropToken()
            }
            if let pin, pinSet { try await s.verifyPIN(pin, permissions: [.makeCredential], rpID: application) }
            let clientDataHash = Crypto.random(32)
            let made = try await s.makeCredential(
                clientDataHash: clientDataHash, rp: .init(id: application, name: nil),
                user: CTAP2Session.User(id: userID, name: "openssh", displayName: "openssh"), residentKey: true,
                algorithms: [type.coseAlgorithm], credProtect: verifyRequired ? 3 : 2)
            await s.dropToken()
            try FIDOVerifier.verifyAttestation(made, clientDataHash: clientDataHash)
            var flags: SecurityKeySSHKey.Flags = [.residentKey]
            if touchRequired { flags.insert(.userPresenceRequired) }
            if verifyRequired { flags.insert(.userVerificationRequired) }
            guard let cose = made.authData.credentialPublicKey,
                let key = SecurityKeySSHKey(
                    cose: cose, application: application, flags: flags, keyHandle: made.credentialID)
            else {
                throw FIDOSessionError.malformed(Malformation(.credentialKey, .wrongKeyType))
            }
            return SSHKeyOnKey(key: key, userID: userID, userName: "openssh", credProtect: verifyRequired ? 3 : 2)
        }
    }

    /// The one SSH key whose credential ID starts with `query` (hex, any case).
    public static func sshKey(_ query: String, in keys: [SSHKeyOnKey]) throws -> SSHKeyOnKey {
        let q = query.lowercased()
        let matches = keys.filter { $0.credentialID.hex.hasPrefix(q) }
        guard !q.isEmpty, let first = matches.first else { throw SSHOperationError.noSuchKey(query) }
        guard matches.count == 1 else { throw SSHOperationError.ambiguousKey(query) }
        return first
    }
}
