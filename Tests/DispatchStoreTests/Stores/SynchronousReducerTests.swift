import Dispatch
import Foundation
import Synchronization
import Testing

@testable import DispatchStore

/// Reduces counter actions in place; `.fail` changes the model, then throws.
final class CounterSynchronousReducer: SynchronousReducer<Counter, CounterAction>, @unchecked Sendable {
  let waits: @Sendable (CounterAction) -> [String]
  /// Called inside `reduce`, under the store's lock.
  let inside: @Sendable (CounterAction) -> Void

  init(
    waits: @escaping @Sendable (CounterAction) -> [String] = { _ in [] },
    inside: @escaping @Sendable (CounterAction) -> Void = { _ in }
  ) {
    self.waits = waits
    self.inside = inside
  }

  override func waitList(for action: CounterAction) -> [String] { waits(action) }

  override func reduce(_ action: CounterAction, into model: inout Counter) throws {
    inside(action)
    switch action {
    case .increase(let amount), .increaseLater(let amount):
      model.count += amount
      model.log.append("reduced+\(amount)")
    case .fail:
      model.log.append("before failing")
      throw TestFailure(reason: "reduce failed")
    case .abandon, .noop:
      break
    }
  }
}

/// A synchronous reducer that overrides nothing.
final class EmptySynchronousReducer: SynchronousReducer<Counter, CounterAction>, @unchecked Sendable {}

@Suite("SynchronousReducer", .timeLimit(.minutes(1)), .watchdog)
struct SynchronousReducerTests {
  @Test(arguments: Dispatcher.Mode.allCases)
  func reducesInPlaceInEveryMode(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "counter", model: Counter(), reducer: CounterSynchronousReducer())
    try dispatcher.register(store: store)

    for amount in 1...3 {
      try await dispatcher.dispatch(action: CounterAction.increase(amount), mode: mode)
    }

    #expect(store.model.count == 6)
    #expect(store.model.log == ["reduced+1", "reduced+2", "reduced+3"])
  }

  @Test func storeReducesWithoutMakingAnOperation() {
    let store = Store(identifier: "counter", model: Counter(), reducer: CounterSynchronousReducer())

    guard case .reduced(error: nil) = store.handle(CounterAction.increase(5), hooked: nil) else {
      Issue.record("expected the action reduced in place")
      return
    }
    #expect(store.model.count == 5)
    // An operation reducer's store returns the operation instead.
    guard case .operation = makeCounterStore("operations").handle(CounterAction.increase(1), hooked: nil) else {
      Issue.record("expected an operation")
      return
    }
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func thrownErrorFailsTheTransactionNotifiesNobodyAndKeepsTheChangesMadeBefore(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "counter", model: Counter(), reducer: CounterSynchronousReducer())
    try dispatcher.register(store: store)
    let heard = Locked<[[String]]>([])
    let token = store.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.log) } }

    let result = await withCheckedContinuation { continuation in
      dispatcher.dispatch(action: CounterAction.fail, mode: mode) { continuation.resume(returning: $0) }
    }

    guard case .operationsFailed(let failures) = result.dispatchError else {
      Issue.record("expected operationsFailed, got \(result)")
      return
    }
    #expect(failures.map(\.storeIdentifier) == ["counter"])
    #expect(failures.first?.error as? TestFailure == TestFailure(reason: "reduce failed"))
    #expect(store.model.log == ["before failing"])
    // A reduction that throws notifies nobody; what it changed before is heard with the next change.
    #expect(heard.withLock { $0 }.isEmpty)
    try dispatcher.dispatchSync(action: CounterAction.increase(1))
    #expect(heard.withLock { $0 } == [["before failing", "reduced+1"]])
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aReducerThatThrowsWithoutChangingTheModelNotifiesNoObserver(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "counter", model: Counter()) { (action: CounterAction, model: inout Counter) in
      guard case .increase(let amount) = action, amount > 0 else { throw TestFailure(reason: "refused") }
      model.count += amount
    }
    try dispatcher.register(store: store)
    let synchronous = Locked<[Int]>([])
    let onMain = Collector<Int>()
    let tokens = [
      store.observe(synchronously: true) { change in synchronous.withLock { $0.append(change.model.count) } },
      store.observe { change in onMain.append(change.model.count) },
    ]

    await #expect(throws: DispatchError.self) {
      try await dispatcher.dispatch(action: CounterAction.increase(-1), mode: mode)
    }
    try await dispatcher.dispatch(action: CounterAction.increase(2), mode: mode)

    // Only the change: main-thread notifications keep the order of changes, so the first heard is the second
    // dispatch's.
    #expect(await onMain.wait(for: 1) == [2])
    #expect(synchronous.withLock { $0 } == [2])
    withExtendedLifetime(tokens) {}
  }

  @Test func reducerThatOverridesNothingFailsWithNotImplemented() throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: Store(identifier: "empty", model: Counter(), reducer: EmptySynchronousReducer()))

    let result = dispatchSync(dispatcher, CounterAction.increase(1))

    guard case .operationsFailed(let failures) = result.dispatchError else {
      Issue.record("expected operationsFailed, got \(result)")
      return
    }
    #expect(failures.first?.error as? DispatchError == .reducerNotImplemented(storeIdentifier: "empty"))
  }

  @Test(arguments: [Dispatcher.Mode.sync, .async])
  func waitsForAndIsWaitedForByStoresWithOperations(mode: Dispatcher.Mode) async throws {
    // first (operation, finishes later on another thread) <- second (in place) <- third (operation).
    let dispatcher = Dispatcher()
    let order = Locked<[String]>([])
    let first = makeCounterStore("first", onStart: { _, _ in order.withLock { $0.append("first") } })
    let second = Store(
      identifier: "second", model: Counter(),
      reducer: CounterSynchronousReducer(
        waits: { _ in ["first"] }, inside: { _ in order.withLock { $0.append("second") } }))
    let third = makeCounterStore(
      "third", waits: { _ in ["second"] }, onStart: { _, _ in order.withLock { $0.append("third") } })
    for store in [third, first] { try dispatcher.register(store: store) }
    try dispatcher.register(store: second)

    try await dispatcher.dispatch(action: CounterAction.increaseLater(2), mode: mode)

    #expect(order.withLock { $0 } == ["first", "second", "third"])
    #expect(first.model.count == 2 && second.model.count == 2 && third.model.count == 2)
  }

  @Test func middlewareAndObserversSeeEachReduction() throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "counter", model: Counter(), reducer: CounterSynchronousReducer())
    try dispatcher.register(store: store)
    let middleware = RecordingMiddleware()
    dispatcher.register(middleware: middleware)
    let heard = Locked<[Int]>([])
    let token = store.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.count) } }

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.increase(2)).isSuccess)

    #expect(heard.withLock { $0 } == [1, 3])
    let transactions = middleware.transactions.withLock { $0 }
    #expect(transactions.count == 2)
    #expect(transactions.allSatisfy { $0.succeeded && $0.storeIdentifier == "counter" })
    #expect(middleware.events.withLock { $0.count } == 4)
    withExtendedLifetime(token) {}
  }

  @Test func syncDispatchFromInsideReduceFailsAsReentrant() throws {
    let dispatcher = Dispatcher()
    let inner = Locked<Result<Void, DispatchError>?>(nil)
    let store = Store(
      identifier: "counter", model: Counter(),
      reducer: CounterSynchronousReducer(inside: { action in
        guard action == .increase(1) else { return }
        dispatcher.dispatch(action: CounterAction.increase(10), mode: .sync) { result in
          inner.withLock { $0 = result }
        }
      }))
    try dispatcher.register(store: store)

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    guard case .reentrantSynchronousDispatch = inner.withLock({ $0 })?.dispatchError else {
      Issue.record("expected reentrantSynchronousDispatch, got \(String(describing: inner.withLock { $0 }))")
      return
    }
    #expect(store.model.count == 1)
  }

  @Test func recorderRecordsReductionsAndTheyReplay() throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "counter", model: Counter(), reducer: CounterSynchronousReducer())
    try dispatcher.register(store: store)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)

    for amount in [1, 2, 3] { #expect(dispatchSync(dispatcher, CounterAction.increase(amount)).isSuccess) }

    #expect(recorder.records.map { ($0.model as? Counter)?.count } == [1, 3, 6])
    _ = try recorder.undo()
    #expect(store.model.count == 3)
  }
}
