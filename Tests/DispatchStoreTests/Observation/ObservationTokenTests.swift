import Dispatch
import Synchronization
import Testing

@testable import DispatchStore

/// Something an observation's closure captures, to see when the store lets go of the closure.
final class Canary: Sendable {}

@Suite("ObservationToken", .timeLimit(.minutes(1)), .watchdog)
struct ObservationTokenTests {
  @Test func tokenObservationHearsEachChangeUntilCancelled() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("observed")
    try dispatcher.register(store: store)
    let heard = Locked<[Int]>([])
    let token = store.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.count) } }
    #expect(store.observerCount == 1)

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.increase(2)).isSuccess)
    token.cancel()
    token.cancel()  // A second cancel does nothing.
    #expect(dispatchSync(dispatcher, CounterAction.increase(4)).isSuccess)

    #expect(heard.withLock { $0 } == [1, 3])
    #expect(store.observerCount == 0)
  }

  @Test func releasingTheTokenEndsTheObservationAndReleasesTheClosure() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("released")
    try dispatcher.register(store: store)
    let calls = Atomic<Int>(0)
    var canary: Canary? = Canary()
    weak let watchedCanary = canary
    var token: ObservationToken? = store.observe(synchronously: true) { [canary] change in
      withExtendedLifetime(canary) {}
      calls.add(1, ordering: .relaxed)
    }
    canary = nil
    #expect(watchedCanary != nil)

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    token = nil
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    #expect(calls.load(ordering: .relaxed) == 1)
    #expect(watchedCanary == nil)
    #expect(store.observerCount == 0)
    withExtendedLifetime(token) {}
  }

  @Test func mainThreadTokenObservationHearsChangesInOrderOnTheMainRunLoopThread() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("main")
    try dispatcher.register(store: store)
    let heard = Collector<Int>()
    let token = store.observe { change in heard.append(MainRunLoopThread.shared.isCurrent ? change.model.count : -1) }

    for _ in 1...20 {
      try await dispatcher.dispatch(action: CounterAction.increase(1), mode: .async)
    }

    #expect(await heard.wait(for: 20) == Array(1...20))
    withExtendedLifetime(token) {}
  }

  /// A notification scheduled on the main queue before the token was cancelled finds the observation ended there.
  @Test func aMainQueueNotificationScheduledBeforeTheTokenWasCancelledIsNotDelivered() async throws {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    let store = makeCounterStore("scheduled")
    try dispatcher.register(store: store)
    let calls = Atomic<Int>(0)
    let token = store.observe { _ in calls.add(1, ordering: .relaxed) }
    // The main queue is held: the notification waits behind this.
    let hold = DispatchSemaphore(value: 0)
    dispatcher.mainQueue.schedule { hold.wait() }
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    token.cancel()
    hold.signal()
    // The main queue runs in order: once this ran, so did the notification scheduled before it. (Not `drain()`: other
    // suites schedule on the same library thread, and it may not find it idle.)
    await withCheckedContinuation { ran in dispatcher.mainQueue.schedule { ran.resume() } }
    #expect(calls.load(ordering: .relaxed) == 0)
  }

  /// A change an observer made from inside itself is queued behind its own notification; the observer cancelled
  /// there does not hear it.
  @Test func anObserverCancelledInsideItselfDoesNotHearTheChangeItQueued() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("inside")
    try dispatcher.register(store: store)
    let heard = Locked<[Int]>([])
    let token = Locked<ObservationToken?>(nil)
    token.withLock { held in
      held = store.observe(synchronously: true) { change in
        heard.withLock { $0.append(change.model.count) }
        guard change.model.count == 1 else { return }
        // Delivered after this notification, by this thread.
        _ = try? dispatcher.dispatchSync(action: CounterAction.increase(10))
        token.withLock { $0 }?.cancel()
      }
    }
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(store.model.count == 11)
    #expect(heard.withLock { $0 } == [1])
  }

  /// Once every observation ended, a change asks nobody whether to notify: the store does not take it for an
  /// observer registered meanwhile.
  @Test func aStoreWhoseObserversAllEndedDoesNotAskWhetherToNotify() throws {
    let dispatcher = Dispatcher()
    let asked = Atomic<Int>(0)
    let store = makeCounterStore(
      "ended",
      notify: { _ in
        asked.add(1, ordering: .relaxed)
        return true
      })
    try dispatcher.register(store: store)
    let token = store.observe(synchronously: true) { _ in }
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(asked.load(ordering: .relaxed) == 1)
    token.cancel()
    for _ in 0..<3 { #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess) }
    #expect(asked.load(ordering: .relaxed) == 1)
    #expect(store.model.count == 4)
  }

  @Test func cancellingOneObservationLeavesTheOthers() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("both")
    try dispatcher.register(store: store)
    let tokenCalls = Atomic<Int>(0)
    let objectCalls = Atomic<Int>(0)
    let first = store.observe(synchronously: true) { change in tokenCalls.add(1, ordering: .relaxed) }
    let second = store.observe(synchronously: true) { change in tokenCalls.add(10, ordering: .relaxed) }
    let third = store.observe(synchronously: true) { _ in objectCalls.add(1, ordering: .relaxed) }
    #expect(store.observerCount == 3)

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    // Cancelling two observations leaves the third.
    third.cancel()
    first.cancel()
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    #expect(tokenCalls.load(ordering: .relaxed) == 21)
    #expect(objectCalls.load(ordering: .relaxed) == 1)
    #expect(store.observerCount == 1)
    withExtendedLifetime(second) {}
  }

  @Test func tokensCancelledWhileOtherThreadsDispatchStopHearing() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("busy")
    try dispatcher.register(store: store)
    let tokens = Locked<[ObservationToken]>([])
    let heard = Atomic<Int>(0)
    for _ in 0..<8 {
      let token = store.observe(synchronously: true) { change in heard.add(1, ordering: .relaxed) }
      tokens.withLock { $0.append(token) }
    }

    await onThreads(4) { thread in
      for round in 0..<200 {
        try? dispatcher.dispatchSync(action: CounterAction.increase(1))
        // Two threads cancel tokens while the others dispatch.
        if thread < 2, round % 50 == 0 {
          tokens.withLock { $0.popLast() }?.cancel()
        }
      }
    }

    #expect(store.model.count == 800)
    #expect(store.observerCount == 0)
    let before = heard.load(ordering: .relaxed)
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(heard.load(ordering: .relaxed) == before)
  }
}
