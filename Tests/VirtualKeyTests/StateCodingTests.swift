import Foundation
import KeyKit
import Testing
import VirtualKey

/// The state file's form of the structs whose coders Swift writes: byte strings in lower-case hex, enumerations
/// as their raw values, optional fields left out when empty; and a value that is not hex refused with its place.
@Suite struct StateCodingTests {
    func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any])
    }

    @Test func yubiHSMAuthStateKeepsItsFileForm() throws {
        var state = HSMAuthState()
        state.installDemo()
        let json = try object(state)
        #expect(json["managementKey"] as? String == String(repeating: "00", count: 16))
        #expect(json["managementKeyRetries"] as? Int == 8)
        let credential = try #require((json["credentials"] as? [[String: Any]])?.first)
        #expect(credential["label"] as? String == "demo")
        #expect(credential["algorithm"] as? Int == 38)
        #expect(credential["touchRequired"] as? Bool == false)
        #expect(credential["retries"] as? Int == 8)
        #expect(credential["password"] as? String == "64656d6f" + String(repeating: "00", count: 12))
        let key = try #require(credential["key"] as? String)
        #expect(key.count == 64 && key == key.lowercased())
        #expect(try JSONDecoder().decode(HSMAuthState.self, from: try JSONEncoder().encode(state)) == state)
    }

    @Test func aFingerprintWithoutANameHasNoNameField() throws {
        let unnamed = FIDOState.Fingerprint(templateID: [0xAB, 0x01], name: nil)
        #expect(try object(unnamed).keys.sorted() == ["templateID"])
        #expect(try object(unnamed)["templateID"] as? String == "ab01")
        let named = FIDOState.Fingerprint(templateID: [0xAB, 0x01], name: "thumb")
        let decoded = try JSONDecoder().decode(
            FIDOState.Fingerprint.self, from: Data(#"{"templateID":"AB01","name":"thumb"}"#.utf8))
        #expect(decoded == named)
    }

    @Test func bytesThatAreNotHexAreRefusedWithTheirPlace() {
        let text = #"{"managementKey":"00zz","managementKeyRetries":8,"credentials":[]}"#
        #expect {
            try JSONDecoder().decode(HSMAuthState.self, from: Data(text.utf8))
        } throws: { error in
            guard case DecodingError.dataCorrupted(let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["managementKey"]
        }
    }

    @Test func anUnknownAlgorithmIsRefused() {
        let text = #"{"label":"x","algorithm":99,"touchRequired":false,"retries":8,"password":"00","key":"00"}"#
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(HSMAuthState.Credential.self, from: Data(text.utf8))
        }
    }
}
