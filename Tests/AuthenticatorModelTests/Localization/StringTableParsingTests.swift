import Foundation
import Testing
@testable import AuthenticatorModel

/// The string tables' fast reader gives what JSONDecoder gives, and nothing for text that is not a flat table of
/// strings (JSONDecoder then says what is wrong).
@Suite struct StringTableParsingTests {
    @Test(arguments: Language.allCases)
    func theTablesReadAsJSONDecoderReadsThem(language: Language) throws {
        let directory = try #require(StringTables.directory(among: StringTables.directories()))
        let data = try #require(FileManager.default.contents(atPath: directory + "/\(language.rawValue).json"))
        let table = try #require(FlatStringTable.parse(data))
        #expect(table == (try JSONDecoder().decode([String: String].self, from: data)))
        #expect(table.count > 100)
    }

    @Test(arguments: [
        #"{}"#,
        #" { "a" : "x" , "b":"" } "#,
        #"{"quote": "\"", "slashes": "\\ \/", "controls": "\b\f\n\r\t", "bmp": "\u00e4\u20AC", "astral": "\ud83d\ude00"}"#,
        #"{"raw": "ä € 😀", "mixed": "a\u0062c\n"}"#,
    ])
    func escapesAndWhiteSpaceAsJSONDecoder(text: String) throws {
        let data = Data(text.utf8)
        #expect(FlatStringTable.parse(data) == (try JSONDecoder().decode([String: String].self, from: data)))
    }

    @Test(arguments: [
        "", "[]", #""a""#, #"{"a": 1}"#, #"{"a": null}"#, #"{"a": "x", "a": "y"}"#, #"{"a" "x"}"#, #"{"a": "x",}"#,
        #"{"a": "x"} x"#, #"{"a": "x""#, #"{"a": "\ud800"}"#, #"{"a": "\ude00"}"#, #"{"a": "\q"}"#, #"{"a": "\u12"}"#,
        "{\"a\": \"line\nbreak\"}",
    ])
    func anythingElseIsLeftToJSONDecoder(text: String) {
        #expect(FlatStringTable.parse(Data(text.utf8)) == nil)
    }

    /// Bytes that are not UTF-8 in a string, with and without escapes before them: a lone continuation byte, an
    /// overlong encoding of three bytes (which a repairing decoder turns into a replacement character of the same
    /// length), a truncated sequence and an encoded surrogate.
    @Test(arguments: [[0x80], [0xE0, 0x80, 0x80], [0xC3], [0xED, 0xA0, 0x80], [0x61, 0xFF]] as [[UInt8]])
    func invalidUTF8IsLeftToJSONDecoder(bytes: [UInt8]) {
        for prefix in [#"{"a": ""#, #"{"a": "\n"#] {
            let data = Data(Array(prefix.utf8) + bytes + Array(#""}"#.utf8))
            #expect(FlatStringTable.parse(data) == nil)
        }
        let fine = Data(Array(#"{"a": "\n"#.utf8) + [0xC3, 0xA4] + Array(#""}"#.utf8))
        #expect(FlatStringTable.parse(fine) == ["a": "\nä"])
    }
}
