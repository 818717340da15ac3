import Dispatch
import DispatchStore
import Synchronization
import Testing

@Suite("MainRunLoopThread", .timeLimit(.minutes(1)))
struct MainRunLoopThreadTests {
  @Test func runsScheduledWorkInOrderOnItsOwnThread() async {
    let thread = MainRunLoopThread(name: "test.main")
    let seen = Collector<Int>()
    #expect(!thread.isCurrent)
    await concurrently(iterations: 1) { _ in
      for value in 0..<1_000 {
        thread.schedule { seen.append(thread.isCurrent ? value : -1) }
      }
    }
    #expect(await seen.wait(for: 1_000) == Array(0..<1_000))
  }

  @Test func scheduledFromItsOwnThreadRunsAfterCurrentWork() async {
    let thread = MainRunLoopThread(name: "test.nested")
    let seen = Collector<String>()
    thread.schedule {
      thread.schedule { seen.append("inner") }
      thread.execute { seen.append("execute-inline") }
      seen.append("outer")
    }
    #expect(await seen.wait(for: 3) == ["execute-inline", "outer", "inner"])
  }

  /// With no polling the thread sleeps after every item, so each round wakes it; with long polling each round is
  /// picked up by the polling drain instead.
  @Test(arguments: [Duration.zero, .milliseconds(20)])
  func runsWorkScheduledWhileIdleOrPolling(idlePolling: Duration) async {
    let thread = MainRunLoopThread(name: "test.idle", idlePolling: idlePolling)
    #expect(thread.idlePolling == idlePolling)
    for round in 0..<20 {
      let seen = Collector<Int>()
      thread.schedule { seen.append(round) }
      #expect(await seen.wait(for: 1) == [round])
    }
  }

  @Test func mainQueueReportsItsThread() async {
    let queue = MainQueue.runLoopThread(MainRunLoopThread(name: "test.queue"))
    let seen = Collector<Bool>()
    queue.schedule { seen.append(queue.isCurrent) }
    #expect(await seen.wait(for: 1) == [true])
    #expect(!queue.isCurrent)
  }
}
