import CBuildInfo
import Testing
@testable import ykterm

/// `ykterm --version`: the version from its one place, and the commit when the build was told one.
@Suite struct YktermVersionTests {
    @Test func theCommitFollowsTheVersion() {
        #expect(Ykterm.versionString("0.1.0", commit: "abc1234") == "0.1.0 (abc1234)")
        #expect(Ykterm.versionString("0.1.0", commit: "abc1234-dirty") == "0.1.0 (abc1234-dirty)")
    }

    @Test func withoutACommitTheVersionStandsAlone() {
        #expect(Ykterm.versionString("0.1.0", commit: "") == "0.1.0")
    }

    @Test func theVersionIsBuildInfos() {
        #expect(Ykterm.version.hasPrefix(YKTERM_VERSION))
        #expect(Ykterm.version == Ykterm.versionString(YKTERM_VERSION, commit: String(cString: ykterm_commit())))
    }
}
