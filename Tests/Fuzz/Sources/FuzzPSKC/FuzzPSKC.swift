import FuzzSupport
import KeyKit

/// PSKC documents (RFC 6030) through libxml2 and PSKC.File. The first byte is a length n, the next n bytes the
/// pre-shared key or the passphrase the document may need (a passphrase only when the document asks for at most
/// 2,000 PBKDF2 iterations, so one input stays fast), the rest the document. Invariants: every account read has a
/// secret, 6 to 8 digits, a period; what the accounts are written as (plain, and under a key) reads back as the
/// same accounts once written and read a second time, and a wrong key for the encrypted copy is refused.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var reader = FuzzReader(fuzzBytes(data, size))
    let secret = reader.take(Int(reader.byte() % 40))
    let document = reader.rest()
    guard let file = try? PSKC.File(document) else { return 0 }
    var key: SecretBytes?
    switch file.needs {
    case .nothing: break
    case .key: key = SecretBytes(secret)
    case .passphrase:
        guard let iterations = file.iterations, iterations <= 2000 else { return 0 }
        key = try? file.key(passphrase: SecretBytes(secret))
    }
    guard let read = try? file.accounts(key: key) else { return 0 }
    for account in read.accounts {
        fuzzCheck(!account.secret.isEmpty, "an account without a secret")
        fuzzCheck((6...8).contains(account.digits), "\(account.digits) digits")
        fuzzCheck(account.period > 0, "period \(account.period)")
    }
    guard !read.accounts.isEmpty else { return 0 }
    let once = roundTrip(read.accounts, .none)
    fuzzCheck(once.count == read.accounts.count, "written and read, \(read.accounts.count) became \(once.count)")
    for (a, b) in zip(read.accounts, once) {
        fuzzCheck(
            a.secret == b.secret && a.type == b.type && a.algorithm == b.algorithm && a.digits == b.digits
                && a.period == b.period && a.counter == b.counter, "an account changed when written and read")
    }
    let twice = roundTrip(once, .none)
    fuzzCheck(twice == once, "a second trip changed the accounts")
    let wrapping = SecretBytes([UInt8](repeating: 7, count: 16))
    let encrypted: [UInt8]
    do {
        encrypted = try PSKC.document(once, protection: .key(wrapping))
    } catch {
        fuzzCheck(false, "the accounts could not be written encrypted: \(error)")
        return 0
    }
    do {
        let again = try PSKC.File(encrypted)
        fuzzCheck(try again.accounts(key: wrapping).accounts == once, "the encrypted copy reads back differently")
        do {
            _ = try again.accounts(key: SecretBytes([UInt8](repeating: 8, count: 16)))
            fuzzCheck(false, "a wrong key was taken")
        } catch {
            fuzzCheck(error == .wrongKey, "a wrong key gave \(error)")
        }
    } catch {
        fuzzCheck(false, "the encrypted copy does not read: \(error)")
    }
    return 0
}

private func roundTrip(_ accounts: [CredentialData], _ protection: PSKC.Protection) -> [CredentialData] {
    do {
        let bytes = try PSKC.document(accounts, protection: protection)
        return try PSKC.File(bytes).accounts(key: nil).accounts
    } catch {
        fuzzCheck(false, "what was written does not read: \(error)")
        return []
    }
}

@_cdecl("FuzzPSKC_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
