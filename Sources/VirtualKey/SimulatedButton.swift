import KeyKit

/// The virtual key's button as its applets wait for it: a touch takes `delay` seconds (0: at once). A cached touch
/// policy is met for 15 seconds after the last touch, as on a YubiKey.
struct SimulatedButton: Sendable {
    static let cacheSeconds = 15.0
    let delay: Double

    /// Waits for a touch.
    func touch() {
        if delay > 0 { SystemThread.sleep(delay) }
    }

    /// Waits for a touch, unless `cached` and the last one (`last`, monotonic seconds) was less than 15 s ago;
    /// `last` then holds this touch.
    func touch(cached: Bool, last: inout Double?) {
        if cached, let previous = last, ThreadCondition.monotonicNow() - previous < Self.cacheSeconds { return }
        touch()
        last = ThreadCondition.monotonicNow()
    }
}
