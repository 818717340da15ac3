import Testing

@testable import DispatchStore

@Suite("System clock", .timeLimit(.minutes(1)), .watchdog)
struct DispatchClockTests {
  /// Work scheduled after a delay runs once, no earlier than the delay by the clock's own `now`.
  @Test func scheduledWorkRunsOnceAfterItsDelay() async {
    let clock = SystemDispatchClock()
    let ran = Collector<Duration>()
    let start = clock.now

    clock.schedule(after: .milliseconds(20)) { ran.append(clock.now) }

    let times = await ran.wait(for: 1)
    #expect(times.count == 1)
    #expect(times[0] - start >= .milliseconds(20))
  }

  @Test func nowNeverGoesBack() {
    let clock = SystemDispatchClock()
    var previous = clock.now
    for _ in 0..<1_000 {
      let now = clock.now
      #expect(now >= previous)
      previous = now
    }
  }
}
