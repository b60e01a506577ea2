import FoundationEssentials

/// An OpenSSH key whose private half stays on a FIDO key (OpenSSH's PROTOCOL.u2f): `sk-ecdsa-sha2-nistp256@openssh.com`
/// (an ES256 credential) or `sk-ssh-ed25519@openssh.com` (an EdDSA one). What OpenSSH keeps of it: the public key,
/// the application (the credential's relying party, "ssh:" and a name), the flags it asks the key with, and the
/// key handle (the credential ID), written as an `openssh-key-v1` file with no secret in it.
public struct SecurityKeySSHKey: Sendable, Hashable {
    public enum PublicKey: Sendable, Hashable {
        /// The uncompressed P-256 point (04, X, Y).
        case ecdsaP256([UInt8])
        /// The Ed25519 public key (32 bytes).
        case ed25519([UInt8])
    }

    /// OpenSSH's flags for the key (`SSH_SK_*`).
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Every signature needs a touch.
        public static let userPresenceRequired = Flags(rawValue: 0x01)
        /// Every signature needs the PIN (or the key's built-in verification).
        public static let userVerificationRequired = Flags(rawValue: 0x04)
        /// The credential is discoverable (kept on the key; `ssh-keygen -K` finds it).
        public static let residentKey = Flags(rawValue: 0x20)
    }

    public var publicKey: PublicKey
    public var application: String
    public var flags: Flags
    public var keyHandle: [UInt8]

    public init(publicKey: PublicKey, application: String, flags: Flags, keyHandle: [UInt8]) {
        self.publicKey = publicKey
        self.application = application
        self.flags = flags
        self.keyHandle = keyHandle
    }

    /// The key from a credential's COSE_Key (EC2 P-256 with ES256, or OKP Ed25519 with EdDSA); nil for any other.
    public init?(cose: CBOR, application: String, flags: Flags, keyHandle: [UInt8]) {
        let type = cose[COSE.Key.keyType]?.int
        let curve = cose[COSE.Key.curve]?.int
        guard let x = cose[COSE.Key.x]?.bytes else { return nil }
        switch (type, curve) {
        case (COSE.keyTypeEC2, COSE.curveP256):
            guard x.count == 32, let y = cose[COSE.Key.y]?.bytes, y.count == 32 else { return nil }
            publicKey = .ecdsaP256([0x04] + x + y)
        case (COSE.keyTypeOKP, COSE.curveEd25519):
            guard x.count == 32 else { return nil }
            publicKey = .ed25519(x)
        default:
            return nil
        }
        self.application = application
        self.flags = flags
        self.keyHandle = keyHandle
    }

    public var typeName: String {
        switch publicKey {
        case .ecdsaP256: "sk-ecdsa-sha2-nistp256@openssh.com"
        case .ed25519: "sk-ssh-ed25519@openssh.com"
        }
    }

    /// The public key's fields after its type name (the public blob and the private key share them).
    private func publicFields(_ w: inout SSHWireWriter) {
        switch publicKey {
        case .ecdsaP256(let q):
            w.string("nistp256")
            w.string(q)
        case .ed25519(let k):
            w.string(k)
        }
        w.string(application)
    }

    /// The public key blob, as `authorized_keys` carries it (base64) and its fingerprint hashes it.
    public var publicBlob: [UInt8] {
        var w = SSHWireWriter()
        w.string(typeName)
        publicFields(&w)
        return w.bytes
    }

    /// An `authorized_keys` line: the type, the blob in base64, and `comment` when there is one.
    public func authorizedKeysLine(comment: String? = nil) -> String {
        SSHPublicKey.line(type: typeName, blob: publicBlob, comment: comment)
    }

    /// The fingerprint as `ssh-keygen -l` prints it: "SHA256:" and the digest in base64 without padding.
    public var fingerprint: String { SSHPublicKey.fingerprint(blob: publicBlob) }

    /// The key as OpenSSH writes a security key's private key file (`openssh-key-v1`, not encrypted: it holds no
    /// secret, only the key handle), with `comment`. `checkInt` is the random number the file repeats to show
    /// that it was decrypted right.
    public func privateKeyFile(comment: String, checkInt: UInt32 = UInt32.random(in: .min ... .max)) -> String {
        var key = SSHWireWriter()
        key.uint32(checkInt)
        key.uint32(checkInt)
        key.string(typeName)
        publicFields(&key)
        key.uint8(flags.rawValue)
        key.string(keyHandle)
        key.string([UInt8]())  // reserved
        key.string(comment)
        // Padded with 1, 2, 3, ... to the cipher's block size ("none": 8).
        var pad: UInt8 = 1
        while key.bytes.count % 8 != 0 {
            key.uint8(pad)
            pad += 1
        }
        var file = SSHWireWriter()
        file.raw(Array(Self.magic.utf8) + [0])
        file.string("none")
        file.string("none")
        file.string([UInt8]())
        file.uint32(1)
        file.string(publicBlob)
        file.string(key.bytes)
        let base64 = Data(file.bytes).base64EncodedString()
        var lines = ["-----BEGIN OPENSSH PRIVATE KEY-----"]
        var rest = Substring(base64)
        while !rest.isEmpty {
            lines.append(String(rest.prefix(70)))
            rest = rest.dropFirst(70)
        }
        lines.append("-----END OPENSSH PRIVATE KEY-----")
        return lines.joined(separator: "\n") + "\n"
    }

    static let magic = "openssh-key-v1"

    /// Reads a security key's private key file as `privateKeyFile` (and ssh-keygen) write it: the key and its
    /// comment. Encrypted files and other key types are refused.
    public static func parse(privateKeyFile text: String) throws(SSHKeyFileError) -> (
        key: SecurityKeySSHKey, comment: String
    ) {
        let body = text.split(separator: "\n").map { String($0).trimmingSpaces }
        guard let begin = body.firstIndex(of: "-----BEGIN OPENSSH PRIVATE KEY-----"),
            let end = body.firstIndex(of: "-----END OPENSSH PRIVATE KEY-----"), begin < end,
            let data = Data(base64Encoded: body[(begin + 1)..<end].joined())
        else { throw .notAnOpenSSHKey }
        var r = SSHWireReader(Array(data))
        guard try r.raw(magic.utf8.count + 1) == Array(magic.utf8) + [0] else { throw .notAnOpenSSHKey }
        guard try r.text() == "none", try r.text() == "none" else { throw .encrypted }
        _ = try r.string()
        guard try r.uint32() == 1 else { throw .unsupported("several keys in one file") }
        let blob = try r.string()
        var k = SSHWireReader(try r.string())
        guard try k.uint32() == k.uint32() else { throw .malformed }
        let type = try k.text()
        let publicKey: PublicKey
        switch type {
        case "sk-ecdsa-sha2-nistp256@openssh.com":
            guard try k.text() == "nistp256" else { throw .malformed }
            publicKey = .ecdsaP256(try k.string())
        case "sk-ssh-ed25519@openssh.com":
            publicKey = .ed25519(try k.string())
        default:
            throw .unsupported(type)
        }
        let key = SecurityKeySSHKey(
            publicKey: publicKey, application: try k.text(), flags: Flags(rawValue: try k.uint8()),
            keyHandle: try k.string())
        _ = try k.string()  // reserved
        let comment = try k.text()
        guard key.publicBlob == blob else { throw .malformed }
        return (key, comment)
    }
}

/// Why a file is not a security key's OpenSSH private key file.
public enum SSHKeyFileError: Error, Equatable, Sendable {
    case notAnOpenSSHKey
    case encrypted
    case unsupported(String)
    case malformed
}

/// The SSH wire format's pieces (RFC 4251 section 5): big-endian uint32, strings with a uint32 length.
struct SSHWireWriter {
    var bytes = [UInt8]()

    mutating func uint8(_ v: UInt8) { bytes.append(v) }
    mutating func uint32(_ v: UInt32) {
        bytes += [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }
    mutating func raw(_ v: [UInt8]) { bytes += v }
    mutating func string(_ v: [UInt8]) {
        uint32(UInt32(v.count))
        bytes += v
    }
    mutating func string(_ v: String) { string(Array(v.utf8)) }
}

struct SSHWireReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func raw(_ count: Int) throws(SSHKeyFileError) -> [UInt8] {
        guard count >= 0, bytes.count - offset >= count else { throw .malformed }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }
    mutating func uint8() throws(SSHKeyFileError) -> UInt8 { try raw(1)[0] }
    mutating func uint32() throws(SSHKeyFileError) -> UInt32 {
        try raw(4).reduce(0) { $0 << 8 | UInt32($1) }
    }
    mutating func string() throws(SSHKeyFileError) -> [UInt8] { try raw(Int(try uint32())) }
    mutating func text() throws(SSHKeyFileError) -> String {
        guard let s = String(validating: try string(), as: UTF8.self) else { throw .malformed }
        return s
    }
}
