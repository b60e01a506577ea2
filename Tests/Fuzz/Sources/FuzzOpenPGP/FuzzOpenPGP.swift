import FuzzSupport
import KeyKit
import VirtualKey

/// The OpenPGP card's answers as KeyKit reads them, and the virtual key's OpenPGP applet. The first byte picks
/// the input's form: 0 application related data (6E), 1 cardholder related data (65), 2 the KDF object, 3 a
/// public key (7F49) for the attributes the rest begins with (their length first), 4 algorithm attributes, 5 PW
/// status bytes, 6 APDUs for the applet (each a length byte and the command), after SELECT.
/// Invariants: parsers answer a value or `OpenPGPError.malformed`; algorithm attributes and PW status bytes that
/// parse survive their own encoding; the AID's serial of a parsed card is what its bytes say; every answer of
/// the applet ends with a status word. An input generates at most one key (the rest would only be slow).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzBytes(data, size)
    guard let form = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    switch form % 7 {
    case 0:
        expectMalformation { () throws(OpenPGPError) in
            let d = try OpenPGPApplicationData(rest)
            _ = (d.aid.serial, d.aid.versionText, d.aid.manufacturer, d.keys.map(\.hasKey))
            fuzzCheck(d.keys.count >= 3 && d.keys.count <= 4, "\(d.keys.count) slots")
            fuzzCheck(d.keys.allSatisfy { $0.fingerprint.count == 20 }, "a fingerprint not of 20 bytes")
        }
    case 1:
        expectMalformation { () throws(OpenPGPError) in _ = try OpenPGPCardholder(rest).displayName }
    case 2:
        expectMalformation { () throws(OpenPGPError) in _ = try OpenPGPKDF(rest).isEnabled }
    case 3:
        let n = Int(rest.first ?? 0)
        let body = Array(rest.dropFirst())
        guard let attributes = try? OpenPGPAlgorithmAttributes(Array(body.prefix(n))) else { return 0 }
        expectMalformation { () throws(OpenPGPError) in
            let key = try OpenPGPPublicKey(Array(body.dropFirst(n)), attributes: attributes)
            fuzzCheck((try? OpenPGPPublicKey(key.encoded, attributes: attributes)) == key, "a key differs re-read")
            _ = try key.asymmetricKey()
        }
    case 4:
        if let attributes = try? OpenPGPAlgorithmAttributes(rest) {
            fuzzCheck(
                (try? OpenPGPAlgorithmAttributes(attributes.encoded)) == attributes, "\(rest.hex) re-read differs")
            _ = attributes.description
        }
    case 5:
        if let status = try? OpenPGPPasswordStatus(rest), status.encoded.count == 7,
            rest[0] <= 1
        {
            fuzzCheck((try? OpenPGPPasswordStatus(status.encoded)) == status, "\(rest.hex) re-read differs")
        }
    default:
        let key = VirtualKey(touchDelay: 0, userPresenceDelay: 0)
        _ = key.process((try? APDU.select(aid: AID.openpgp).encoded()) ?? [])
        var i = 0
        var count = 0
        var generated = false
        while i < rest.count, count < 8 {
            let n = Int(rest[i])
            let command = Array(rest[(i + 1)..<min(rest.count, i + 1 + n)])
            i += 1 + n
            count += 1
            // One key generation an input: an RSA 4096 key takes OpenSSL a second or more, and eight of them
            // would be a timeout that says nothing about the applet.
            let generates = command.count >= 3 && command[1] == 0x47 && command[2] == OpenPGP.generateKey
            if generates, generated { continue }
            generated = generated || generates
            let answer = key.process(command)
            fuzzCheck(answer.count >= 2, "an answer without a status word to \(command.hex)")
        }
    }
    return 0
}

/// Runs `body`; any error but a malformation is a finding.
private func expectMalformation(_ body: () throws(OpenPGPError) -> Void) {
    do {
        try body()
    } catch .malformed {
    } catch {
        fuzzCheck(false, "not a malformation: \(error)")
    }
}

@_cdecl("FuzzOpenPGP_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}
