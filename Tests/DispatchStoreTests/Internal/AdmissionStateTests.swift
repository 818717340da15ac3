import Testing

@testable import DispatchStore

/// The dispatcher's admission state alone: throttling keys.
@Suite("Admission state", .watchdog)
struct AdmissionStateTests {
  /// Throttling by many keys (one per row of a screen) does not keep every key for ever: keys whose interval has
  /// passed are forgotten now and then, and handed back to be released after the lock (helper-61).
  @Test func throttlingKeysWhoseIntervalPassedAreForgotten() {
    var state = AdmissionState()
    var released = 0
    for round in 0..<10 {
      let now = Duration.seconds(round * 10)
      for row in 0..<1_000 {
        let decision = state.throttle(CancellationID(row + 1_000 * round), interval: .seconds(1), now: now)
        #expect(decision.admitted)
        released += decision.released.count
      }
    }
    // At most the keys of the last round and a sweep's slack are kept; the older rounds' went.
    #expect(state.throttlingKeys <= 2_000)
    #expect(released > 0)
    // A key within its interval still holds the next dispatch back.
    #expect(!state.throttle(CancellationID(9_999), interval: .seconds(1), now: .seconds(90)).admitted)
    #expect(state.throttle(CancellationID(9_999), interval: .seconds(1), now: .seconds(91)).admitted)
  }

  /// A dispatch is held back by the interval of the one that ran, whatever interval it asks with itself, whether or
  /// not a sweep ran in between (helper-62: the sweep forgot keys by their own interval, the check used the caller's).
  @Test func aKeyHoldsBackByTheIntervalItRanWith() {
    var state = AdmissionState()
    #expect(state.throttle(CancellationID("k"), interval: .seconds(1), now: .zero).admitted)
    #expect(state.throttle(CancellationID("k"), interval: .seconds(10), now: .seconds(5)).admitted)
    #expect(!state.throttle(CancellationID("k"), interval: .seconds(1), now: .seconds(14)).admitted)
    // Past the sweep threshold, with "k" still within its ten seconds: it is kept, and still holds back.
    for row in 0..<100 { _ = state.throttle(CancellationID(row), interval: .seconds(1), now: .seconds(14)) }
    #expect(!state.throttle(CancellationID("k"), interval: .seconds(1), now: .seconds(14)).admitted)
    #expect(state.throttle(CancellationID("k"), interval: .seconds(1), now: .seconds(15)).admitted)
  }
}
