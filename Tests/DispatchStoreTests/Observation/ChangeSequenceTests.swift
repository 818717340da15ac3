import Foundation
import Testing

@testable import DispatchStore

@Suite("Store.changes and Dispatcher.transactions", .timeLimit(.minutes(1)), .watchdog)
struct ChangeSequenceTests {
  @Test func changesArriveInOrderWithTheirActions() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("counter")
    try dispatcher.register(store: store)
    let changes = store.changes(bufferingNewest: 10)
    for amount in 1...5 { try await dispatcher.dispatch(action: CounterAction.increase(amount), mode: .sync) }

    var heard: [(Int, CounterAction)] = []
    for await change in changes {
      heard.append((change.model.count, change.action))
      if heard.count == 5 { break }
    }
    #expect(heard.map(\.0) == [1, 3, 6, 10, 15])
    #expect(heard.map(\.1) == (1...5).map { CounterAction.increase($0) })
  }

  @Test func theDefaultKeepsOnlyTheLatestChangeForASlowConsumer() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("counter")
    try dispatcher.register(store: store)
    let changes = store.changes()
    for _ in 1...100 { try await dispatcher.dispatch(action: CounterAction.increase(1), mode: .sync) }
    var iterator = changes.makeAsyncIterator()

    #expect(await iterator.next()?.model.count == 100)
    // Nothing older waits behind it: the next change is the next one made.
    try await dispatcher.dispatch(action: CounterAction.increase(1), mode: .sync)
    #expect(await iterator.next()?.model.count == 101)
  }

  @Test func newestBuffersAtMostItsCount() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("counter")
    try dispatcher.register(store: store)
    let changes = store.changes(bufferingNewest: 3)
    for _ in 1...10 { try await dispatcher.dispatch(action: CounterAction.increase(1), mode: .sync) }
    var iterator = changes.makeAsyncIterator()

    #expect(await iterator.next()?.model.count == 8)
    #expect(await iterator.next()?.model.count == 9)
    #expect(await iterator.next()?.model.count == 10)
  }

  @Test func theSequenceEndsWhenTheStoreIsReleased() async throws {
    var store: Store<Counter, CounterAction>? = makeCounterStore("counter")
    let changes = store!.changes(bufferingNewest: 10)
    let consumer = Task {
      var count = 0
      for await _ in changes { count += 1 }
      return count
    }
    let dispatcher = Dispatcher()
    try dispatcher.register(store: store!)
    try await dispatcher.dispatch(action: CounterAction.increase(1), mode: .sync)
    dispatcher.unregister(storeIdentifier: "counter")
    store = nil

    #expect(await consumer.value == 1)
  }

  @Test func cancellingTheConsumingTaskEndsTheObservation() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("counter")
    try dispatcher.register(store: store)
    let started = Collector<Bool>()
    let changes = store.changes()
    let consumer = Task {
      started.append(true)
      for await _ in changes {}
      return Task.isCancelled
    }
    _ = await started.wait(for: 1)
    #expect(store.observerCount == 1)
    consumer.cancel()

    #expect(await consumer.value)
    #expect(store.observerCount == 0)
  }

  @Test func releasingAnUnconsumedSequenceEndsTheObservation() throws {
    let store = makeCounterStore("counter")
    var changes: AsyncStream<ModelChange<Counter, CounterAction>>? = store.changes()
    #expect(store.observerCount == 1)
    changes = nil
    #expect(store.observerCount == 0)
    withExtendedLifetime(changes) {}
  }

  @Test func transactionsArriveAsTheyFinish() async throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeCounterStore("a"))
    try dispatcher.register(store: makeCounterStore("b", waits: { _ in ["a"] }))
    let transactions = dispatcher.transactions(bufferingNewest: 10)
    try await dispatcher.dispatch(action: CounterAction.increase(1), mode: .sync)
    _ = await dispatcher.dispatchResult(CounterAction.fail)

    var heard: [String] = []
    for await transaction in transactions {
      heard.append("\(transaction.storeIdentifier):\(transaction.succeeded)")
      if heard.count == 3 { break }
    }
    // `b` waits for `a`: once `a` failed, `b` did not start, and has no transaction.
    #expect(heard == ["a:true", "b:true", "a:false"])
  }

  @Test func transactionsEndWhenTheDispatcherIsReleasedAndStopOnCancellation() async throws {
    var dispatcher: Dispatcher? = Dispatcher()
    try dispatcher!.register(store: makeCounterStore("a"))
    let transactions = dispatcher!.transactions(bufferingNewest: 10)
    let consumer = Task {
      var count = 0
      for await _ in transactions { count += 1 }
      return count
    }
    try await dispatcher!.dispatch(action: CounterAction.increase(1), mode: .sync)
    dispatcher = nil
    #expect(await consumer.value == 1)

    // A cancelled consumer unregisters its middleware: later dispatches feed nothing.
    let kept = Dispatcher()
    try kept.register(store: makeCounterStore("a"))
    let feeding = kept.transactions()
    #expect(!kept.registry.withLock { $0.middleware.isEmpty })
    let cancelled = Task {
      for await _ in feeding {}
    }
    cancelled.cancel()
    await cancelled.value
    #expect(kept.registry.withLock { $0.middleware.isEmpty })
  }
}

extension Dispatcher {
  /// The result of a `.sync` dispatch, without throwing.
  func dispatchResult<Action: ActionType>(_ action: Action) async -> Result<Void, DispatchError> {
    do {
      try await dispatch(action: action, mode: .sync)
      return .success(())
    } catch {
      return .failure(error)
    }
  }
}
