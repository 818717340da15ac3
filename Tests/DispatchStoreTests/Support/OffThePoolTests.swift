import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The tests of a suite marked ``OffThePool`` run on its threads, before and after they await; others do not.
@Suite("Tests off the cooperative pool", .timeLimit(.minutes(1)), .watchdog, .offThePool)
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

  #if canImport(Glibc)
    /// At the lowest priority, so that the pool's threads, which timed tests wait for, come first.
    @Test func itsThreadsRunAtTheLowestPriority() {
      #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == 19)
    }
  #endif
}

@Suite("Tests on the cooperative pool", .timeLimit(.minutes(1)), .watchdog)
struct OnThePoolTests {
  @Test func aTestOfAnUnmarkedSuiteRunsOnThePool() {
    #expect(!OffThePool.isCurrentThreadOffThePool)
  }
}
