import FuzzSupport
import KeyKit

/// otpauth-migration:// URIs (Google Authenticator exports). The first byte chooses what the rest is: the
/// URI as text, or the protobuf payload. Invariants: a payload parses the same way directly and inside a
/// URI (standard base64); every account has a name, a secret and 6 or 8 digits, and survives a trip through
/// an otpauth:// URI.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var reader = FuzzReader(fuzzBytes(data, size))
    let asText = reader.byte() & 1 == 0
    let rest = reader.rest()
    let accounts: [CredentialData]
    if asText {
        guard let parsed = try? MigrationImport.parse(String(decoding: rest, as: UTF8.self)) else { return 0 }
        accounts = parsed
    } else {
        let direct = Result { () throws(OATHError) in try MigrationImport.parsePayload(rest) }
        let uri = "otpauth-migration://offline?data=" + base64(rest)
        let viaURI = Result { () throws(OATHError) in try MigrationImport.parse(uri) }
        switch (direct, viaURI) {
        case (.success(let a), .success(let b)):
            fuzzCheck(a == b, "the payload parses differently inside a URI")
        case (.failure, .failure):
            break
        default:
            fuzzCheck(false, "the payload and its URI disagree: \(direct) vs \(viaURI)")
        }
        guard case .success(let parsed) = direct else { return 0 }
        accounts = parsed
    }
    fuzzCheck(!accounts.isEmpty, "an export without accounts was accepted")
    for account in accounts {
        fuzzCheck(!account.name.isEmpty && !account.secret.isEmpty, "an account without name or secret")
        fuzzCheck(account.digits == 6 || account.digits == 8, "\(account.digits) digits")
        fuzzCheck(account.period == CredentialData.defaultPeriod, "period \(account.period)")
        let uri = OTPAuthURI.make(account)
        do {
            let again = try OTPAuthURI.parse(uri)
            fuzzCheck(normalized(again) == normalized(account), "\(uri) parses to another account")
        } catch {
            fuzzCheck(false, "the otpauth URI of an imported account, \(uri), does not parse: \(error)")
        }
    }
    return 0
}

private func normalized(_ account: CredentialData) -> CredentialData {
    var a = account
    if a.issuer != nil { a.name = String(a.name.drop(while: { $0 == " " })) }
    return a
}

/// Standard base64 with padding, written here so the check does not depend on the decoder under test.
private func base64(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    var out = ""
    var i = 0
    while i < bytes.count {
        let chunk = Array(bytes[i..<min(i + 3, bytes.count)])
        let n = chunk.count
        let v = UInt32(chunk[0]) << 16 | UInt32(n > 1 ? chunk[1] : 0) << 8 | UInt32(n > 2 ? chunk[2] : 0)
        for k in 0..<4 {
            out.append(k <= n ? alphabet[Int(v >> UInt32(18 - 6 * k) & 0x3F)] : "=")
        }
        i += 3
    }
    return out
}

@_cdecl("FuzzMigration_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
