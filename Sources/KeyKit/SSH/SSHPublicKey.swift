import FoundationEssentials

/// A plain public key (a PIV slot's) as OpenSSH writes it: `ssh-rsa`, `ecdsa-sha2-nistp256`,
/// `ecdsa-sha2-nistp384` or `ssh-ed25519` (RFC 4253 section 6.6, RFC 5656, RFC 8709).
public enum SSHPublicKey {
    /// The key type name and the public blob; nil for a key SSH has no type for (X25519).
    public static func blob(_ key: AsymmetricPublicKey) -> (type: String, blob: [UInt8])? {
        var w = SSHWireWriter()
        let type: String
        switch key.type {
        case .rsa:
            guard let n = key.rsaModulus, let e = key.rsaExponent else { return nil }
            type = "ssh-rsa"
            w.string(type)
            w.string(mpint(e))
            w.string(mpint(n))
        case .p256, .p384:
            guard let q = key.ecPoint else { return nil }
            let curve = key.type == .p256 ? "nistp256" : "nistp384"
            type = "ecdsa-sha2-" + curve
            w.string(type)
            w.string(curve)
            w.string(q)
        case .ed25519:
            guard let raw = key.raw else { return nil }
            type = "ssh-ed25519"
            w.string(type)
            w.string(raw)
        case .x25519, .p521, .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1:
            return nil
        }
        return (type, w.bytes)
    }

    /// The `authorized_keys` line: type, blob in base64, and `comment` when given.
    public static func authorizedKeysLine(_ key: AsymmetricPublicKey, comment: String? = nil) -> String? {
        blob(key).map { line(type: $0.type, blob: $0.blob, comment: comment) }
    }

    /// The fingerprint as `ssh-keygen -l` prints it.
    public static func fingerprint(_ key: AsymmetricPublicKey) -> String? {
        blob(key).map { fingerprint(blob: $0.blob) }
    }

    /// An `authorized_keys` line of any key type: the type, the blob in base64, and `comment` when there is one.
    static func line(type: String, blob: [UInt8], comment: String?) -> String {
        let line = type + " " + Data(blob).base64EncodedString()
        guard let comment, !comment.isEmpty else { return line }
        return line + " " + comment
    }

    /// "SHA256:" and the blob's SHA-256 in base64 without padding.
    static func fingerprint(blob: [UInt8]) -> String {
        "SHA256:" + Data(Crypto.digest(.sha256, blob)).base64EncodedString().filter { $0 != "=" }
    }

    /// An SSH mpint's bytes: big-endian, no leading zero bytes, and one zero byte before a top bit that is set.
    static func mpint(_ bigEndian: [UInt8]) -> [UInt8] {
        let trimmed = Array(bigEndian.drop(while: { $0 == 0 }))
        guard let first = trimmed.first else { return [] }
        return first & 0x80 != 0 ? [0] + trimmed : trimmed
    }
}
