import FoundationEssentials

/// PEM (RFC 7468): DER in base64 between "-----BEGIN <label>-----" and "-----END <label>-----" lines.
public enum PEM {
    public static let publicKey = "PUBLIC KEY"
    public static let certificate = "CERTIFICATE"

    /// `der` as PEM with `label`, base64 in lines of 64 characters, ending with a newline.
    public static func encode(_ der: [UInt8], label: String) -> String {
        let text = Data(der).base64EncodedString()
        var lines = ["-----BEGIN \(label)-----"]
        var index = text.startIndex
        while index < text.endIndex {
            let end = text.index(index, offsetBy: 64, limitedBy: text.endIndex) ?? text.endIndex
            lines.append(String(text[index..<end]))
            index = end
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The DER of every block labelled `label` in `text`, in order; text around and between the blocks (such as
    /// openssl's "Certificate:" dumps) is skipped. Nil when a block is not closed or its base64 does not decode.
    public static func decode(_ text: String, label: String) -> [[UInt8]]? {
        let begin = "-----BEGIN \(label)-----", end = "-----END \(label)-----"
        var blocks = [[UInt8]]()
        var body: String?
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = String(raw.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
            if body == nil {
                if line == begin { body = "" }
            } else if line == end {
                guard let data = Data(base64Encoded: body ?? "") else { return nil }
                blocks.append(Array(data))
                body = nil
            } else {
                body? += line
            }
        }
        return body == nil ? blocks : nil
    }

    /// Whether `bytes` look like PEM text rather than DER (DER starts with a SEQUENCE, 30).
    public static func isPEM(_ bytes: [UInt8]) -> Bool {
        String(decoding: bytes.prefix(4096), as: UTF8.self).contains("-----BEGIN ")
    }
}

extension X509Certificate {
    /// The certificate as PEM ("-----BEGIN CERTIFICATE-----").
    public var pem: String { PEM.encode(der, label: PEM.certificate) }

    /// The certificate in `bytes`, DER or the first PEM CERTIFICATE block.
    public init(derOrPEM bytes: [UInt8]) throws {
        if PEM.isPEM(bytes),
            let first = PEM.decode(
                String(decoding: bytes, as: UTF8.self),
                label: PEM.certificate)?.first
        {
            try self.init(der: first)
        } else {
            try self.init(der: bytes)
        }
    }
}
