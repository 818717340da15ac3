import Testing

@testable import DispatchStore

/// The dispatcher's admission state alone: throttling keys.
@Suite("Admission state", .watchdog)
struct AdmissionStateTests {
  /// Throttling by many keys (one per row of a screen) does not keep every key for ever: keys whose interval has
  /// passed are forgotten now and then, and handed back to be released after the lock (helper-61).
  @Test func throttlingKeysWhoseIntervalPassedAreForgotten() {
    var state = AdmissionState()
    var forgotten = 0
    for round in 0..<10 {
      let now = Duration.seconds(round * 10)
      for row in 0..<1_000 {
        let decision = state.throttle(CancellationID(row + 1_000 * round), interval: .seconds(1), now: now)
        #expect(decision.admitted)
        forgotten += decision.forgotten.count
      }
    }
    // At most the keys of the last round and a sweep's slack are kept; the older rounds' went.
    #expect(state.throttlingKeys <= 2_000)
    #expect(forgotten > 0)
    // A key within its interval still holds the next dispatch back.
    #expect(!state.throttle(CancellationID(9_999), interval: .seconds(1), now: .seconds(90)).admitted)
    #expect(state.throttle(CancellationID(9_999), interval: .seconds(1), now: .seconds(91)).admitted)
  }
}
