import Dispatch
import Foundation
import Testing

@testable import DispatchStore

// Three minutes: `drainGivesUpAfterItsPassLimitWhenWorkKeepsComing` makes 2,000 hand-offs to the run-loop thread,
// each waiting for the scheduler, and the recording stress tests that run beside it keep both cores busy (33 s
// measured in the plain run, 77 s once in CI before those tests ran one mode at a time).
@Suite("MainQueue.drain and waitUntilDrained", .timeLimit(.minutes(3)), .watchdog)
struct MainQueueDrainTests {
  @Test func theDefaultIsTheLibraryThreadOnLinuxAndTheProcessMainThreadOnApplePlatforms() {
    #if canImport(Darwin)
      #expect(MainQueue.default.isCurrent == Thread.isMainThread)
    #else
      // On Linux the default is the library's run-loop thread: work scheduled there reports it current.
      let seen = DispatchSemaphore(value: 0)
      let current = Locked(false)
      MainQueue.default.schedule {
        current.withLock { $0 = MainRunLoopThread.shared.isCurrent }
        seen.signal()
      }
      seen.wait()
      #expect(current.withLock { $0 })
    #endif
  }

  /// A tool dispatches, then exits: without a drain, notifications still queued for the main thread are lost.
  ///
  /// Each test drains a run-loop thread of its own: the shared one also runs the work of tests running meanwhile.
  @Test func waitUntilDrainedDeliversEveryPendingMainThreadNotification() throws {
    let thread = MainRunLoopThread(name: "drain-test", idlePolling: .zero)
    let dispatcher = Dispatcher(mainQueue: .runLoopThread(thread))
    let store = makeCounterStore("counter")
    try dispatcher.register(store: store)
    let heard = Locked<[Int]>([])
    // The first notification holds the main queue until the dispatches returned: every notification is still
    // pending when the drain starts.
    let dispatched = DispatchSemaphore(value: 0)
    let token = store.observe { change in
      if change.model.count == 1 { dispatched.wait() }
      heard.withLock { $0.append(change.model.count) }
    }
    for _ in 1...9 { #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess) }
    #expect(heard.withLock { $0 }.isEmpty)
    dispatched.signal()

    #expect(dispatcher.waitUntilDrained())
    #expect(heard.withLock { $0 } == Array(1...9))
    withExtendedLifetime(token) {}
  }

  @Test func waitUntilDrainedWaitsForWorkThatPendingWorkSchedules() throws {
    let thread = MainRunLoopThread(name: "drain-chain", idlePolling: .zero)
    let dispatcher = Dispatcher(mainQueue: .runLoopThread(thread))
    let store = makeCounterStore("counter")
    try dispatcher.register(store: store)
    // Each notification below 5 dispatches again on the main thread, which notifies again.
    let token = store.observe { change in
      if change.model.count < 5 { dispatcher.dispatch(action: CounterAction.increase(1), mode: .mainThread) }
    }
    dispatcher.dispatch(action: CounterAction.increase(1), mode: .mainThread)

    #expect(dispatcher.waitUntilDrained())
    #expect(store.model.count == 5)
    withExtendedLifetime(token) {}
  }

  @Test func drainGivesUpAfterItsPassLimitWhenWorkKeepsComing() async {
    let thread = MainRunLoopThread(name: "drain-endless", idlePolling: .zero)
    let queue = MainQueue.runLoopThread(thread)
    let running = Locked(true)
    let passes = Locked(0)
    // Work that schedules more work, for ever, until stopped.
    @Sendable func again() {
      passes.withLock { $0 += 1 }
      if running.withLock({ $0 }) { queue.schedule(again) }
    }
    queue.schedule(again)
    // The blocking form, called from synchronous code on a thread of its own: its thousands of hand-offs to the
    // run-loop thread would hold a thread of the cooperative pool meanwhile.
    #expect(await onOwnThread { queue.waitUntilDrained() } == false)
    #expect(await queue.drain() == false)
    #expect(passes.withLock { $0 } >= 2 * MainQueue.drainPassLimit)
    running.withLock { $0 = false }
    #expect(await queue.drain())
  }

  @Test func waitUntilDrainedFromTheQueuesOwnThreadReturnsFalseInsteadOfWaitingForItself() {
    let thread = MainRunLoopThread(name: "drain-self", idlePolling: .zero)
    let queue = MainQueue.runLoopThread(thread)
    let result = Locked<Bool?>(nil)
    let done = DispatchSemaphore(value: 0)
    queue.schedule {
      result.withLock { $0 = queue.waitUntilDrained() }
      done.signal()
    }
    done.wait()
    #expect(result.withLock { $0 } == false)
  }

  @Test func awaitedDrainDeliversPendingNotifications() async throws {
    let thread = MainRunLoopThread(name: "drain-async", idlePolling: .zero)
    let dispatcher = Dispatcher(mainQueue: .runLoopThread(thread))
    let store = makeCounterStore("counter")
    try dispatcher.register(store: store)
    let heard = Locked(0)
    let token = store.observe { change in heard.withLock { $0 += 1 } }
    for _ in 1...9 { try await dispatcher.dispatch(action: CounterAction.increase(1), mode: .sync) }

    await dispatcher.drain()
    #expect(heard.withLock { $0 } == 9)
    withExtendedLifetime(token) {}
  }

  /// The test runner's `async` main services the main actor.
  @Test func mainActorObserversHearEveryChangeInOrderOnTheMainActor() async throws {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    // Reduced in place: each dispatch is one change, announced on its own.
    let store = Store(identifier: "counter", model: Counter()) { (action: CounterAction, model) in
      if case .increase(let amount) = action { model.count += amount }
    }
    try dispatcher.register(store: store)
    let heard = MainActorLog()
    let token = store.observeOnMainActor { change in
      heard.counts.append(change.model.count)  // a main-actor property: no assumeIsolated needed
    }
    await onThreads(4) { _ in
      for _ in 0..<25 { _ = dispatchSync(dispatcher, CounterAction.increase(1)) }
    }

    await MainQueue.processMainThread.drain()
    let counts = await MainActor.run { heard.counts }
    #expect(counts == Array(1...100))
    withExtendedLifetime(token) {}
  }
}

@MainActor
final class MainActorLog: Sendable {
  var counts: [Int] = []
  nonisolated init() {}
}
