import Dispatch
import Foundation
import Synchronization
import Testing

@testable import DispatchStore

@Suite("MainRunLoopThread", .timeLimit(.minutes(1)), .watchdog)
struct MainRunLoopThreadTests {
  @Test func runsScheduledWorkInOrderOnItsOwnThread() async {
    let thread = MainRunLoopThread(name: "test.main")
    let seen = Collector<Int>()
    #expect(!thread.isCurrent)
    await onThreads(1) { _ in
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

#if os(Linux)
  /// A `MainRunLoopThread` owns an OS thread only while it is in use: stopping or releasing it ends the thread.
  @Suite("MainRunLoopThread lifetime", .timeLimit(.minutes(1)), .watchdog)
  struct MainRunLoopThreadLifetimeTests {
    /// Twenty threads, each stopped or released after running work: each OS thread ends, checked by its kernel
    /// thread identifier (other tests start threads meanwhile, so the process's thread count proves nothing).
    @Test(arguments: [true, false])
    func stoppedOrReleasedThreadsEndTheirOSThreads(explicitly: Bool) {
      var threads: [MainRunLoopThread] = (0..<20).map { MainRunLoopThread(name: "test.end.\($0)") }
      let cores = threads.map(\.core)
      let identifiers = Locked<[String]>([])
      let ran = DispatchSemaphore(value: 0)
      for thread in threads {
        thread.schedule {
          identifiers.withLock { $0.append(currentTaskIdentifier()) }
          ran.signal()
        }
      }
      for _ in threads { ran.wait() }
      let started = identifiers.withLock { $0 }
      #expect(started.allSatisfy(taskExists))

      if explicitly {
        for thread in threads { thread.stop() }
      } else {
        threads.removeAll()
      }
      for core in cores { core.exited.wait() }

      // The loops ended; only the kernel's reaping of each thread remains.
      for identifier in started { #expect(taskEnds(identifier)) }
      withExtendedLifetime(threads) {}
    }

    /// Work scheduled before `stop()` all runs; work scheduled after it starts a new OS thread, which is current.
    @Test func stopRunsWorkScheduledBeforeAndRestartsForWorkAfter() {
      let thread = MainRunLoopThread(name: "test.restart", idlePolling: .zero)
      let seen = Locked<[Int]>([])
      let done = DispatchSemaphore(value: 0)
      for value in 0..<100 {
        thread.schedule {
          seen.withLock { $0.append(value) }
          if value == 99 { done.signal() }
        }
      }
      thread.stop()
      done.wait()
      thread.core.exited.wait()
      #expect(seen.withLock { $0 } == Array(0..<100))

      let current = Locked<Bool?>(nil)
      thread.schedule {
        current.withLock { $0 = thread.isCurrent }
        done.signal()
      }
      done.wait()
      #expect(current.withLock { $0 } == true)
      thread.stop()
      thread.core.exited.wait()
    }
  }

  /// The calling thread's kernel thread identifier, as `/proc/thread-self` names it (`gettid` is not imported).
  private func currentTaskIdentifier() -> String {
    let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
    return String(path.split(separator: "/").last ?? "")
  }

  /// Whether the kernel still lists the thread `identifier` in this process.
  private func taskExists(_ identifier: String) -> Bool {
    FileManager.default.fileExists(atPath: "/proc/self/task/\(identifier)")
  }

  /// Whether the thread `identifier`, whose loop ended, is gone once the kernel reaped it: a bounded number of
  /// yields, not a sleep, since nothing in the process can signal a thread's last instruction.
  private func taskEnds(_ identifier: String) -> Bool {
    for _ in 0..<100_000 {
      if !taskExists(identifier) { return true }
      sched_yield()
    }
    return false
  }
#endif

/// The test runner has an `async` main, which services `DispatchQueue.main`: on Linux through `dispatchMain()`, so
/// that a thread of Dispatch's pool, not the main thread, runs the main queue's work.
@Suite("MainQueue.processMainThread", .timeLimit(.minutes(1)), .watchdog)
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
    let heard = Collector<Int>()
    let token = store.observe { change in
      heard.append(queue.isCurrent ? change.model.count : -1)
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
