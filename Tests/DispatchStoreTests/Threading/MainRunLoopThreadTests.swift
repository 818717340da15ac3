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

/// The test runner has an `async` main, which services `DispatchQueue.main`: on Linux through `dispatchMain()`, so
/// that a thread of Dispatch's pool, not the main thread, runs the main queue's work.
@Suite("MainQueue.processMainThread", .timeLimit(.minutes(1)))
struct ProcessMainThreadTests {
  @Test func reportsItsThreadWhileRunningTheMainQueuesWork() async {
    let queue = MainQueue.processMainThread
    #expect(await Self.isCurrentInMainQueueWork())
    let seen = Collector<Bool>()
    DispatchQueue.global().async { seen.append(queue.isCurrent) }
    #expect(await seen.wait(for: 1) == [false])
  }

  @Test func mainThreadDispatchesRunInOrderOnTheMainQueueAndNotifyThere() async throws {
    // A queue that did not know its own work would send every dispatch back to itself forever: fail instead.
    try #require(await Self.isCurrentInMainQueueWork())
    let dispatcher = Dispatcher(mainQueue: .processMainThread)
    let queue = MainQueue.processMainThread
    let started = Collector<Bool>()
    let store = makeCounterStore("main", onStart: { _, _ in started.append(queue.isCurrent) })
    try dispatcher.register(store: store)
    let token = ObserverToken()
    let heard = Collector<Int>()
    store.register(observer: token, delivery: .mainThread) { model, _ in
      heard.append(queue.isCurrent ? model.count : -1)
    }
    let completions = Collector<Bool>()

    for amount in 1...20 {
      let action: CounterAction = amount.isMultiple(of: 2) ? .increaseLater(amount) : .increase(amount)
      dispatcher.dispatch(action: action, mode: .mainThread) { result in
        completions.append(result.isSuccess && queue.isCurrent)
      }
    }

    #expect(await completions.wait(for: 20) == Array(repeating: true, count: 20))
    #expect(await started.wait(for: 20) == Array(repeating: true, count: 20))
    // Each change is heard on the main queue, in order, with the model as it was after that action.
    let sums = (1...20).map { $0 * ($0 + 1) / 2 }
    #expect(await heard.wait(for: 20) == sums)
    #expect(store.model.log == (1...20).map { "main+\($0)" })
    withExtendedLifetime(token) {}
  }

  /// Whether `processMainThread` reports itself current in work it runs.
  static func isCurrentInMainQueueWork() async -> Bool {
    let queue = MainQueue.processMainThread
    let seen = Collector<Bool>()
    queue.schedule { seen.append(queue.isCurrent) }
    return await seen.wait(for: 1) == [true]
  }
}
