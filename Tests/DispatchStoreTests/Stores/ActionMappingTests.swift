import Dispatch
import Synchronization
import Testing

@testable import DispatchStore

/// An app-wide action that no store has as its own action type.
enum SessionAction: ActionType, Equatable {
  case signOut
  case rename(String)
}

/// A counter whose operations finish later on another thread, and that maps the session's actions to its own.
private final class AccountReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
  let waits: [String]
  let log: Locked<[String]>

  init(waits: [String] = [], log: Locked<[String]>) {
    self.waits = waits
    self.log = log
  }

  override var additionalActions: [ActionMapping<CounterAction>] {
    [.on(SessionAction.self) { _ in .increaseLater(100) }]
  }

  override func waitList(for action: CounterAction) -> [String] { waits }

  override func operation(
    for action: CounterAction, in store: Store<Counter, CounterAction>
  ) -> ActionOperation<Counter, CounterAction> {
    ActionOperation(action: action, store: store) { [log] operation, action, store in
      log.withLock { $0.append("\(store.identifier) \(action)") }
      guard case .increaseLater(let amount) = action else { return operation.finish() }
      DispatchQueue.global().async {
        operation.updateModel { $0.count += amount }
        operation.finish()
      }
    }
  }
}

/// A text store, reduced in place, that maps the session's actions to its own.
private final class NameReducer: SynchronousReducer<Text, TextAction>, @unchecked Sendable {
  let waits: [String]
  let log: Locked<[String]>

  init(waits: [String] = [], log: Locked<[String]>) {
    self.waits = waits
    self.log = log
  }

  override var additionalActions: [ActionMapping<TextAction>] {
    [
      .on(SessionAction.self) { action in
        switch action {
        case .signOut: .append("|signed out")
        case .rename(let name): .append("|\(name)")
        }
      }
    ]
  }

  override func waitList(for action: TextAction) -> [String] { waits }

  override func reduce(_ action: TextAction, into model: inout Text) throws {
    log.withLock { $0.append("profile \(action)") }
    switch action {
    case .append(let text): model.value += text
    }
  }
}

@Suite("App-wide actions", .timeLimit(.minutes(1)), .watchdog)
struct ActionMappingTests {
  /// One session action reaches a store of counter actions (operations that finish later, elsewhere) and a store of
  /// text actions (in place), each as its own action, in waitFor order across the two types.
  @Test(arguments: Dispatcher.Mode.allCases)
  func appWideActionReachesStoresOfOtherTypesInWaitForOrder(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let log = Locked<[String]>([])
    let profile = Store(identifier: "profile", model: Text(), reducer: NameReducer(waits: ["account"], log: log))
    let account = Store(identifier: "account", model: Counter(), reducer: AccountReducer(log: log))
    let bystander = makeCounterStore("bystander")
    for store in [bystander, account] { try dispatcher.register(store: store) }
    try dispatcher.register(store: profile)
    let middleware = RecordingMiddleware()
    dispatcher.register(middleware: middleware)
    let heard = Locked<[TextAction]>([])
    let token = profile.observe(synchronously: true) { change in heard.withLock { $0.append(change.action) } }

    try await dispatcher.dispatch(action: SessionAction.signOut, mode: mode)

    #expect(log.withLock { $0 } == ["account increaseLater(100)", "profile append(\"|signed out\")"])
    #expect(account.model.count == 100)
    #expect(profile.model.value == "|signed out")
    #expect(bystander.model.count == 0)
    #expect(heard.withLock { $0 } == [.append("|signed out")])
    let seen = middleware.transactions.withLock { $0 }.map { "\($0.storeIdentifier) \($0.action)" }
    #expect(seen == ["account increaseLater(100)", "profile append(\"|signed out\")"])
    withExtendedLifetime(token) {}
  }

  /// A store waits for another only if that one handles the dispatched action: the text store's wait for the counter
  /// store is satisfied at once for a session action the counter store does not map, and kept for one it maps.
  @Test func storeWaitsOnlyForStoresThatHandleTheDispatchedAction() async throws {
    let dispatcher = Dispatcher()
    let log = Locked<[String]>([])
    let counter = makeCounterStore("counter", onStart: { action, _ in log.withLock { $0.append("counter \(action)") } })
    let profile = Store(identifier: "profile", model: Text(), reducer: NameReducer(waits: ["counter"], log: log))
    try dispatcher.register(store: profile)
    try dispatcher.register(store: counter)

    try await dispatcher.dispatch(action: SessionAction.rename("A"), mode: .sync)
    #expect(log.withLock { $0 } == ["profile append(\"|A\")"])

    // Dispatched as the counter store's own action type, the profile store (which does not map it) does not run.
    try await dispatcher.dispatch(action: CounterAction.increaseLater(1), mode: .sync)
    #expect(log.withLock { $0 } == ["profile append(\"|A\")", "counter increaseLater(1)"])
  }

  /// A store that maps an action type can be sent one directly; a store that does not, fails with a mismatch.
  @Test func dispatchToOneStoreMapsTheActionOrFailsWithAMismatch() async throws {
    let dispatcher = Dispatcher()
    let log = Locked<[String]>([])
    try dispatcher.register(store: Store(identifier: "profile", model: Text(), reducer: NameReducer(log: log)))
    try dispatcher.register(store: makeCounterStore("counter"))

    #expect(dispatchSync(dispatcher, SessionAction.rename("B"), storeIdentifier: "profile").isSuccess)
    #expect(log.withLock { $0 } == ["profile append(\"|B\")"])
    let error = dispatchSync(dispatcher, SessionAction.signOut, storeIdentifier: "counter").dispatchError
    guard case .actionTypeMismatch(let store, _, let dispatched) = error else {
      Issue.record("expected an action type mismatch, got \(String(describing: error))")
      return
    }
    #expect(store == "counter")
    #expect(dispatched.hasSuffix("SessionAction"))
  }

  /// Removing a store removes its mapped routes too.
  @Test func unregisteredStoreNoLongerReceivesMappedActions() throws {
    let dispatcher = Dispatcher()
    let log = Locked<[String]>([])
    try dispatcher.register(store: Store(identifier: "profile", model: Text(), reducer: NameReducer(log: log)))
    dispatcher.unregister(storeIdentifier: "profile")

    let error = dispatchSync(dispatcher, SessionAction.signOut).dispatchError
    guard case .noRespondingStore = error else {
      Issue.record("expected no responding store, got \(String(describing: error))")
      return
    }
    #expect(log.withLock { $0 }.isEmpty)
  }
}
