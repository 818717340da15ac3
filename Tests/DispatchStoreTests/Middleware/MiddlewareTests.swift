import Testing

@testable import DispatchStore

@Suite("Middleware", .timeLimit(.minutes(1)), .watchdog)
struct MiddlewareTests {
  @Test func willDispatchRunsBeforeReducerAndDidDispatchAfterFinishOnceEach() throws {
    let dispatcher = Dispatcher()
    let middleware = RecordingMiddleware()
    let reducerSawWill = Locked<Bool?>(nil)
    let store = makeCounterStore(
      "store",
      onStart: { _, _ in
        reducerSawWill.withLock { $0 = middleware.events.withLock { $0.count } == 1 }
      })
    try dispatcher.register(store: store)
    dispatcher.register(middleware: middleware)

    #expect(dispatchSync(dispatcher, CounterAction.increaseLater(1)).isSuccess)

    let events = middleware.events.withLock { $0 }
    #expect(events.count == 2)
    guard case .will(let willStore, let willID) = events.first,
      case .did(let didStore, let didID, let failed) = events.last
    else {
      Issue.record("unexpected events \(events)")
      return
    }
    #expect(willStore == "store" && didStore == "store")
    #expect(willID == didID)
    #expect(!failed)
    #expect(reducerSawWill.withLock { $0 } == true)
    let transaction = try #require(middleware.transactions.withLock { $0.first })
    #expect(transaction.duration != nil)
    #expect(transaction.succeeded)
    #expect(transaction.action as? CounterAction == .increaseLater(1))
  }

  @Test func transactionsHaveUniqueTimeSortableIdentifiersAndCarryErrors() throws {
    let dispatcher = Dispatcher()
    let middleware = RecordingMiddleware()
    try dispatcher.register(store: makeCounterStore("a"))
    try dispatcher.register(store: Store(identifier: "b", model: Counter(), reducer: FailingReducer()))
    dispatcher.register(middleware: middleware)

    for _ in 0..<10 { _ = dispatchSync(dispatcher, CounterAction.increase(1)) }

    let transactions = middleware.transactions.withLock { $0 }
    #expect(transactions.count == 20)
    let ids = transactions.map(\.id)
    #expect(Set(ids).count == 20)
    #expect(transactions.filter { $0.storeIdentifier == "b" }.allSatisfy { $0.error is TestFailure })
    #expect(transactions.filter { $0.storeIdentifier == "a" }.allSatisfy { $0.succeeded })
    // Within one store, identifiers follow dispatch order.
    let aIDs = transactions.filter { $0.storeIdentifier == "a" }.map(\.id)
    #expect(aIDs.map(\.rawValue) == aIDs.map(\.rawValue).sorted())
  }

  @Test func unregisteredMiddlewareIsNotCalled() throws {
    let dispatcher = Dispatcher()
    let middleware = RecordingMiddleware()
    try dispatcher.register(store: makeCounterStore("a"))
    dispatcher.register(middleware: middleware)
    dispatcher.register(middleware: middleware)

    _ = dispatchSync(dispatcher, CounterAction.increase(1))
    dispatcher.unregister(middleware: middleware)
    _ = dispatchSync(dispatcher, CounterAction.increase(1))

    #expect(middleware.events.withLock { $0 }.count == 2)
  }

  @Test(arguments: [false, true])
  func everyTransactionAMiddlewareSeesHasItsDuration(chained: Bool) throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeCounterStore("first"))
    if chained { try dispatcher.register(store: makeCounterStore("second", waits: { _ in ["first"] })) }
    let middleware = RecordingMiddleware()
    dispatcher.register(middleware: middleware)

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.fail).dispatchError != nil)

    let stores = chained ? 2 : 1
    // The store that waits for `first` does not start once it failed: the failed dispatch has one transaction.
    let perDispatch = [stores, 1]
    let seen = middleware.transactions.withLock { $0 }
    #expect(seen.count == perDispatch.reduce(0, +))
    // Succeeded and failed alike, finished and timed.
    #expect(seen.allSatisfy { $0.isFinished && $0.duration != nil })
    #expect(seen.map(\.succeeded) == zip([true, false], perDispatch).flatMap { Array(repeating: $0, count: $1) })
  }
}
