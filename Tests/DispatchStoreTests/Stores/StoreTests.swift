import Dispatch
import Synchronization
import Testing

@testable import DispatchStore

@Suite("Store", .timeLimit(.minutes(1)), .watchdog)
struct StoreTests {
  @Test func synchronousObserversHearEachChangeOnceInOrderBeforeCompletion() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("observed")
    try dispatcher.register(store: store)
    let heard = Locked<[Int]>([])
    let actions = Locked<[CounterAction]>([])
    let token = store.observe(synchronously: true) { change in
      heard.withLock { $0.append(change.model.count) }
      actions.withLock { $0.append(change.action) }
    }

    for amount in 1...5 {
      dispatcher.dispatch(action: CounterAction.increaseLater(amount), mode: .sync) { _ in
        // Synchronous observers ran before the completion.
        #expect(heard.withLock { $0.last } == (1...amount).reduce(0, +))
      }
    }
    #expect(dispatchSync(dispatcher, CounterAction.noop).isSuccess)

    #expect(heard.withLock { $0 } == [1, 3, 6, 10, 15])
    #expect(actions.withLock { $0 } == (1...5).map { CounterAction.increaseLater($0) })
    withExtendedLifetime(token) {}
  }

  @Test func mainThreadObserversHearChangesInOrderOnTheMainRunLoopThread() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("observed")
    try dispatcher.register(store: store)
    let heard = Collector<Int>()
    let token = store.observe { change in
      heard.append(MainRunLoopThread.shared.isCurrent ? change.model.count : -1)
    }

    for _ in 1...20 {
      try await dispatcher.dispatch(action: CounterAction.increase(1), mode: .async)
    }

    #expect(await heard.wait(for: 20) == Array(1...20))
    withExtendedLifetime(token) {}
  }

  @Test func concurrentChangesAreEachAnnouncedOnceAndInOrder() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("busy")
    try dispatcher.register(store: store)
    let heard = Collector<Int>()
    let token = store.observe(synchronously: true) { change in heard.append(change.model.count) }
    let done = Collector<Bool>()

    await onThreads(4) { _ in
      for _ in 0..<100 {
        dispatcher.dispatch(action: CounterAction.increase(1), mode: .async) { done.append($0.isSuccess) }
      }
    }
    _ = await done.wait(for: 400)

    let counts = heard.values
    // Each notification carries a later model than the one before: no reordering, no repeats.
    #expect(zip(counts, counts.dropFirst()).allSatisfy { $0 < $1 })
    #expect(counts.last == 400)
    withExtendedLifetime(token) {}
  }

  @Test func releasingTheTokenEndsTheObservation() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("released")
    try dispatcher.register(store: store)
    let calls = Atomic<Int>(0)
    var token: ObservationToken? = store.observe(synchronously: true) { _ in calls.add(1, ordering: .relaxed) }
    #expect(store.observerCount == 1)

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(token != nil)
    token = nil
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    #expect(calls.load(ordering: .relaxed) == 1)
    #expect(store.observerCount == 0)
  }

  @Test func cancelledObservationIsNotCalled() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("cancelled")
    try dispatcher.register(store: store)
    let calls = Atomic<Int>(0)
    let token = store.observe(synchronously: true) { _ in calls.add(1, ordering: .relaxed) }

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    token.cancel()
    token.cancel()  // A second cancel does nothing.
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    #expect(calls.load(ordering: .relaxed) == 1)
    #expect(store.observerCount == 0)
    withExtendedLifetime(token) {}
  }

  @Test func observersCanComeAndGoAcrossTheStoresLife() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("lifecycle")
    try dispatcher.register(store: store)
    // Nobody has observed yet: changes go unannounced.
    #expect(store.observerCount == 0)
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    let heard = Locked<[Int]>([])
    let first = store.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.count) } }
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    first.cancel()
    #expect(store.observerCount == 0)
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    // A store whose observers all left takes new ones.
    let second = store.observe(synchronously: true) { change in heard.withLock { $0.append(-change.model.count) } }
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    #expect(heard.withLock { $0 } == [2, -4])
    #expect(store.observerCount == 1)
    withExtendedLifetime((first, second)) {}
  }

  @Test func observersAreNotCalledWhenNothingChangedOrReducerDeclines() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("quiet", notify: { action in action != .increase(100) })
    try dispatcher.register(store: store)
    let heard = Locked<[Int]>([])
    let token = store.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.count) } }

    #expect(dispatchSync(dispatcher, CounterAction.noop).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.increase(100)).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.noop).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    #expect(heard.withLock { $0 } == [101])
    withExtendedLifetime(token) {}
  }

  @Test func observerRegisteredAfterUnobservedChangesHearsTheNextChangeWithTheWholeModel() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("late")
    try dispatcher.register(store: store)
    // Nobody observes these: the store skips announcing them.
    for _ in 0..<3 { #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess) }
    let heard = Locked<[Int]>([])
    let token = store.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.count) } }
    #expect(dispatchSync(dispatcher, CounterAction.increase(10)).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.noop).isSuccess)
    #expect(heard.withLock { $0 } == [13])
    withExtendedLifetime(token) {}
  }

  @Test func exposesTypeErasedModel() throws {
    let store: any AnyStore = makeCounterStore("erased")
    #expect(store.identifier == "erased")
    #expect(store.anyModel as? Counter == Counter())
    let typed = try #require(store as? any TypedStore)
    #expect(ObjectIdentifier(typed.actionType) == ObjectIdentifier(CounterAction.self))
    #expect(ObjectIdentifier(typed.modelType) == ObjectIdentifier(Counter.self))
  }
}
