import FuzzSupport
import KeyKit

/// otpauth:// URIs. Invariants: an accepted URI has a name, 6-8 digits and a period of 1-3600 seconds;
/// `make` turns it into a URI that parses to the same account (spaces at the start of a name that follows
/// an issuer aside, as documented); the secret's Base32 round-trips.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: fuzzBytes(data, size), as: UTF8.self)
    _ = try? Base32.decode(text)
    guard let account = try? OTPAuthURI.parse(text) else { return 0 }
    fuzzCheck(!account.name.isEmpty, "an account without a name from \(text)")
    fuzzCheck((6...8).contains(account.digits), "\(account.digits) digits")
    fuzzCheck((1...OTPAuthURI.maxPeriod).contains(account.period), "period \(account.period)")
    fuzzCheck(account.issuer?.isEmpty != true, "an empty issuer")
    fuzzCheck((try? Base32.decode(Base32.encode(account.secret))) == account.secret, "Base32 round trip")
    let uri = OTPAuthURI.make(account)
    do {
        let again = try OTPAuthURI.parse(uri)
        fuzzCheck(normalized(again) == normalized(account), "make/parse changes \(text) (made \(uri))")
    } catch {
        fuzzCheck(false, "the URI made from \(text), \(uri), does not parse: \(error)")
    }
    return 0
}

/// Leading spaces of a name that follows an issuer are dropped by the label rules.
private func normalized(_ account: CredentialData) -> CredentialData {
    var a = account
    if a.issuer != nil { a.name = String(a.name.drop(while: { $0 == " " })) }
    return a
}

@_cdecl("FuzzOTPAuthURI_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
