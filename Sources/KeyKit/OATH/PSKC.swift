internal import CLibXML2
import FoundationEssentials

/// PSKC, the Portable Symmetric Key Container (RFC 6030): OATH accounts in an XML file, the way organisations hand
/// out HOTP and TOTP secrets in bulk and the way `ykman oath accounts add -O` writes one. The secrets are plain
/// (base64) or encrypted with AES-CBC under a pre-shared key or a key derived from a passphrase with PBKDF2, each
/// encrypted value with an HMAC over it (the MAC key itself encrypted in the file).
///
/// The XML is read and written by libxml2 (its tree API, no network, no external entities); this type turns the
/// tree into `CredentialData` and back. Names are matched by their local part, as other readers do: files in the
/// wild put the PBKDF2 parameters in one namespace or another, or in none.
public enum PSKC {
    public static let namespace = "urn:ietf:params:xml:ns:keyprov:pskc"
    static let algorithmPrefix = "urn:ietf:params:xml:ns:keyprov:pskc:"
    static let xmlenc = "http://www.w3.org/2001/04/xmlenc#"
    static let xmlenc11 = "http://www.w3.org/2009/xmlenc11#"
    static let xmldsig = "http://www.w3.org/2000/09/xmldsig#"
    static let xmldsigMore = "http://www.w3.org/2001/04/xmldsig-more#"
    static let pkcs5 = "http://www.rsasecurity.com/rsalabs/pkcs/schemas/pkcs-5v2-0#"

    /// How the file this writes is protected.
    public enum Protection: Sendable {
        case none
        /// A pre-shared AES key: 16 bytes (AES-128-CBC) or 32 (AES-256-CBC).
        case key(SecretBytes)
        /// A passphrase: the key is PBKDF2-HMAC-SHA256 of it (a random 16-byte salt, `iterations`), AES-128-CBC.
        case passphrase(SecretBytes)
    }

    /// What a file needs before its secrets can be read.
    public enum Needs: Sendable, Equatable {
        case nothing
        /// The pre-shared key (its name in the file, when it has one).
        case key(name: String?, length: Int)
        /// The passphrase the key is derived from.
        case passphrase(name: String?)
    }

    /// PBKDF2 iterations for a file written with a passphrase (python-pskc, which ykman uses, writes 100,000 too).
    public static let iterations = 100_000
    /// The most iterations a file may ask for: more would keep the command busy for minutes.
    public static let maximumIterations = 10_000_000
    /// The shortest passphrase taken for writing (as ykman asks).
    public static let minimumPassphraseLength = 8

    // MARK: - Writing

    /// `accounts` as a PSKC document (UTF-8 XML), every secret plain or encrypted as `protection` says. Each
    /// account is a key package: Key Id its credential ID, Issuer, the hash as Suite, the digits as ResponseFormat,
    /// FriendlyName ISSUER:NAME and UserId CN=NAME (what ykman writes and reads back), the secret, and the HOTP
    /// counter or the TOTP period.
    public static func document(_ accounts: [CredentialData], protection: Protection) throws(PSKCError) -> [UInt8] {
        var key: SecretBytes?
        var container = XMLElement("KeyContainer", namespace: namespace, attributes: [("Version", "1.0")])
        switch protection {
        case .none: break
        case .key(let k):
            guard k.count == 16 || k.count == 32 else { throw .keyLength(k.count) }
            key = k
            container.children.append(
                XMLElement(
                    "EncryptionKey", namespace: namespace,
                    children: [XMLElement("KeyName", namespace: xmldsig, text: "Pre-shared-key")]))
        case .passphrase(let passphrase):
            let salt = Crypto.random(16)
            key = Crypto.pbkdf2(.sha256, password: passphrase, salt: salt, iterations: iterations, length: 16)
            let params = XMLElement(
                "PBKDF2-params", namespace: pkcs5,
                children: [
                    XMLElement(
                        "Salt", namespace: nil,
                        children: [XMLElement("Specified", namespace: nil, text: Data(salt).base64EncodedString())]),
                    XMLElement("IterationCount", namespace: nil, text: String(iterations)),
                    XMLElement("KeyLength", namespace: nil, text: "16"),
                    XMLElement("PRF", namespace: nil, attributes: [("Algorithm", xmldsigMore + "hmac-sha256")]),
                ])
            container.children.append(
                XMLElement(
                    "EncryptionKey", namespace: namespace,
                    children: [
                        XMLElement(
                            "DerivedKey", namespace: xmlenc11,
                            children: [
                                XMLElement(
                                    "KeyDerivationMethod", namespace: xmlenc11,
                                    attributes: [("Algorithm", pkcs5 + "pbkdf2")], children: [params])
                            ])
                    ]))
        }
        var macKey: SecretBytes?
        if let key {
            let mac = SecretBytes(Crypto.random(20))
            macKey = mac
            let encrypted = try mac.withUnsafeBytes { m throws(PSKCError) in try encrypt(Array(m), key: key) }
            container.children.append(
                XMLElement(
                    "MACMethod", namespace: namespace, attributes: [("Algorithm", xmldsig + "hmac-sha1")],
                    children: [
                        XMLElement(
                            "MACKey", namespace: namespace,
                            children: encryptedValue(encrypted, keyLength: key.count))
                    ]))
        }
        for account in accounts {
            container.children.append(try package(account, key: key, macKey: macKey))
        }
        return try container.serialized()
    }

    private static func package(_ account: CredentialData, key: SecretBytes?, macKey: SecretBytes?)
        throws(PSKCError) -> XMLElement
    {
        var secretValue: [XMLElement]
        if let key, let macKey {
            let encrypted = try encrypt(account.secret, key: key)
            let mac = Crypto.hmac(.sha1, key: macKey, data: encrypted)
            secretValue = [
                XMLElement(
                    "EncryptedValue", namespace: namespace, children: encryptedValue(encrypted, keyLength: key.count)),
                XMLElement("ValueMAC", namespace: namespace, text: Data(mac).base64EncodedString()),
            ]
        } else {
            secretValue = [
                XMLElement("PlainValue", namespace: namespace, text: Data(account.secret).base64EncodedString())
            ]
        }
        var data = [XMLElement("Secret", namespace: namespace, children: secretValue)]
        if account.type == .hotp {
            data.append(plain("Counter", String(account.counter)))
        } else {
            data.append(plain("TimeInterval", String(account.period)))
        }
        var key = [XMLElement]()
        if let issuer = account.issuer { key.append(XMLElement("Issuer", namespace: namespace, text: issuer)) }
        key.append(
            XMLElement(
                "AlgorithmParameters", namespace: namespace,
                children: [
                    XMLElement("Suite", namespace: namespace, text: account.algorithm.rawValue.uppercased()),
                    XMLElement(
                        "ResponseFormat", namespace: namespace,
                        attributes: [("Encoding", "DECIMAL"), ("Length", String(account.digits))]),
                ]))
        let friendly = account.issuer.map { $0 + ":" + account.name } ?? account.name
        key.append(XMLElement("FriendlyName", namespace: namespace, text: friendly))
        key.append(XMLElement("Data", namespace: namespace, children: data))
        key.append(XMLElement("UserId", namespace: namespace, text: "CN=" + distinguishedNameValue(account.name)))
        return XMLElement(
            "KeyPackage", namespace: namespace,
            children: [
                XMLElement(
                    "Key", namespace: namespace,
                    attributes: [("Id", account.id.string), ("Algorithm", algorithmPrefix + account.type.description)],
                    children: key)
            ])
    }

    private static func plain(_ name: String, _ value: String) -> XMLElement {
        XMLElement(name, namespace: namespace, children: [XMLElement("PlainValue", namespace: namespace, text: value)])
    }

    private static func encryptedValue(_ cipher: [UInt8], keyLength: Int) -> [XMLElement] {
        [
            XMLElement(
                "EncryptionMethod", namespace: xmlenc,
                attributes: [("Algorithm", xmlenc + (keyLength == 32 ? "aes256-cbc" : "aes128-cbc"))]),
            XMLElement(
                "CipherData", namespace: xmlenc,
                children: [XMLElement("CipherValue", namespace: xmlenc, text: Data(cipher).base64EncodedString())]),
        ]
    }

    /// AES-CBC with a random IV, PKCS #7 padding; the IV first, as RFC 6030 carries it.
    static func encrypt(_ plaintext: [UInt8], key: SecretBytes) throws(PSKCError) -> [UInt8] {
        let iv = Crypto.random(16)
        var padded = plaintext
        let pad = 16 - padded.count % 16
        padded += [UInt8](repeating: UInt8(pad), count: pad)
        defer { SecretBytes.wipe(&padded) }
        do {
            let cipher = try key.withUnsafeBytes { k in
                try Crypto.aesCBCEncrypt(key: Array(k), iv: iv, padded)
            }
            return iv + cipher
        } catch {
            throw .keyLength(key.count)
        }
    }

    /// RFC 4514's escapes for an attribute value (the name in UserId's CN=). A space at either end is written as
    /// \\20, which survives a reader that trims the element's text.
    static func distinguishedNameValue(_ value: String) -> String {
        var out = ""
        let last = value.count - 1
        for (i, c) in value.enumerated() {
            if c == " " && (i == 0 || i == last) {
                out += "\\20"
                continue
            }
            if ",+\"\\<>;=".contains(c) || (i == 0 && c == "#") { out.append("\\") }
            out.append(c)
        }
        return out
    }

    // MARK: - Reading

    /// A PSKC document read: what it needs before its secrets can be read, and its key packages as they are.
    public struct File: Sendable {
        public let needs: Needs
        let derivation: Derivation?
        let macAlgorithm: HashAlgorithm?
        let macKey: Value?
        let keys: [KeyEntry]

        /// Parses a PSKC document (no secret is decrypted yet).
        public init(_ bytes: [UInt8]) throws(PSKCError) {
            let root = try XMLElement.parse(bytes)
            guard root.name == "KeyContainer", root.namespace == PSKC.namespace else { throw .notPSKC }
            if let version = root.attribute("Version"), !version.hasPrefix("1.") {
                throw .unsupported(version)
            }
            var needs = Needs.nothing
            var derivation: Derivation?
            if let encryption = root.child("EncryptionKey") {
                let name = encryption.child("KeyName")?.trimmedText
                if let derived = encryption.child("DerivedKey") {
                    guard let method = derived.child("KeyDerivationMethod") else { throw .malformed("DerivedKey") }
                    let algorithm = method.attribute("Algorithm") ?? ""
                    guard algorithm.hasSuffix("#pbkdf2") else { throw .unsupported(algorithm) }
                    derivation = try Derivation(method.child("PBKDF2-params"))
                    needs = .passphrase(name: derived.child("MasterKeyName")?.trimmedText ?? name)
                } else {
                    needs = .key(name: name, length: 0)
                }
            }
            var macAlgorithm: HashAlgorithm?
            var macKey: Value?
            if let method = root.child("MACMethod") {
                let algorithm = method.attribute("Algorithm") ?? ""
                guard let hash = PSKC.hmac(algorithm) else { throw .unsupported(algorithm) }
                macAlgorithm = hash
                if let key = method.child("MACKey") { macKey = try Value(encrypted: key, mac: nil) }
            }
            var keys = [KeyEntry]()
            for package in root.children where package.name == "KeyPackage" {
                for key in package.children where key.name == "Key" { keys.append(try KeyEntry(key)) }
            }
            // The pre-shared key's length comes from the first encrypted value's algorithm.
            if case .key(let name, _) = needs {
                let lengths = keys.compactMap { $0.secret?.keyLength }
                needs = .key(name: name, length: lengths.first ?? macKey?.keyLength ?? 16)
            }
            self.needs = needs
            self.derivation = derivation
            self.macAlgorithm = macAlgorithm
            self.macKey = macKey
            self.keys = keys
        }

        /// The PBKDF2 iterations of a passphrase-protected file.
        public var iterations: Int? { derivation?.iterations }

        /// The key PBKDF2 derives from `passphrase` with the file's parameters.
        public func key(passphrase: SecretBytes) throws(PSKCError) -> SecretBytes {
            guard let derivation else { throw .malformed("DerivedKey") }
            return Crypto.pbkdf2(
                derivation.prf, password: passphrase, salt: derivation.salt, iterations: derivation.iterations,
                length: derivation.keyLength)
        }

        /// Every OATH account in the file (HOTP and TOTP key packages; others, such as a PIN, are `skipped` by
        /// their Id), its secret decrypted with `key` when the file is encrypted. A MAC that does not match, or a
        /// padding that does not, is `wrongKey`.
        public func accounts(key: SecretBytes?) throws(PSKCError) -> Accounts {
            var macKey: SecretBytes?
            if let value = self.macKey {
                guard let key else { throw .keyNeeded }
                var bytes = try value.decrypt(key: key, macKey: nil, macAlgorithm: nil)
                macKey = SecretBytes(wiping: &bytes)
            } else if key != nil {
                // Without a MACKey the encryption key is the MAC key (drafts of RFC 6030 wrote such files).
                macKey = key
            }
            var accounts = [CredentialData]()
            var skipped = [Skipped]()
            for entry in keys {
                switch try entry.account(key: key, macKey: macKey, macAlgorithm: macAlgorithm ?? .sha1) {
                case .account(let account): accounts.append(account)
                case .skipped(let reason): skipped.append(Skipped(id: entry.id ?? "", reason: reason))
                }
            }
            return Accounts(accounts: accounts, skipped: skipped)
        }
    }

    public struct Accounts: Sendable {
        public var accounts: [CredentialData]
        public var skipped: [Skipped]
    }

    /// A key package that is no OATH account for a YubiKey, and why.
    public struct Skipped: Sendable, Equatable {
        public var id: String
        public var reason: SkipReason
    }

    public enum SkipReason: Sendable, Equatable {
        /// Not HOTP or TOTP (the Algorithm URI).
        case algorithm(String)
        /// A response that is not 6 to 8 decimal digits.
        case responseFormat(String)
        /// A hash other than SHA-1, SHA-256 and SHA-512.
        case suite(String)
        /// No secret in the package (e.g. RFC 6030's key derived on the device).
        case noSecret
        /// A TOTP start time (T0) other than 0, which a YubiKey cannot keep.
        case startTime(String)
    }

    static func hmac(_ algorithm: String) -> HashAlgorithm? {
        guard let hash = algorithm.split(separator: "#").last, hash.hasPrefix("hmac-") else { return nil }
        return HashAlgorithm(rawValue: String(hash.dropFirst(5)).uppercased())
    }

    /// The PBKDF2 parameters of a passphrase-protected file.
    struct Derivation: Sendable {
        var salt: [UInt8]
        var iterations: Int
        var keyLength: Int
        var prf: HashAlgorithm

        init(_ params: XMLElement?) throws(PSKCError) {
            guard let params, let saltText = params.child("Salt")?.child("Specified")?.trimmedText,
                let salt = PSKC.base64(saltText), let iterations = params.child("IterationCount")?.integer,
                iterations > 0
            else { throw .malformed("PBKDF2-params") }
            guard iterations <= PSKC.maximumIterations else { throw .unsupported("IterationCount \(iterations)") }
            let keyLength = params.child("KeyLength")?.integer ?? 16
            guard [16, 24, 32].contains(keyLength) else { throw .unsupported("KeyLength \(keyLength)") }
            var prf = HashAlgorithm.sha1
            if let algorithm = params.child("PRF")?.attribute("Algorithm"), !algorithm.isEmpty {
                guard let hash = PSKC.hmac(algorithm) else { throw .unsupported(algorithm) }
                prf = hash
            }
            self.salt = salt
            self.iterations = iterations
            self.keyLength = keyLength
            self.prf = prf
        }
    }

    /// A value of a key package's Data: plain, or encrypted with its MAC.
    enum Value: Sendable {
        case plain(String)
        case encrypted(algorithm: String, cipher: [UInt8], mac: [UInt8]?)

        init?(_ element: XMLElement?) throws(PSKCError) {
            guard let element else { return nil }
            if let plain = element.child("PlainValue") {
                self = .plain(plain.trimmedText)
            } else if let encrypted = element.child("EncryptedValue") {
                let mac = try element.child("ValueMAC").map { m throws(PSKCError) in
                    guard let bytes = PSKC.base64(m.trimmedText) else { throw .malformed("ValueMAC") }
                    return bytes
                }
                self = try Value(encrypted: encrypted, mac: mac)
            } else {
                throw .malformed(element.name)
            }
        }

        /// An xenc EncryptedValue (or MACKey): EncryptionMethod and CipherData/CipherValue.
        init(encrypted element: XMLElement, mac: [UInt8]?) throws(PSKCError) {
            let algorithm = element.child("EncryptionMethod")?.attribute("Algorithm") ?? ""
            guard let text = element.child("CipherData")?.child("CipherValue")?.trimmedText,
                let cipher = PSKC.base64(text)
            else { throw .malformed(element.name) }
            self = .encrypted(algorithm: algorithm, cipher: cipher, mac: mac)
        }

        /// The key length the value's algorithm needs (0 for a plain value).
        var keyLength: Int? {
            guard case .encrypted(let algorithm, _, _) = self else { return nil }
            return PSKC.cbcKeyLength(algorithm)
        }

        func decrypt(key: SecretBytes?, macKey: SecretBytes?, macAlgorithm: HashAlgorithm?) throws(PSKCError)
            -> [UInt8]
        {
            switch self {
            case .plain(let text):
                return Array(text.utf8)
            case .encrypted(let algorithm, let cipher, let mac):
                guard let length = PSKC.cbcKeyLength(algorithm) else { throw .unsupported(algorithm) }
                guard let key else { throw .keyNeeded }
                guard key.count == length else { throw .keyLength(key.count) }
                if let mac, let macKey {
                    let expected = Crypto.hmac(macAlgorithm ?? .sha1, key: macKey, data: cipher)
                    guard Crypto.constantTimeEqual(expected, mac) else { throw .wrongKey }
                }
                guard cipher.count >= 32, cipher.count % 16 == 0 else { throw .malformed("CipherValue") }
                var plain: [UInt8]
                do {
                    plain = try key.withUnsafeBytes { k in
                        try Crypto.aesCBCDecrypt(key: Array(k), iv: Array(cipher[..<16]), Array(cipher[16...]))
                    }
                } catch {
                    throw .wrongKey
                }
                let pad = Int(plain.last ?? 0)
                guard pad >= 1, pad <= 16, plain.suffix(pad).allSatisfy({ Int($0) == pad }) else {
                    SecretBytes.wipe(&plain)
                    throw .wrongKey
                }
                plain.removeLast(pad)
                return plain
            }
        }

        /// An integer value (Counter, TimeInterval, Time): decimal text, or when encrypted decimal ASCII or a
        /// big-endian number.
        func integer(key: SecretBytes?, macKey: SecretBytes?, macAlgorithm: HashAlgorithm?, _ name: String)
            throws(PSKCError) -> UInt64
        {
            let bytes = try decrypt(key: key, macKey: macKey, macAlgorithm: macAlgorithm)
            if case .plain(let text) = self {
                guard let n = UInt64(text) else { throw .malformed(name) }
                return n
            }
            if !bytes.isEmpty, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let n = UInt64(String(decoding: bytes, as: UTF8.self))
            {
                return n
            }
            guard bytes.count <= 8 else { throw .malformed(name) }
            return bytes.reduce(0) { $0 << 8 | UInt64($1) }
        }
    }

    static func cbcKeyLength(_ algorithm: String) -> Int? {
        switch algorithm.split(separator: "#").last {
        case "aes128-cbc": return 16
        case "aes192-cbc": return 24
        case "aes256-cbc": return 32
        default: return nil
        }
    }

    static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }

    /// Base64 with the line breaks and spaces a document may put inside.
    static func base64(_ text: String) -> [UInt8]? {
        let compact = String(text.unicodeScalars.filter { !$0.properties.isWhitespace })
        return Data(base64Encoded: compact).map(Array.init)
    }

    /// One Key element of a key package.
    struct KeyEntry: Sendable {
        var id: String?
        var algorithm: String
        var issuer: String?
        var suite: String?
        var responseLength: String?
        var responseEncoding: String?
        var friendlyName: String?
        var userID: String?
        var secret: Value?
        var counter: Value?
        var timeInterval: Value?
        var time: Value?

        init(_ key: XMLElement) throws(PSKCError) {
            id = key.attribute("Id") ?? key.attribute("KeyId")
            algorithm = key.attribute("Algorithm") ?? ""
            issuer = key.child("Issuer")?.trimmedText
            let parameters = key.child("AlgorithmParameters")
            suite = parameters?.child("Suite")?.trimmedText
            let format = parameters?.child("ResponseFormat")
            responseLength = format?.attribute("Length")
            responseEncoding = format?.attribute("Encoding")
            friendlyName = key.child("FriendlyName")?.trimmedText
            userID = key.child("UserId")?.trimmedText
            let data = key.child("Data")
            secret = try Value(data?.child("Secret"))
            counter = try Value(data?.child("Counter"))
            timeInterval = try Value(data?.child("TimeInterval"))
            time = try Value(data?.child("Time"))
        }

        enum Outcome {
            case account(CredentialData)
            case skipped(SkipReason)
        }

        func account(key: SecretBytes?, macKey: SecretBytes?, macAlgorithm: HashAlgorithm) throws(PSKCError)
            -> Outcome
        {
            guard algorithm.hasPrefix(PSKC.algorithmPrefix),
                let type = OATHType.allCases.first(where: {
                    $0.description == algorithm.dropFirst(PSKC.algorithmPrefix.count).lowercased()
                })
            else { return .skipped(.algorithm(algorithm)) }
            var hash = HashAlgorithm.sha1
            if let suite {
                var name = suite.lowercased()
                if name.hasPrefix("hmac-") { name.removeFirst(5) }
                name.removeAll { $0 == "-" }
                guard let h = HashAlgorithm(rawValue: name.uppercased()) else { return .skipped(.suite(suite)) }
                hash = h
            }
            if let encoding = responseEncoding, encoding.uppercased() != "DECIMAL" {
                return .skipped(.responseFormat(encoding))
            }
            var digits = CredentialData.defaultDigits
            if let length = responseLength {
                guard let n = Int(length), (6...8).contains(n) else { return .skipped(.responseFormat(length)) }
                digits = n
            }
            guard let secretValue = secret else { return .skipped(.noSecret) }
            var secretBytes = try secretValue.decrypt(key: key, macKey: macKey, macAlgorithm: macAlgorithm)
            if case .plain = secretValue {
                let text = String(decoding: secretBytes, as: UTF8.self)
                SecretBytes.wipe(&secretBytes)
                guard let bytes = PSKC.base64(text) else { throw .malformed("Secret") }
                secretBytes = bytes
            }
            guard !secretBytes.isEmpty else { return .skipped(.noSecret) }
            var period = CredentialData.defaultPeriod
            var counter: UInt32 = 0
            if type == .totp {
                if let value = timeInterval {
                    let n = try value.integer(key: key, macKey: macKey, macAlgorithm: macAlgorithm, "TimeInterval")
                    guard n > 0, n <= 0xFFFF_FFFF else { throw .malformed("TimeInterval") }
                    period = Int(n)
                }
                if let value = time {
                    let t = try value.integer(key: key, macKey: macKey, macAlgorithm: macAlgorithm, "Time")
                    if t != 0 { return .skipped(.startTime(String(t))) }
                }
            } else if let value = self.counter {
                let n = try value.integer(key: key, macKey: macKey, macAlgorithm: macAlgorithm, "Counter")
                guard n <= UInt64(UInt32.max) else { throw .malformed("Counter") }
                counter = UInt32(n)
            }
            // The name and issuer as ykman takes them: the Key Id, else ISSUER:NAME from FriendlyName; Issuer
            // wins for the issuer, and UserId (its CN when it is a distinguished name with one) for the name.
            var issuer: String?
            var name = id ?? ""
            if let friendly = friendlyName, let colon = friendly.firstIndex(of: ":") {
                issuer = String(friendly[..<colon])
                name = String(friendly[friendly.index(after: colon)...])
            }
            if let i = self.issuer, !i.isEmpty { issuer = i }
            if let user = userID, !user.isEmpty { name = PSKC.commonName(user) ?? user }
            let account = CredentialData(
                name: name, issuer: issuer, type: type, algorithm: hash, digits: digits, period: period,
                counter: counter, secret: secretBytes)
            SecretBytes.wipe(&secretBytes)
            return .account(account)
        }
    }

    /// The CN of an RFC 4514 distinguished name, unescaped (\\, and \\XX for a byte in hex); nil when `text` is
    /// no DN or has no CN.
    static func commonName(_ text: String) -> String? {
        var parts = [[UInt8]]()
        var current = [UInt8]()
        let bytes = Array(text.utf8)
        var i = 0
        func hexValue(_ b: UInt8) -> UInt8? {
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\\") {
                guard i + 1 < bytes.count else { return nil }
                if i + 2 < bytes.count, let high = hexValue(bytes[i + 1]), let low = hexValue(bytes[i + 2]) {
                    current.append(high << 4 | low)
                    i += 3
                } else {
                    current.append(bytes[i + 1])
                    i += 2
                }
                continue
            }
            if b == UInt8(ascii: ",") || b == UInt8(ascii: "+") {
                parts.append(current)
                current = []
            } else {
                current.append(b)
            }
            i += 1
        }
        parts.append(current)
        var cn: String?
        for part in parts {
            guard let eq = part.firstIndex(of: UInt8(ascii: "=")) else { return nil }
            let type = PSKC.trimmed(String(decoding: part[..<eq], as: UTF8.self))
            guard !type.isEmpty else { return nil }
            if type.uppercased() == "CN", cn == nil {
                guard let value = String(validating: part[(eq + 1)...], as: UTF8.self) else { return nil }
                cn = value
            }
        }
        return cn
    }
}

/// Why a PSKC file could not be read or written. Facts only; ErrorExplanation words them.
public enum PSKCError: Error, Equatable, Sendable {
    /// Not well-formed XML (libxml2's message, its line).
    case notXML(String)
    /// XML, but no PSKC KeyContainer.
    case notPSKC
    /// An algorithm, version or parameter this reader does not know.
    case unsupported(String)
    /// An element that is missing what RFC 6030 says it holds.
    case malformed(String)
    /// The file is encrypted and no key was given.
    case keyNeeded
    /// A key of the wrong length for the file's cipher (16, 24 or 32 bytes).
    case keyLength(Int)
    /// The MAC over an encrypted value does not match, or it does not decrypt: a wrong key or passphrase.
    case wrongKey
}

// MARK: - The XML tree

/// An element as libxml2 parsed it (or as it will write it): its local name, namespace URI, attributes in order,
/// the text directly inside it, and its child elements. Comments and processing instructions are dropped.
struct XMLElement: Sendable {
    var name: String
    var namespace: String?
    var attributes: [(String, String)]
    var text: String
    var children: [XMLElement]

    init(
        _ name: String, namespace: String?, attributes: [(String, String)] = [], text: String = "",
        children: [XMLElement] = []
    ) {
        self.name = name
        self.namespace = namespace
        self.attributes = attributes
        self.text = text
        self.children = children
    }

    func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }

    func attribute(_ name: String) -> String? { attributes.first { $0.0 == name }?.1 }

    var trimmedText: String { PSKC.trimmed(text) }

    var integer: Int? { Int(trimmedText) }

    /// Parses a document: no network, no DTD loaded, entities not expanded from outside, libxml2's limits on
    /// depth and entity amplification on, and no message to standard error.
    static func parse(_ bytes: [UInt8]) throws(PSKCError) -> XMLElement {
        _ = initialized
        guard bytes.count < Int32.max else { throw .notXML("too large") }
        let options = Int32(
            bitPattern: XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue
                | XML_PARSE_NOCDATA.rawValue)
        let document = bytes.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { c in
                xmlReadMemory(c.baseAddress, Int32(c.count), "pskc.xml", nil, options)
            }
        }
        guard let document else {
            var reason = "not well-formed"
            if let error = xmlGetLastError(), let message = error.pointee.message {
                reason =
                    "line \(error.pointee.line): "
                    + PSKC.trimmed(String(cString: message))
            }
            xmlResetLastError()
            throw .notXML(reason)
        }
        defer { xmlFreeDoc(document) }
        guard let root = xmlDocGetRootElement(document) else { throw .notXML("no root element") }
        return XMLElement(root)
    }

    /// libxml2 set up once, before any thread parses or writes (a Swift global is initialised exactly once).
    private static let initialized: Bool = {
        xmlInitParser()
        return true
    }()

    private init(_ node: UnsafeMutablePointer<xmlNode>) {
        name = String(cString: node.pointee.name)
        namespace = cxml_node_namespace(node).map { String(cString: $0) }
        var attributes = [(String, String)]()
        var attribute = node.pointee.properties
        while let a = attribute {
            if let value = cxml_attribute_value(a) {
                attributes.append((String(cString: a.pointee.name), String(cString: value)))
                cxml_free(value)
            }
            attribute = a.pointee.next
        }
        self.attributes = attributes
        var text = ""
        var children = [XMLElement]()
        var child = node.pointee.children
        while let c = child {
            switch c.pointee.type {
            case XML_ELEMENT_NODE: children.append(XMLElement(c))
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                if let content = c.pointee.content { text += String(cString: content) }
            default: break
            }
            child = c.pointee.next
        }
        self.text = text
        self.children = children
    }

    /// The element as an XML document (UTF-8, indented), each namespace declared once on the root with the
    /// prefix other PSKC files use.
    func serialized() throws(PSKCError) -> [UInt8] {
        _ = Self.initialized
        guard let document = xmlNewDoc("1.0") else { throw .malformed("document") }
        defer { xmlFreeDoc(document) }
        guard let root = cxml_new_node(name) else { throw .malformed(name) }
        xmlDocSetRootElement(document, root)
        var prefixes = [String: UnsafeMutablePointer<xmlNs>]()
        let known = [
            PSKC.namespace: "pskc", PSKC.xmldsig: "ds", PSKC.xmlenc: "xenc", PSKC.xmlenc11: "xenc11",
            PSKC.pkcs5: "pkcs5",
        ]
        for uri in Set(allNamespaces()).sorted() {
            if let ns = cxml_new_ns(root, uri, known[uri] ?? "ns\(prefixes.count)") { prefixes[uri] = ns }
        }
        fill(root, prefixes)
        var memory: UnsafeMutablePointer<xmlChar>?
        var size: Int32 = 0
        xmlDocDumpFormatMemoryEnc(document, &memory, &size, "UTF-8", 1)
        guard let memory else { throw .malformed("document") }
        defer { cxml_free(memory) }
        return Array(UnsafeBufferPointer(start: memory, count: Int(size)))
    }

    private func allNamespaces() -> [String] {
        (namespace.map { [$0] } ?? []) + children.flatMap { $0.allNamespaces() }
    }

    private func fill(_ node: UnsafeMutablePointer<xmlNode>, _ prefixes: [String: UnsafeMutablePointer<xmlNs>]) {
        if let namespace { xmlSetNs(node, prefixes[namespace]) }
        for (key, value) in attributes { cxml_set_attribute(node, key, value) }
        if !text.isEmpty { cxml_add_text(node, text) }
        for child in children {
            guard let c = cxml_new_child(node, child.name) else { continue }
            child.fill(c, prefixes)
        }
    }
}
