import Dispatch
import Synchronization
import Testing

@testable import DispatchStore

@Suite("waitFor", .timeLimit(.minutes(1)), .watchdog)
struct WaitForTests {
  /// Records which stores started, in order, across threads.
  final class StartLog: Sendable {
    let starts = Locked<[String]>([])
    func record(_ store: Store<Counter, CounterAction>) {
      // What the store saw of the stores it waits for is part of the log.
      starts.withLock { $0.append(store.identifier) }
    }
  }

  @Test(arguments: [Dispatcher.Mode.sync, .async, .serial, .mainThread])
  func dispatchesToStoresInWaitForOrder(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let log = StartLog()
    // Registered in reverse so that registration order cannot explain the result.
    let price = makeCounterStore("price", waits: { _ in ["country", "city"] }, onStart: { _, s in log.record(s) })
    let city = makeCounterStore("city", waits: { _ in ["country"] }, onStart: { _, s in log.record(s) })
    let country = makeCounterStore("country", onStart: { _, s in log.record(s) })
    for store in [price, city, country] { try dispatcher.register(store: store) }

    // Operations finish later, on other threads: waiting must still hold.
    try await dispatcher.dispatch(action: CounterAction.increaseLater(1), mode: mode)

    #expect(log.starts.withLock { $0 } == ["country", "city", "price"])
    #expect([country, city, price].allSatisfy { $0.model.count == 1 })
  }

  /// A store removed by an earlier store's operation during the dispatch does not start in it.
  ///
  /// The stores waiting for it go on, and the dispatch succeeds. With `increaseLater` the removed store is reached from
  /// the thread that finished the earlier operation, with `increase` from the dispatching thread.
  @Test(arguments: Dispatcher.Mode.allCases, [CounterAction.increase(1), .increaseLater(1)])
  func storeRemovedDuringADispatchDoesNotStartInIt(mode: Dispatcher.Mode, action: CounterAction) async throws {
    let dispatcher = Dispatcher()
    let log = StartLog()
    let first = makeCounterStore(
      "first",
      onStart: { _, store in
        log.record(store)
        dispatcher.unregister(storeIdentifier: "removed")
      })
    let removedReducer = CounterReducer(waits: { _ in ["first"] }, onStart: { _, s in log.record(s) })
    let removed = Store(identifier: "removed", model: Counter(), reducer: removedReducer)
    let last = makeCounterStore("last", waits: { _ in ["removed"] }, onStart: { _, s in log.record(s) })
    for store in [first, removed, last] { try dispatcher.register(store: store) }

    try await dispatcher.dispatch(action: action, mode: mode)

    #expect(log.starts.withLock { $0 } == ["first", "last"])
    #expect(removedReducer.asked.withLock { $0 }.isEmpty)
    #expect([first.model.count, removed.model.count, last.model.count] == [1, 0, 1])
  }

  /// A store whose running operation removes it finishes normally: its change stays and the dispatch succeeds.
  @Test(arguments: Dispatcher.Mode.allCases)
  func storeRemovedWhileItsOperationRunsFinishesNormally(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let first = makeCounterStore("first")
    let leaving = makeCounterStore(
      "leaving", waits: { _ in ["first"] },
      onStart: { _, store in dispatcher.unregister(storeIdentifier: store.identifier) }
    )
    for store in [first, leaving] { try dispatcher.register(store: store) }

    try await dispatcher.dispatch(action: CounterAction.increaseLater(2), mode: mode)

    #expect(dispatcher.storeIdentifiers == ["first"])
    #expect([first.model.count, leaving.model.count] == [2, 2])
  }

  /// A wait target registered while the dispatch asks for wait lists takes part in the dispatch: the waiting store
  /// starts after it, rather than treating it as a store that does not respond.
  @Test func waitTargetRegisteredWhilePreparingTakesPart() throws {
    let dispatcher = Dispatcher()
    let log = StartLog()
    let target = makeCounterStore("target", onStart: { _, s in log.record(s) })
    let registered = Locked(false)
    let waiting = makeCounterStore(
      "waiting",
      waits: { _ in
        // The first time it is asked, the store it names joins the dispatcher, as another thread might.
        if !registered.withLock({ $0 }) {
          registered.withLock { $0 = true }
          try? dispatcher.register(store: target)
        }
        return ["target"]
      },
      onStart: { _, s in log.record(s) })
    try dispatcher.register(store: waiting)

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    #expect(log.starts.withLock { $0 } == ["target", "waiting"])
    #expect([target.model.count, waiting.model.count] == [1, 1])
  }

  @Test func dependentSeesTheModelOfTheStoreItWaitedFor() throws {
    let dispatcher = Dispatcher()
    let seen = Locked<Int?>(nil)
    let first = makeCounterStore("first")
    let second = makeCounterStore(
      "second", waits: { _ in ["first"] }, onStart: { _, _ in seen.withLock { $0 = first.model.count } })
    try dispatcher.register(store: second)
    try dispatcher.register(store: first)

    #expect(dispatchSync(dispatcher, CounterAction.increaseLater(9)).isSuccess)
    #expect(seen.withLock { $0 } == 9)
  }

  @Test func longChainRunsInOrder() async throws {
    let dispatcher = Dispatcher()
    let log = StartLog()
    let count = 500
    for index in (0..<count).reversed() {
      let waits = index == 0 ? [] : ["s\(index - 1)"]
      try dispatcher.register(
        store: makeCounterStore("s\(index)", waits: { _ in waits }, onStart: { _, s in log.record(s) }))
    }
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(log.starts.withLock { $0 } == (0..<count).map { "s\($0)" })
  }

  @Test func waitingOnStoreThatDoesNotRespondIsSatisfiedAtOnce() throws {
    let dispatcher = Dispatcher()
    let counter = makeCounterStore("counter", waits: { _ in ["text", "other"] })
    let other = makeCounterStore("other")
    try dispatcher.register(store: counter)
    try dispatcher.register(store: other)
    try dispatcher.register(store: Store(identifier: "text", model: Text(), reducer: TextReducer()))

    // "text" handles another action type; "other" is registered but not targeted by this dispatch.
    #expect(dispatchSync(dispatcher, CounterAction.increase(1), storeIdentifier: "counter").isSuccess)
    #expect(counter.model.count == 1)
    #expect(other.model.count == 0)
  }

  @Test func selfWaitFailsWithCycleAndRunsNothing() throws {
    let dispatcher = Dispatcher()
    let selfish = makeCounterStore("selfish", waits: { _ in ["selfish"] })
    let bystander = makeCounterStore("bystander")
    try dispatcher.register(store: selfish)
    try dispatcher.register(store: bystander)

    let error = dispatchSync(dispatcher, CounterAction.increase(1)).dispatchError
    guard case .waitCycle(let cycle) = error else {
      Issue.record("expected waitCycle, got \(String(describing: error))")
      return
    }
    #expect(cycle == ["selfish", "selfish"])
    #expect(selfish.model.count == 0)
    #expect(bystander.model.count == 0)
    #expect((selfish.reducer as? CounterReducer)?.asked.withLock { $0 }.isEmpty == true)
    #expect((bystander.reducer as? CounterReducer)?.asked.withLock { $0 }.isEmpty == true)
  }

  @Test func multiStoreCycleFailsNamingTheCycleAndRunsNothing() throws {
    let dispatcher = Dispatcher()
    let a = makeCounterStore("a", waits: { _ in ["b"] })
    let b = makeCounterStore("b", waits: { _ in ["c"] })
    let c = makeCounterStore("c", waits: { _ in ["a"] })
    let free = makeCounterStore("free")
    let middleware = RecordingMiddleware()
    dispatcher.register(middleware: middleware)
    for store in [a, b, c, free] { try dispatcher.register(store: store) }

    let error = dispatchSync(dispatcher, CounterAction.increase(1)).dispatchError
    guard case .waitCycle(let cycle) = error else {
      Issue.record("expected waitCycle, got \(String(describing: error))")
      return
    }
    // The cycle is reported in "waits for" order, starting anywhere on it, first store repeated at the end.
    #expect(cycle.count == 4)
    #expect(cycle.first == cycle.last)
    let rotations = [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    #expect(rotations.contains(Array(cycle.dropLast())))
    #expect([a, b, c, free].allSatisfy { $0.model.count == 0 })
    #expect(middleware.events.withLock { $0 }.isEmpty)
    #expect(error?.description.contains("->") == true)
  }

  @Test func unknownWaitTargetFailsAndRunsNothing() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("store", waits: { _ in ["ghost"] })
    try dispatcher.register(store: store)

    let error = dispatchSync(dispatcher, CounterAction.increase(1)).dispatchError
    guard case .unknownWaitTarget(let identifier, let waitsFor) = error else {
      Issue.record("expected unknownWaitTarget, got \(String(describing: error))")
      return
    }
    #expect(identifier == "store")
    #expect(waitsFor == "ghost")
    #expect(store.model.count == 0)
  }

  /// A store that refuses every action: at once, or later on another thread.
  final class RefusingReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
    struct Refused: Error, Equatable {}
    let later: Bool
    init(later: Bool) { self.later = later }

    override func operation(
      for action: CounterAction, in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
      ActionOperation(action: action, store: store) { [later] operation, _, _ in
        guard later else { return operation.finish(throwing: Refused()) }
        DispatchQueue.global().async { operation.finish(throwing: Refused()) }
      }
    }
  }

  /// Stores waiting for one that failed do not start, and each fails naming the store it waited for; a store that
  /// waits for none of them runs (issue 26, point 3).
  @Test(arguments: Dispatcher.Mode.allCases, [false, true])
  func storesWaitingForOneThatFailedDoNotStartAndFailNamingIt(mode: Dispatcher.Mode, later: Bool) async throws {
    let dispatcher = Dispatcher()
    let refusing = Store(identifier: "a", model: Counter(), reducer: RefusingReducer(later: later))
    let second = CounterReducer(waits: { _ in ["a"] })
    let third = CounterReducer(waits: { _ in ["b"] })
    let b = Store(identifier: "b", model: Counter(), reducer: second)
    let c = Store(identifier: "c", model: Counter(), reducer: third)
    let independent = makeCounterStore("d")
    for store in [c, b, independent] { try dispatcher.register(store: store) }
    try dispatcher.register(store: refusing)

    let error: DispatchError?
    do {
      try await dispatcher.dispatch(action: CounterAction.increase(1), mode: mode)
      error = nil
    } catch let failed {
      error = failed
    }
    guard case .operationsFailed(let failures) = error else {
      Issue.record("expected operationsFailed, got \(String(describing: error))")
      return
    }
    let byStore = Dictionary(uniqueKeysWithValues: failures.map { ($0.storeIdentifier, $0.error) })
    #expect(byStore.keys.sorted() == ["a", "b", "c"])
    #expect(byStore["a"] is RefusingReducer.Refused)
    #expect(
      "\(byStore["b"].map { "\($0)" } ?? "")"
        == "\(DispatchError.waitTargetFailed(storeIdentifier: "b", waitsFor: "a"))")
    #expect(
      "\(byStore["c"].map { "\($0)" } ?? "")"
        == "\(DispatchError.waitTargetFailed(storeIdentifier: "c", waitsFor: "b"))")
    // Their reducers were never asked; the store that waits for nobody ran.
    #expect(second.asked.withLock { $0 }.isEmpty)
    #expect(third.asked.withLock { $0 }.isEmpty)
    #expect([b.model.count, c.model.count, independent.model.count] == [0, 0, 1])
  }

  // MARK: - The wait graph kept between dispatches

  @Test func waitListsThatChangeBetweenDispatchesOrderEachDispatchByItsOwn() throws {
    let dispatcher = Dispatcher()
    let log = StartLog()
    let a = makeCounterStore("a", waits: { $0 == .increase(1) ? ["b"] : [] }, onStart: { _, s in log.record(s) })
    let b = makeCounterStore("b", waits: { $0 == .increase(2) ? ["a"] : [] }, onStart: { _, s in log.record(s) })
    for store in [a, b] { try dispatcher.register(store: store) }

    var orders: [[String]] = []
    for amount in [1, 1, 2, 2, 1] {
      log.starts.withLock { $0 = [] }
      #expect(dispatchSync(dispatcher, CounterAction.increase(amount)).isSuccess)
      orders.append(log.starts.withLock { $0 })
    }

    #expect(orders == [["b", "a"], ["b", "a"], ["a", "b"], ["a", "b"], ["b", "a"]])
  }

  @Test func cycleThatAppearsAfterAnAcyclicDispatchIsReportedAndRunsNothing() throws {
    let dispatcher = Dispatcher()
    let a = makeCounterStore("a", waits: { _ in ["b"] })
    let b = makeCounterStore("b", waits: { $0 == .increase(2) ? ["a"] : [] })
    for store in [a, b] { try dispatcher.register(store: store) }

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    let error = dispatchSync(dispatcher, CounterAction.increase(2)).dispatchError
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    guard case .waitCycle(let cycle) = error else {
      Issue.record("expected waitCycle, got \(String(describing: error))")
      return
    }
    #expect(Set(cycle) == ["a", "b"])
    #expect(a.model.count == 3)
    #expect(b.model.count == 3)
  }

  @Test func removingAWaitedForStoreFailsTheNextDispatchAndRegisteringItAgainRestoresIt() throws {
    let dispatcher = Dispatcher()
    // Two stores, so that the dispatch takes the general path; both wait for a store of another action type.
    let first = makeCounterStore("first", waits: { _ in ["text"] })
    let second = makeCounterStore("second", waits: { _ in ["text", "first"] })
    for store in [first, second] { try dispatcher.register(store: store) }
    try dispatcher.register(store: Store(identifier: "text", model: Text(), reducer: TextReducer()))

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    dispatcher.unregister(storeIdentifier: "text")
    let error = dispatchSync(dispatcher, CounterAction.increase(1)).dispatchError
    try dispatcher.register(store: Store(identifier: "text", model: Text(), reducer: TextReducer()))
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    guard case .unknownWaitTarget(let identifier, let waitsFor) = error else {
      Issue.record("expected unknownWaitTarget, got \(String(describing: error))")
      return
    }
    #expect(identifier == "first")
    #expect(waitsFor == "text")
    #expect(first.model.count == 3)
    #expect(second.model.count == 3)
  }

  @Test func storeRegisteredAfterADispatchTakesItsPlaceInTheNextOrder() throws {
    let dispatcher = Dispatcher()
    let log = StartLog()
    let a = makeCounterStore("a", waits: { _ in ["b"] }, onStart: { _, s in log.record(s) })
    let b = makeCounterStore("b", onStart: { _, s in log.record(s) })
    for store in [a, b] { try dispatcher.register(store: store) }
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    // Registered after the first dispatches: the next one orders all four.
    let c = makeCounterStore("c", onStart: { _, s in log.record(s) })
    try dispatcher.register(store: c)
    let reordered = makeCounterStore("b2", waits: { _ in ["c"] }, onStart: { _, s in log.record(s) })
    try dispatcher.register(store: reordered)
    log.starts.withLock { $0 = [] }
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)

    let order = log.starts.withLock { $0 }
    #expect(Set(order) == ["a", "b", "c", "b2"])
    #expect(order.firstIndex(of: "b")! < order.firstIndex(of: "a")!)
    #expect(order.firstIndex(of: "c")! < order.firstIndex(of: "b2")!)
  }

  @Test(arguments: [Dispatcher.Mode.sync, .async])
  func concurrentChainsKeepEveryStoreBehindTheOneItWaitsFor(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let length = 5
    let violations = Atomic<Int>(0)
    var stores: [Store<Counter, CounterAction>] = []
    for index in 0..<length {
      let previous = index == 0 ? nil : stores[index - 1]
      // When a store starts, the store it waits for has finished this dispatch and every earlier one that this
      // store counted, so it is strictly ahead. Read this store first: both counts only grow.
      let store = makeCounterStore(
        "chain\(index)", waits: { _ in index == 0 ? [] : ["chain\(index - 1)"] },
        onStart: { _, store in
          let own = store.model.count
          if let previous, previous.model.count <= own { violations.add(1, ordering: .relaxed) }
        })
      stores.append(store)
    }
    for store in stores.reversed() { try dispatcher.register(store: store) }
    let failures = Atomic<Int>(0)

    await onThreads(8) { thread in
      for round in 0..<100 {
        // Some operations finish later on other threads, so chains interleave across threads.
        let action = (thread + round) % 3 == 0 ? CounterAction.increaseLater(1) : .increase(1)
        let done = DispatchSemaphore(value: 0)
        dispatcher.dispatch(action: action, mode: mode) { result in
          if case .failure = result { failures.add(1, ordering: .relaxed) }
          done.signal()
        }
        done.wait()
      }
    }

    #expect(failures.load(ordering: .relaxed) == 0)
    #expect(violations.load(ordering: .relaxed) == 0)
    #expect(stores.allSatisfy { $0.model.count == 800 })
  }

  @Test func registryChangesDuringDispatchesNeverUseAStaleGraph() async throws {
    let dispatcher = Dispatcher()
    let first = makeCounterStore("first", waits: { _ in ["text"] })
    let second = makeCounterStore("second", waits: { _ in ["first", "text"] })
    for store in [first, second] { try dispatcher.register(store: store) }
    let outcomes = Locked<[String: Int]>([:])

    await onThreads(4) { thread in
      for _ in 0..<200 {
        if thread == 0 {
          // One thread makes the waited-for store come and go.
          if dispatcher.unregister(storeIdentifier: "text") == nil {
            try? dispatcher.register(store: Store(identifier: "text", model: Text(), reducer: TextReducer()))
          }
          continue
        }
        let outcome: String
        switch dispatchSync(dispatcher, CounterAction.increase(1)) {
        case .success: outcome = "success"
        // Either store may be the one found waiting for "text": the registry can change between their checks.
        case .failure(.unknownWaitTarget(_, waitsFor: "text")): outcome = "unknownWaitTarget"
        case .failure(let error): outcome = "unexpected: \(error)"
        }
        outcomes.withLock { $0[outcome, default: 0] += 1 }
      }
    }
    // Whatever the interleaving: with the store registered, the next dispatch succeeds; without it, it fails.
    if dispatcher.store(with: "text") == nil {
      #expect(dispatchSync(dispatcher, CounterAction.increase(1)).dispatchError != nil)
      try dispatcher.register(store: Store(identifier: "text", model: Text(), reducer: TextReducer()))
    }
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    dispatcher.unregister(storeIdentifier: "text")
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).dispatchError != nil)

    let seen = outcomes.withLock { $0 }
    #expect(Set(seen.keys).isSubset(of: ["success", "unknownWaitTarget"]), "\(seen)")
    #expect(seen.values.reduce(0, +) == 600)
    // Every successful dispatch ran both stores, in order; failed ones ran neither.
    let successes = (seen["success"] ?? 0) + 1
    #expect(first.model.count == successes)
    #expect(second.model.count == successes)
  }

  @Test(arguments: [Dispatcher.Mode.sync, .async, .serial, .mainThread])
  func chainGoesOnWhenOneStoreInTheMiddleFinishesLater(mode: Dispatcher.Mode) async throws {
    // s0 and s1 finish while starting, s2 later on another thread, s3 and s4 while starting again: the run starts
    // alone, then continues once s2's operation is still running when its start returns.
    let dispatcher = Dispatcher()
    let log = StartLog()
    var stores: [Store<Counter, CounterAction>] = []
    for index in 0..<5 {
      let waits = index == 0 ? [] : ["s\(index - 1)"]
      let reducer =
        index == 2
        ? LaterReducer(waits: waits, log: log)
        : CounterReducer(waits: { _ in waits }, onStart: { _, store in log.record(store) })
      stores.append(Store(identifier: "s\(index)", model: Counter(), reducer: reducer))
    }
    for store in stores.reversed() { try dispatcher.register(store: store) }
    let middleware = RecordingMiddleware()
    dispatcher.register(middleware: middleware)

    for _ in 0..<3 {
      try await dispatcher.dispatch(action: CounterAction.increase(1), mode: mode)
    }

    #expect(log.starts.withLock { $0 } == Array(repeating: (0..<5).map { "s\($0)" }, count: 3).flatMap { $0 })
    #expect(stores.allSatisfy { $0.model.count == 3 })
    let transactions = middleware.transactions.withLock { $0 }
    #expect(transactions.count == 15)
    #expect(transactions.allSatisfy { $0.succeeded && $0.duration != nil })
    // Every transaction was seen once before and once after, with the same identifier.
    let events = middleware.events.withLock { $0 }
    let willIDs = events.compactMap { if case .will(_, let id) = $0 { id } else { nil } }
    let didIDs = events.compactMap { if case .did(_, let id, _) = $0 { id } else { nil } }
    #expect(Set(willIDs) == Set(didIDs) && Set(willIDs).count == 15)
  }
}

/// A reducer whose operations always finish late, on a global-queue thread.
final class LaterReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
  let waits: [String]
  let log: WaitForTests.StartLog

  init(waits: [String], log: WaitForTests.StartLog) {
    self.waits = waits
    self.log = log
  }

  override func waitList(for action: CounterAction) -> [String] { waits }

  override func operation(
    for action: CounterAction, in store: Store<Counter, CounterAction>
  ) -> ActionOperation<Counter, CounterAction> {
    ActionOperation(action: action, store: store) { [log] operation, _, store in
      log.record(store)
      finishLate(operation) { operation.updateModel { $0.count += 1 } }
    }
  }
}
