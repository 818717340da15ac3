import Dispatch
import Testing

/// The tests of a suite marked ``OffThePool`` run on its queue, before and after they await; others do not.
@Suite("Tests off the cooperative pool", .timeLimit(.minutes(1)), .watchdog, .offThePool)
struct OffThePoolTests {
  @Test func aSynchronousTestRunsOnTheQueue() {
    #expect(DispatchQueue.getSpecific(key: OffThePool.queueKey) == true)
  }

  @Test func anAsynchronousTestAndItsChildTasksRunOnTheQueue() async {
    #expect(DispatchQueue.getSpecific(key: OffThePool.queueKey) == true)
    await Task.yield()
    #expect(DispatchQueue.getSpecific(key: OffThePool.queueKey) == true)
    async let child = DispatchQueue.getSpecific(key: OffThePool.queueKey)
    #expect(await child == true)
  }
}

@Suite("Tests on the cooperative pool", .timeLimit(.minutes(1)), .watchdog)
struct OnThePoolTests {
  @Test func aTestOfAnUnmarkedSuiteRunsOnThePool() {
    #expect(DispatchQueue.getSpecific(key: OffThePool.queueKey) == nil)
  }
}
