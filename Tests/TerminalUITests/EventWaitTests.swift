import Foundation
import Glibc
import Testing
@testable import TerminalUI

@Suite struct EventWaitTests {
    @Test func wakeupMakesItsDescriptorReadableUntilDrained() throws {
        let wakeup = try Wakeup()
        #expect(try Poller.poll(fds: [wakeup.fd], timeoutMilliseconds: 0).timedOut)
        wakeup.signal()
        wakeup.signal()
        let result = try Poller.poll(fds: [wakeup.fd], timeoutMilliseconds: 1000)
        #expect(result.readable == [wakeup.fd])
        #expect(!result.interrupted)
        #expect(wakeup.drain())
        #expect(!wakeup.drain())
        #expect(try Poller.poll(fds: [wakeup.fd], timeoutMilliseconds: 0).readable.isEmpty)
    }

    @Test func wakeupFromAnotherThreadEndsAWait() throws {
        let wakeup = try Wakeup()
        // A thread of its own, not a task: the poll below blocks this thread, and a task could be waiting for
        // the same few cooperative threads (two on a two-core machine) that other tests are blocking too.
        let signaller = Thread {
            usleep(50_000)
            wakeup.signal()
        }
        signaller.start()
        let result = try Poller.poll(fds: [wakeup.fd], timeoutMilliseconds: 10_000)
        #expect(result.readable.contains(wakeup.fd))
    }

    @Test func signalsNeverBlockEvenWhenThePipeIsFull() throws {
        let wakeup = try Wakeup()
        for _ in 0..<100_000 { wakeup.signal() }
        #expect(wakeup.drain())
    }

    @Test func timeoutWithNothingReady() throws {
        let wakeup = try Wakeup()
        let start = ContinuousClock.now
        let result = try Poller.poll(fds: [wakeup.fd], timeoutMilliseconds: 30)
        #expect(result.timedOut)
        #expect(ContinuousClock.now - start >= .milliseconds(25))
    }

    @Test func hangUpIsReported() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        close(ends[1])
        defer { close(ends[0]) }
        let result = try Poller.poll(fds: [ends[0]], timeoutMilliseconds: 0)
        #expect(result.hungUp == [ends[0]])
        #expect(result.readable == [ends[0]])
    }
}
