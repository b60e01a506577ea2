import Testing

@testable import ykterm

@Suite("CSV output")
struct CSVOutputTests {
    /// What Python's csv.writer (ykman's --csv) writes for the same rows.
    @Test func quotesAsPythonsCSVWriter() {
        let rows = [
            ["credential_id", "rp_id", "user_name"], ["a1", "example.com", ""], ["b2", "x,y", "say \"hi\""],
            ["c3", "line\nbreak", "cr\rhere"],
        ]
        #expect(
            CSV.text(rows)
                == "credential_id,rp_id,user_name\r\na1,example.com,\r\nb2,\"x,y\",\"say \"\"hi\"\"\"\r\n"
                + "c3,\"line\nbreak\",\"cr\rhere\"\r\n")
    }
}
