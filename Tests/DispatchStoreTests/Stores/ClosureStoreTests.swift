import Foundation
import Testing

@testable import DispatchStore

struct Country: ModelType, Equatable {
  var code = ""
}

struct Price: ModelType, Equatable {
  var amount = 0
  var currency = ""
}

enum TripAction: ActionType, Equatable {
  case choose(country: String)
  case fail
}

struct TripFailure: Error, Equatable {}

@Suite("Closure stores", .timeLimit(.minutes(1)), .watchdog)
struct ClosureStoreTests {
  @Test func aReduceClosureChangesTheModelInPlace() throws {
    let dispatcher = Dispatcher()
    let counter = Store(identifier: "counter", model: Counter()) { (action: CounterAction, model) in
      if case .increase(let amount) = action { model.count += amount }
    }
    try dispatcher.register(store: counter)
    try dispatcher.dispatchSync(action: CounterAction.increase(2))
    try dispatcher.dispatchSync(action: CounterAction.increase(3))
    #expect(counter.model.count == 5)
  }

  @Test func aThrowingReduceClosureFailsTheDispatchAndKeepsEarlierChanges() throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "trip", model: Price()) { (action: TripAction, model) in
      model.amount += 1
      if action == .fail { throw TripFailure() }
    }
    try dispatcher.register(store: store)
    #expect(throws: DispatchError.self) { try dispatcher.dispatchSync(action: TripAction.fail) }
    #expect(store.model.amount == 1)
  }

  /// The two-store waitFor example: the price store waits for the country store and reads its model.
  @Test(arguments: Dispatcher.Mode.allCases)
  func anOperationClosureWaitsForAnotherStoreAndReadsItsModel(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    let country = Store(identifier: "country", model: Country()) { (action: TripAction, model) in
      if case .choose(let code) = action { model.code = code }
    }
    let price = Store(identifier: "price", model: Price(), waitFor: ["country"]) { (action: TripAction, context) in
      let code = context.model(of: "country", as: Country.self)?.code
      context.updateModel { $0.currency = code == "FR" ? "EUR" : "USD" }
    }
    // Registered in the opposite order: only waitFor orders them.
    try dispatcher.register(store: price)
    try dispatcher.register(store: country)

    if mode == .sync {
      // On a thread of its own: `.sync` blocks its caller until the operation's task, which runs on Dispatch's
      // global queue, finished; blocking a cooperative-pool thread for that can starve the pool.
      let result = Locked<Result<Void, DispatchError>?>(nil)
      await onThreads(1) { _ in result.withLock { $0 = dispatchSync(dispatcher, TripAction.choose(country: "FR")) } }
      #expect(result.withLock { $0 }?.isSuccess == true)
    } else {
      try await dispatcher.dispatch(action: TripAction.choose(country: "FR"), mode: mode)
    }

    #expect(price.model.currency == "EUR")
  }

  @Test func anOperationClosureDispatchesFollowUpsAndFailsWithWhatItThrows() async throws {
    let dispatcher = Dispatcher()
    let counter = Store(identifier: "counter", model: Counter()) { (action: CounterAction, model) in
      if case .increase(let amount) = action { model.count += amount }
    }
    let trip = Store(identifier: "trip", model: Price()) { (action: TripAction, context) in
      if action == .fail { throw TripFailure() }
      try await context.dispatcher?.start(action: CounterAction.increase(10)).value
      context.updateModel { $0.amount = 1 }
    }
    try dispatcher.register(store: counter)
    try dispatcher.register(store: trip)

    try await dispatcher.dispatch(action: TripAction.choose(country: "FR"))
    #expect(counter.model.count == 10)
    #expect(trip.model.amount == 1)

    await #expect(throws: DispatchError.self) { try await dispatcher.dispatch(action: TripAction.fail) }
  }

  @Test func anOperationClosureIsCancelledWithItsDispatch() async throws {
    let dispatcher = Dispatcher()
    let entered = Collector<Bool>()
    let store = Store(identifier: "slow", model: Price()) { (_: TripAction, context) in
      entered.append(true)
      // Suspends until cancelled: the cancellation of the dispatch cancels the task.
      try await Task.sleep(for: .seconds(3_600))
      context.updateModel { $0.amount = 1 }
    }
    try dispatcher.register(store: store)
    let handle = dispatcher.start(action: TripAction.choose(country: "FR"))
    _ = await entered.wait(for: 1)
    handle.cancel()

    let error = await #expect(throws: DispatchError.self) { try await handle.value }
    #expect(error.map { if case .cancelled = $0 { true } else { false } } == true)
    #expect(store.model.amount == 0)
  }
}

/// Closure stores take app-wide actions and per-action waits, as reducer subclasses do; a mapping may decline an
/// action (issue 26, point 2).
@Suite("Closure stores, as subclasses", .timeLimit(.minutes(1)), .watchdog)
struct ClosureStoreAsSubclassTests {
  /// `log` waits for `counter` only before `.increase`; both take the session's `signOut`, and `log` declines
  /// `rename`.
  func makeApp(order: Locked<[String]>) throws -> (Dispatcher, Store<Counter, CounterAction>, Store<Text, TextAction>) {
    let dispatcher = Dispatcher()
    let counter = Store(
      identifier: "counter", model: Counter(), also: [.on(SessionAction.self) { _ in .increase(100) }]
    ) { (action: CounterAction, model) in
      order.withLock { $0.append("counter \(action)") }
      if case .increase(let amount) = action { model.count += amount }
    }
    let log = Store(
      identifier: "log", model: Text(),
      waitFor: .perAction { action in action == .append("+") ? ["counter"] : [] },
      also: [
        .on(SessionAction.self) { action in
          guard case .signOut = action else { return nil }  // Not handled: `log` takes no part.
          return .append("|signed out")
        },
        .on(CounterAction.self) { action in
          guard case .increase = action else { return nil }
          return .append("+")
        },
      ]
    ) { (action: TextAction, model) in
      order.withLock { $0.append("log \(action)") }
      if case .append(let text) = action { model.value += text }
    }
    try dispatcher.register(store: log)
    try dispatcher.register(store: counter)
    return (dispatcher, counter, log)
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aClosureStoreWaitsPerActionAndTakesAppWideActions(mode: Dispatcher.Mode) async throws {
    let order = Locked<[String]>([])
    let (dispatcher, counter, log) = try makeApp(order: order)

    // `log` maps the counter's increase to "+", and waits for `counter` before it.
    try await dispatcher.dispatch(action: CounterAction.increase(2), mode: mode)
    #expect(order.withLock { $0 } == ["counter increase(2)", "log append(\"+\")"])
    // Its own action, with no wait.
    try await dispatcher.dispatch(action: TextAction.append("!"), mode: mode)
    // The app-wide action reaches both.
    try await dispatcher.dispatch(action: SessionAction.signOut, mode: mode)
    #expect(counter.model.count == 102)
    #expect(log.model.value == "+!|signed out")
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aStoreWhoseMappingDeclinesTheActionTakesNoPartInItsDispatch(mode: Dispatcher.Mode) async throws {
    let order = Locked<[String]>([])
    let (dispatcher, counter, log) = try makeApp(order: order)

    // `log` declines `rename`: only the counter runs, and the dispatch succeeds.
    try await dispatcher.dispatch(action: SessionAction.rename("Ada"), mode: mode)
    #expect(order.withLock { $0 } == ["counter increase(100)"])
    #expect(counter.model.count == 100)
    #expect(log.model.value == "")
    // `log` declines the counter's `.noop` too, which the counter handles as its own.
    try await dispatcher.dispatch(action: CounterAction.noop, mode: mode)
    #expect(order.withLock { $0 } == ["counter increase(100)", "counter noop"])
    #expect(log.model.value == "")
  }

  @Test func anActionEveryMappingDeclinesFailsWithNoRespondingStore() throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(
      store: Store(identifier: "log", model: Text(), also: [.on(SessionAction.self) { _ in nil }]) {
        (action: TextAction, model) in
        if case .append(let text) = action { model.value += text }
      })
    #expect(throws: DispatchError.self) { try dispatcher.dispatchSync(action: SessionAction.signOut) }
    do {
      try dispatcher.dispatchSync(action: SessionAction.signOut)
    } catch {
      guard case .noRespondingStore = error else {
        Issue.record("expected noRespondingStore, got \(error)")
        return
      }
    }
  }
}
