import KeyKit
import Testing
@testable import ykterm

/// Typed `--json` outputs (`JSONTree`) print exactly as the dictionaries JSONText was given before.
@Suite struct JSONOutputTests {
    struct Inner: Encodable {
        var label: String
        var values: [Int]
    }

    struct Sample: Encodable {
        var name: String
        var missing: String?
        var count: Int?
        var flag: Bool
        var ratio: Double
        var inner: Inner
        var list: [Inner?]

        enum CodingKeys: String, CodingKey {
            case name, missing, count, flag, ratio, inner
            case list = "the_list"
        }
    }

    func text(_ value: Any) throws -> String {
        var out = ""
        try JSONText.append(value, to: &out, indent: 0)
        return out
    }

    @Test func aTypedValuePrintsAsItsDictionaryAndNilIsNull() throws {
        let typed = Sample(name: "a \"quoted\" name", missing: nil, count: nil, flag: true, ratio: 0.5,
                           inner: Inner(label: "x", values: [1, 2]), list: [Inner(label: "y", values: []), nil])
        let dictionary: [String: Any] = [
            "name": "a \"quoted\" name", "missing": JSONNull(), "count": JSONNull(), "flag": true, "ratio": 0.5,
            "inner": ["label": "x", "values": [1, 2]] as [String: Any],
            "the_list": [["label": "y", "values": [Any]()] as [String: Any], JSONNull()] as [Any],
        ]
        #expect(try text(JSONTree.value(of: typed)) == text(dictionary))
        #expect(try text(JSONTree.value(of: typed)).contains("\"missing\" : null"))
        // An array at the top, as `oath list --json` prints.
        #expect(try text(JSONTree.value(of: [typed.inner])) == text([["label": "x", "values": [1, 2]] as [String: Any]]))
    }

    @Test func aCodeCarriesItsAccountsFieldsAndNullsWithoutACode() throws {
        let id = CredentialID(name: "bob", issuer: "Example", type: .hotp)
        let account = OATHAccountJSON(Credential(rawID: id.bytes, type: .hotp), digits: nil)
        let tree = try JSONTree.value(of: OATHCodeJSON(account: account, code: nil, validFrom: nil, validTo: nil))
        let object = try #require(tree as? [String: Any])
        #expect(Set(object.keys) == ["id", "issuer", "name", "type", "algorithm", "digits", "period", "touch", "code",
                                     "valid_from", "valid_to"])
        #expect(object["code"] is JSONNull && object["valid_to"] is JSONNull && object["digits"] is JSONNull)
        #expect(object["id"] as? String == "Example:bob" && object["type"] as? String == "hotp")
    }
}
