import Dispatch
import Synchronization
import Testing

@testable import DispatchStore

@Suite("Dispatcher", .timeLimit(.minutes(1)), .watchdog)
struct DispatcherTests {
  // MARK: Routing and registry

  @Test func routesActionToEveryStoreOfItsTypeAndNoOther() throws {
    let dispatcher = Dispatcher()
    let first = makeCounterStore("first")
    let second = makeCounterStore("second")
    let textReducer = TextReducer()
    let text = Store(identifier: "text", model: Text(), reducer: textReducer)
    try dispatcher.register(store: first)
    try dispatcher.register(store: text)
    try dispatcher.register(store: second)

    #expect(dispatchSync(dispatcher, CounterAction.increase(2)).isSuccess)

    #expect(first.model.count == 2)
    #expect(second.model.count == 2)
    #expect(text.model.value == "")
    #expect(textReducer.calls.load(ordering: .relaxed) == 0)
  }

  @Test func dispatchesToOneStoreByIdentifier() throws {
    let dispatcher = Dispatcher()
    let first = makeCounterStore("first")
    let second = makeCounterStore("second")
    try dispatcher.register(store: first)
    try dispatcher.register(store: second)

    #expect(dispatchSync(dispatcher, CounterAction.increase(5), storeIdentifier: "second").isSuccess)

    #expect(first.model.count == 0)
    #expect(second.model.count == 5)
  }

  @Test func failsDispatchToUnknownStore() {
    let dispatcher = Dispatcher()
    let error = dispatchSync(dispatcher, CounterAction.increase(1), storeIdentifier: "missing").dispatchError
    guard case .unknownStore(let identifier) = error else {
      Issue.record("expected unknownStore, got \(String(describing: error))")
      return
    }
    #expect(identifier == "missing")
  }

  @Test func failsDispatchToStoreOfAnotherActionType() throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: Store(identifier: "text", model: Text(), reducer: TextReducer()))
    let error = dispatchSync(dispatcher, CounterAction.increase(1), storeIdentifier: "text").dispatchError
    guard case .actionTypeMismatch(let identifier, _, _) = error else {
      Issue.record("expected actionTypeMismatch, got \(String(describing: error))")
      return
    }
    #expect(identifier == "text")
  }

  @Test func failsDispatchThatNoStoreHandles() throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: Store(identifier: "text", model: Text(), reducer: TextReducer()))
    let error = dispatchSync(dispatcher, CounterAction.increase(1)).dispatchError
    guard case .noRespondingStore = error else {
      Issue.record("expected noRespondingStore, got \(String(describing: error))")
      return
    }
  }

  @Test func rejectsSecondStoreWithSameIdentifier() throws {
    let dispatcher = Dispatcher()
    let original = makeCounterStore("counter")
    try dispatcher.register(store: original)
    #expect(throws: DispatchError.self) {
      try dispatcher.register(store: Store(identifier: "counter", model: Text(), reducer: TextReducer()))
    }
    #expect(dispatcher.store(with: "counter") === original)
    #expect(dispatcher.storeIdentifiers == ["counter"])
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(original.model.count == 1)
  }

  /// A store belongs to one dispatcher at a time.
  ///
  /// Once unregistered there (or once that dispatcher is gone), another may take it. Registering it again where it
  /// is registered is a duplicate, and leaves it registered.
  @Test func aStoreRegisteredWithOneDispatcherIsRefusedByAnother() throws {
    let first = Dispatcher()
    let second = Dispatcher()
    let store = makeCounterStore("shared")
    try first.register(store: store)
    #expect(throws: DispatchError.registeredElsewhere(storeIdentifier: "shared")) {
      try second.register(store: store)
    }
    #expect(second.store(with: "shared") == nil)
    #expect(throws: DispatchError.duplicateStoreIdentifier("shared")) { try first.register(store: store) }
    #expect(dispatchSync(first, CounterAction.increase(1)).isSuccess)
    #expect(store.model.count == 1)

    first.unregister(storeIdentifier: "shared")
    try second.register(store: store)
    #expect(dispatchSync(second, CounterAction.increase(2)).isSuccess)
    #expect(store.model.count == 3)

    // A dispatcher that is gone holds no store.
    var transient: Dispatcher? = Dispatcher()
    let orphan = makeCounterStore("orphan")
    try transient?.register(store: orphan)
    transient = nil
    try second.register(store: orphan)
  }

  /// Of two dispatchers registering one store at once, exactly one gets it.
  ///
  /// 200 rounds on the same two threads, which meet before each round: a pair of threads made per round waited for
  /// the scheduler 200 times, past the time limit while stress tests kept both cores busy.
  @Test func twoDispatchersRegisteringOneStoreAtOnceOneGetsIt() async {
    let rounds = (0..<200).map { _ in ([Dispatcher(), Dispatcher()], makeCounterStore("contended")) }
    let registered = Locked([Int](repeating: 0, count: rounds.count))
    let arrived = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
    await onThreads(2) { index in
      for (round, (dispatchers, store)) in rounds.enumerated() {
        // Each thread arrives, then waits for the other: both register at once.
        arrived[index].signal()
        arrived[1 - index].wait()
        if (try? dispatchers[index].register(store: store)) != nil { registered.withLock { $0[round] += 1 } }
      }
    }
    #expect(registered.withLock { $0 } == [Int](repeating: 1, count: rounds.count))
  }

  /// One thread unregisters a store while another registers it with the same dispatcher, from a round where it was
  /// registered or one where it was not: afterwards the store belongs to the dispatcher exactly when the dispatcher
  /// holds it (helper-61: the unregistering thread let go of the
  /// store after the other had registered it again, which left it registered with no dispatcher, and free to be
  /// registered with a second one as well).
  ///
  /// Rounds on the same two threads, which meet before each round (see the test above).
  @Test func unregisteringAndRegisteringAgainAtOnceLeavesTheStoreWhereItIs() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("moving")
    let rounds = 5_000
    let mismatches = Locked(0)
    let arrived = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
    let checked = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
    try dispatcher.register(store: store)
    await onThreads(2) { index in
      for round in 0..<rounds {
        arrived[index].signal()
        arrived[1 - index].wait()
        if index == 0 {
          dispatcher.unregister(storeIdentifier: "moving")
        } else {
          _ = try? dispatcher.register(store: store)
        }
        checked[index].signal()
        checked[1 - index].wait()
        if index == 0 {
          // Both are done: the store is registered exactly when it names this dispatcher, and names none otherwise.
          // The next round starts with it registered, or, every other round, not (helper-62).
          let registered = dispatcher.store(with: "moving") != nil
          if registered != (store.dispatcher === dispatcher) || (!registered && store.dispatcher != nil) {
            mismatches.withLock { $0 += 1 }
          }
          if round.isMultiple(of: 2) {
            if !registered { _ = try? dispatcher.register(store: store) }
          } else {
            dispatcher.unregister(storeIdentifier: "moving")
          }
        }
      }
    }
    #expect(mismatches.withLock { $0 } == 0)
  }

  @Test func unregisterRemovesExactlyThatStore() throws {
    let dispatcher = Dispatcher()
    let kept = makeCounterStore("kept")
    let removed = makeCounterStore("removed")
    try dispatcher.register(store: kept)
    try dispatcher.register(store: removed)

    #expect(dispatcher.unregister(storeIdentifier: "removed") === removed)
    #expect(dispatcher.unregister(storeIdentifier: "removed") == nil)
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    #expect(kept.model.count == 1)
    #expect(removed.model.count == 0)
    #expect(dispatcher.store(with: "kept", as: Store<Counter, CounterAction>.self) === kept)
    #expect(dispatcher.store(with: "removed") == nil)
    // The identifier is free again.
    try dispatcher.register(store: makeCounterStore("removed"))
  }

  // MARK: Modes

  @Test func syncReturnsAfterOperationsFinishingOnOtherThreadsAndCompletion() throws {
    let dispatcher = Dispatcher()
    let stores = (0..<3).map { makeCounterStore("s\($0)") }
    for store in stores { try dispatcher.register(store: store) }
    let completions = Atomic<Int>(0)

    dispatcher.dispatch(action: CounterAction.increaseLater(4), mode: .sync) { result in
      #expect(result.isSuccess)
      #expect(stores.allSatisfy { $0.model.count == 4 })
      completions.add(1, ordering: .relaxed)
    }

    #expect(completions.load(ordering: .relaxed) == 1)
    #expect(stores.allSatisfy { $0.model.count == 4 })
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func completionRunsExactlyOnceAfterEveryStoreFinished(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let stores = (0..<4).map { makeCounterStore("s\($0)") }
    for store in stores { try dispatcher.register(store: store) }
    let results = Collector<Bool>()

    dispatcher.dispatch(action: CounterAction.increaseLater(1), mode: mode) { result in
      results.append(result.isSuccess && stores.allSatisfy { $0.model.count == 1 })
    }
    // A later dispatch on the same lane completes after the first one.
    try await dispatcher.dispatch(action: CounterAction.noop, mode: mode == .sync ? .async : mode)

    #expect(await results.wait(for: 1) == [true])
    if mode != .async {
      // Nothing else can arrive for the first dispatch: its lane is past it.
      #expect(results.values == [true])
    }
  }

  @Test func serialRunsOneActionAtATimeInDispatchOrder() async throws {
    let dispatcher = Dispatcher()
    let inFlight = Atomic<Int>(0)
    let maximum = Atomic<Int>(0)
    let store = makeCounterStore(
      "serial",
      onStart: { _, _ in
        let now = inFlight.add(1, ordering: .sequentiallyConsistent).newValue
        maximum.max(now, ordering: .sequentiallyConsistent)
      })
    // Count down when finishing: the operation's block increments, its completion runs on another thread.
    let observed = Collector<Int>()
    try dispatcher.register(store: store)
    let count = 200
    for value in 1...count {
      dispatcher.dispatch(action: CounterAction.increaseLater(value), mode: .serial) { result in
        #expect(result.isSuccess)
        inFlight.subtract(1, ordering: .sequentiallyConsistent)
        observed.append(value)
      }
    }

    let order = await observed.wait(for: count)
    #expect(order == Array(1...count))
    #expect(maximum.load(ordering: .sequentiallyConsistent) == 1)
    #expect(store.model.log == (1...count).map { "serial+\($0)" })
  }

  @Test func mainThreadRunsOperationsInOrderOnTheLibraryRunLoopThread() async throws {
    let dispatcher = Dispatcher()
    let onMain = Collector<Bool>()
    let store = makeCounterStore("main", onStart: { _, _ in onMain.append(MainRunLoopThread.shared.isCurrent) })
    try dispatcher.register(store: store)
    let completions = Collector<Int>()
    for value in 1...50 {
      dispatcher.dispatch(action: CounterAction.increaseLater(value), mode: .mainThread) { _ in
        completions.append(MainRunLoopThread.shared.isCurrent ? value : -value)
      }
    }

    #expect(await completions.wait(for: 50) == Array(1...50))
    #expect(await onMain.wait(for: 50).allSatisfy { $0 })
    #expect(store.model.log == (1...50).map { "main+\($0)" })
    #expect(!MainRunLoopThread.shared.isCurrent)
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func concurrentDispatchFromManyThreadsLosesNothing(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let first = makeCounterStore("first")
    let second = makeCounterStore("second")
    try dispatcher.register(store: first)
    try dispatcher.register(store: second)
    let threads = 8
    let perThread = 250
    let completions = Collector<Bool>()

    await onThreads(threads) { thread in
      for index in 0..<perThread {
        let action: CounterAction = index.isMultiple(of: 2) ? .increase(thread + 1) : .increaseLater(thread + 1)
        dispatcher.dispatch(action: action, mode: mode) { result in completions.append(result.isSuccess) }
      }
    }

    let results = await completions.wait(for: threads * perThread)
    #expect(results.count == threads * perThread)
    #expect(results.allSatisfy { $0 })
    let expected = (1...threads).reduce(0, +) * perThread
    #expect(first.model.count == expected)
    #expect(second.model.count == expected)
    #expect(first.model.log.count == threads * perThread)
  }

  /// The benchmark's contention case, with smaller counts so that it also runs under ThreadSanitizer.
  ///
  /// Eight threads of their own dispatch to one in-place store at once. Every completion runs once, with success,
  /// and the count is exact.
  @Test(arguments: Dispatcher.Mode.allCases)
  func eightThreadsDispatchingToOneStoreLoseNothing(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "contended", model: Counter(), reducer: CounterSynchronousReducer())
    try dispatcher.register(store: store)
    let threads = 8
    let perThread = 1_000
    let completions = Collector<Bool>()

    await onThreads(threads) { _ in
      for _ in 0..<perThread {
        dispatcher.dispatch(action: CounterAction.increase(1), mode: mode) { completions.append($0.isSuccess) }
      }
    }

    let results = await completions.wait(for: threads * perThread)
    #expect(results.count == threads * perThread)
    #expect(results.allSatisfy { $0 })
    #expect(store.model.count == threads * perThread)
  }

  // MARK: Failures

  @Test func failedOperationFailsDispatchWhileOtherStoresComplete() throws {
    let dispatcher = Dispatcher()
    let healthy = makeCounterStore("healthy")
    let failing = Store(
      identifier: "failing", model: Counter(),
      reducer: CounterReducer(onStart: { _, _ in }))
    try dispatcher.register(store: healthy)
    try dispatcher.register(store: failing)

    // `.fail` fails every store; dispatch it to one store, and a mixed pair through a custom store.
    let error = dispatchSync(dispatcher, CounterAction.fail, storeIdentifier: "failing").dispatchError
    guard case .operationsFailed(let failures) = error else {
      Issue.record("expected operationsFailed, got \(String(describing: error))")
      return
    }
    #expect(failures.map(\.storeIdentifier) == ["failing"])
    #expect(failures.first?.error as? TestFailure == TestFailure(reason: "fail in failing"))
    // With no middleware the transaction id is assigned when the failure is reported: still a real, fresh id.
    let before = TransactionID.next()
    let second = dispatchSync(dispatcher, CounterAction.fail, storeIdentifier: "failing").dispatchError
    guard case .operationsFailed(let secondFailures) = second, let id = secondFailures.first?.transactionID else {
      Issue.record("expected operationsFailed, got \(String(describing: second))")
      return
    }
    #expect(id.rawValue > before.rawValue)

    // The dispatcher stays usable.
    #expect(dispatchSync(dispatcher, CounterAction.increase(3)).isSuccess)
    #expect(healthy.model.count == 3)
    #expect(failing.model.count == 3)
  }

  @Test func oneFailingStoreDoesNotStopTheOthers() throws {
    let dispatcher = Dispatcher()
    let stores = ["a", "b", "c"].map { name in
      makeCounterStore(name)
    }
    // Store "b2" fails every action.
    let failing = Store(identifier: "b2", model: Counter(), reducer: FailingReducer())
    for store in stores { try dispatcher.register(store: store) }
    try dispatcher.register(store: failing)

    let error = dispatchSync(dispatcher, CounterAction.increase(1)).dispatchError
    guard case .operationsFailed(let failures) = error else {
      Issue.record("expected operationsFailed, got \(String(describing: error))")
      return
    }
    #expect(failures.map(\.storeIdentifier) == ["b2"])
    #expect(stores.allSatisfy { $0.model.count == 1 })
  }

  @Test(arguments: [Dispatcher.Mode.sync, .serial, .mainThread, .async])
  func operationReleasedWithoutFinishingFailsInsteadOfHanging(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("abandoned")
    try dispatcher.register(store: store)

    let result = await withCheckedContinuation { continuation in
      dispatcher.dispatch(action: CounterAction.abandon, mode: mode) { continuation.resume(returning: $0) }
    }
    guard case .operationsFailed(let failures) = result.dispatchError else {
      Issue.record("expected operationsFailed, got \(result)")
      return
    }
    #expect(
      failures.first?.error as? DispatchError == .releasedWithoutFinishing(storeIdentifier: "abandoned"))
    // The lane is free again.
    try await dispatcher.dispatch(action: CounterAction.increase(1), mode: mode)
    #expect(store.model.count == 1)
  }

  // MARK: Re-entrancy

  @Test func syncDispatchFromInsideOperationFailsAndRunsNothing() throws {
    let dispatcher = Dispatcher()
    let inner = Locked<Result<Void, DispatchError>?>(nil)
    let other = makeCounterStore("other")
    let outer = Store(
      identifier: "outer", model: Text(),
      reducer: DispatchingReducer { _ in
        dispatcher.dispatch(action: CounterAction.increase(1), mode: .sync) { result in
          inner.withLock { $0 = result }
        }
      })
    try dispatcher.register(store: outer)
    try dispatcher.register(store: other)

    #expect(dispatchSync(dispatcher, TextAction.append("x")).isSuccess)

    guard case .reentrantSynchronousDispatch = inner.withLock({ $0 })?.dispatchError else {
      Issue.record("expected reentrantSynchronousDispatch, got \(String(describing: inner.withLock { $0 }))")
      return
    }
    #expect(other.model.count == 0)
    #expect(outer.model.value == "x")
  }

  @Test(arguments: [Dispatcher.Mode.async, .serial, .mainThread])
  func nonSyncDispatchFromInsideOperationIsQueuedAndRunsAfter(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let other = makeCounterStore("other")
    let results = Collector<Result<Void, DispatchError>>()
    let outer = Store(
      identifier: "outer", model: Text(),
      reducer: DispatchingReducer { _ in
        dispatcher.dispatch(action: CounterAction.increase(1), mode: mode) { results.append($0) }
      })
    try dispatcher.register(store: outer)
    try dispatcher.register(store: other)

    try await dispatcher.dispatch(action: TextAction.append("x"), mode: mode)
    let inner = await results.wait(for: 1)
    #expect(inner.allSatisfy { $0.isSuccess })
    #expect(other.model.count == 1)
  }

  @Test func syncDispatchFromSynchronousObserverIsAllowed() throws {
    let dispatcher = Dispatcher()
    let source = makeCounterStore("source")
    let target = Store(identifier: "target", model: Text(), reducer: TextReducer())
    try dispatcher.register(store: source)
    try dispatcher.register(store: target)
    let inner = Locked<Result<Void, DispatchError>?>(nil)
    let token = source.observe(synchronously: true) { change in
      dispatcher.dispatch(action: TextAction.append("\(change.model.count)"), mode: .sync) { result in
        inner.withLock { $0 = result }
      }
    }

    #expect(dispatchSync(dispatcher, CounterAction.increase(7)).isSuccess)

    #expect(inner.withLock { $0 }?.isSuccess == true)
    #expect(target.model.value == "7")
    withExtendedLifetime(token) {}
  }

  @Test(arguments: [Dispatcher.Mode.async, .serial, .mainThread])
  func syncDispatchFromCompletionAndMiddlewareIsAllowed(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let counter = makeCounterStore("counter")
    let text = Store(identifier: "text", model: Text(), reducer: TextReducer())
    try dispatcher.register(store: counter)
    try dispatcher.register(store: text)
    final class SyncInDidDispatch: Middleware {
      func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

      let dispatcher: Dispatcher
      let results = Collector<Result<Void, DispatchError>>()
      init(dispatcher: Dispatcher) { self.dispatcher = dispatcher }
      func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        guard store.identifier == "counter" else { return }
        dispatcher.dispatch(action: TextAction.append("m"), mode: .sync) { [results] in results.append($0) }
      }
    }
    let middleware = SyncInDidDispatch(dispatcher: dispatcher)
    dispatcher.register(middleware: middleware)
    let fromCompletion = Collector<Result<Void, DispatchError>>()

    // `.increase` finishes inside the operation's block, so both callbacks run within its extent.
    dispatcher.dispatch(action: CounterAction.increase(1), mode: mode) { _ in
      dispatcher.dispatch(action: TextAction.append("c"), mode: .sync) { fromCompletion.append($0) }
    }

    #expect(await fromCompletion.wait(for: 1).allSatisfy { $0.isSuccess })
    #expect(await middleware.results.wait(for: 1).allSatisfy { $0.isSuccess })
    #expect(text.model.value == "mc")
  }

  @Test func syncDispatchIntoAnotherDispatcherFromOperationIsAllowed() throws {
    let outerDispatcher = Dispatcher()
    let innerDispatcher = Dispatcher()
    let innerStore = makeCounterStore("inner")
    try innerDispatcher.register(store: innerStore)
    let outer = Store(
      identifier: "outer", model: Text(),
      reducer: DispatchingReducer { _ in
        try? innerDispatcher.dispatchSync(action: CounterAction.increase(2))
      })
    try outerDispatcher.register(store: outer)

    #expect(dispatchSync(outerDispatcher, TextAction.append("x")).isSuccess)
    #expect(innerStore.model.count == 2)
  }

  // MARK: Sequences and async

  @Test(arguments: Dispatcher.Mode.allCases)
  func dispatchesActionSequenceInOrder(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("seq")
    let text = Store(identifier: "text", model: Text(), reducer: TextReducer())
    try dispatcher.register(store: store)
    try dispatcher.register(store: text)

    try await dispatcher.dispatch(
      actions: [
        CounterAction.increaseLater(1), TextAction.append("a"), CounterAction.increase(2),
        CounterAction.increaseLater(3),
      ],
      mode: mode)

    #expect(store.model.log == ["seq+1", "seq+2", "seq+3"])
    #expect(text.model.value == "a")
  }

  @Test func actionSequenceStopsAtFirstFailure() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("seq")
    try dispatcher.register(store: store)

    await #expect(throws: DispatchError.self) {
      try await dispatcher.dispatch(
        actions: [CounterAction.increase(1), CounterAction.fail, CounterAction.increase(10)], mode: .serial)
    }
    #expect(store.model.count == 1)
  }

  @Test func asyncFormThrowsTypedError() async {
    let dispatcher = Dispatcher()
    do {
      try await dispatcher.dispatch(action: CounterAction.increase(1), to: "nope")
      Issue.record("expected an error")
    } catch {
      guard case .unknownStore(let identifier) = error else {
        Issue.record("expected unknownStore, got \(error)")
        return
      }
      #expect(identifier == "nope")
    }
  }
}

/// Fails every action.
final class FailingReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
  override func operation(
    for action: CounterAction, in store: Store<Counter, CounterAction>
  ) -> ActionOperation<Counter, CounterAction> {
    ActionOperation(action: action, store: store) { operation, _, _ in
      operation.finish(throwing: TestFailure(reason: "always"))
    }
  }
}

/// Runs `body` inside its operation, then appends the text and finishes.
final class DispatchingReducer: Reducer<Text, TextAction>, @unchecked Sendable {
  let body: @Sendable (TextAction) -> Void

  init(body: @escaping @Sendable (TextAction) -> Void) {
    self.body = body
  }

  override func operation(for action: TextAction, in store: Store<Text, TextAction>) -> ActionOperation<
    Text, TextAction
  > {
    ActionOperation(action: action, store: store) { [body] operation, action, store in
      body(action)
      if case .append(let text) = action { operation.updateModel { $0.value += text } }
      operation.finish()
    }
  }
}
