import Testing

/// The tests of a suite marked ``OffThePool`` run on its threads, before and after they await; others do not.
// Five minutes: a test waits its turn, behind the heavy ones, within its limit.
@Suite("Tests off the cooperative pool", .timeLimit(.minutes(5)), .watchdog, .offThePool)
struct OffThePoolTests {
  @Test func aSynchronousTestRunsOffThePool() {
    #expect(OffThePool.isCurrentThreadOffThePool)
  }

  @Test func anAsynchronousTestAndItsChildTasksRunOffThePool() async {
    #expect(OffThePool.isCurrentThreadOffThePool)
    await Task.yield()
    #expect(OffThePool.isCurrentThreadOffThePool)
    async let child = OffThePool.isCurrentThreadOffThePool
    #expect(await child)
  }

  /// The library's tasks, and any `Task` a test makes, run on the pool as they would elsewhere.
  @Test func aTaskMadeInsideRunsOnThePool() async {
    #expect(await Task { OffThePool.isCurrentThreadOffThePool }.value == false)
  }

  /// No more than two at a time: the others wait their turn.
  @Test func aThirdTestWaitsForALane() async {
    let lanes = OffThePool.Lanes(2)
    await lanes.enter()
    await lanes.enter()
    let third = Task { await lanes.enter() }
    // Waiting, suspended: with no limit it would have entered, and none would wait.
    #expect(await eventually { lanes.waitingCount == 1 })
    lanes.leave()
    await third.value
    #expect(lanes.waitingCount == 0)
  }
}

@Suite("Tests on the cooperative pool", .timeLimit(.minutes(1)), .watchdog)
struct OnThePoolTests {
  @Test func aTestOfAnUnmarkedSuiteRunsOnThePool() {
    #expect(!OffThePool.isCurrentThreadOffThePool)
  }
}
