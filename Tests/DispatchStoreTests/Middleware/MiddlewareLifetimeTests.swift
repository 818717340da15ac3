import Dispatch
import Testing

@testable import DispatchStore

/// A middleware that runs `onWill` in `willDispatch` and records what it saw.
private final class HookMiddleware: Middleware {
  let name: String
  let seen: Locked<[String]>
  let onWill: @Sendable (Transaction) -> Void

  init(_ name: String, seen: Locked<[String]>, onWill: @escaping @Sendable (Transaction) -> Void = { _ in }) {
    self.name = name
    self.seen = seen
    self.onWill = onWill
  }

  func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    seen.withLock { $0.append("\(name) will \(store.identifier)") }
    onWill(transaction)
  }

  func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    seen.withLock { $0.append("\(name) did \(store.identifier)") }
  }
}

/// Holds a weak reference, for checking when the dispatcher's machinery lets an object go.
private final class WeakBox<Object: AnyObject>: @unchecked Sendable {
  // Written once, before the box is shared.
  weak var object: Object?
  init(_ object: Object) { self.object = object }
}

/// Each dispatch takes the registry's middleware list when it starts and lets it go when it ends: these tests pin
/// down which middleware a dispatch calls while the registry changes, and when a removed middleware is released.
@Suite("Middleware lifetime", .timeLimit(.minutes(1)), .watchdog)
struct MiddlewareLifetimeTests {
  /// A middleware registers another and dispatches from inside a transaction, twice, while the outer dispatch still
  /// borrows the first list: each nested dispatch calls the list of its own moment, the outer one keeps its own,
  /// and the lists held aside for the nested ones are released when the outer dispatch returns.
  @Test func nestedDispatchesAfterTheListChangedCallTheirOwnList() throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeCounterStore("outer"))
    try dispatcher.register(store: makeCounterStore("inner"))
    let seen = Locked<[String]>([])
    let added = Locked<WeakBox<HookMiddleware>?>(nil)
    let first = HookMiddleware("A", seen: seen) { [dispatcher] transaction in
      guard transaction.storeIdentifier == "outer" else { return }
      let second = HookMiddleware("B", seen: seen)
      added.withLock { $0 = WeakBox(second) }
      dispatcher.register(middleware: second)
      _ = dispatchSync(dispatcher, CounterAction.increase(1), storeIdentifier: "inner")
      dispatcher.unregister(middleware: second)
      _ = dispatchSync(dispatcher, CounterAction.increase(1), storeIdentifier: "inner")
    }
    dispatcher.register(middleware: first)

    #expect(dispatchSync(dispatcher, CounterAction.increase(1), storeIdentifier: "outer").isSuccess)

    #expect(
      seen.withLock { $0 } == [
        "A will outer",
        "A will inner", "B will inner", "A did inner", "B did inner",
        "A will inner", "A did inner",
        "A did outer",
      ])
    let box = try #require(added.withLock { $0 })
    #expect(box.object == nil)
  }

  /// Once `unregister(middleware:)` returned, nothing holds a middleware that no transaction is running through.
  ///
  /// Neither the dispatcher nor the threads that dispatched through it keep it. The dispatch here
  /// finished (its completion ran after the dispatch let its list go), so the middleware is released at once.
  @Test(arguments: Dispatcher.Mode.allCases)
  func removedMiddlewareIsReleasedWhenUnregisterReturns(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeCounterStore("store"))
    let seen = Locked<[String]>([])
    var middleware: HookMiddleware? = HookMiddleware("M", seen: seen)
    let box = WeakBox(middleware!)
    dispatcher.register(middleware: middleware!)
    let results = Collector<Bool>()
    dispatcher.dispatch(action: CounterAction.increase(1), mode: mode) { results.append($0.isSuccess) }
    #expect(await results.wait(for: 1) == [true])

    dispatcher.unregister(middleware: middleware!)
    middleware = nil

    #expect(box.object == nil)
    #expect(seen.withLock { $0 } == ["M will store", "M did store"])
  }

  /// A dispatch that starts after the middleware was removed does not call it.
  @Test func dispatchAfterUnregisterDoesNotCallTheMiddleware() throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeCounterStore("store"))
    let seen = Locked<[String]>([])
    let middleware = HookMiddleware("M", seen: seen)
    dispatcher.register(middleware: middleware)
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    dispatcher.unregister(middleware: middleware)
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(seen.withLock { $0 } == ["M will store", "M did store"])
  }

  /// An operation that finishes after its dispatch returned still reaches the middleware of its moment, although
  /// the middleware was removed and nothing else holds it by then.
  @Test(arguments: [Dispatcher.Mode.async, .serial, .mainThread])
  func lateFinishReachesMiddlewareRemovedMeanwhile(mode: Dispatcher.Mode) async throws {
    let started = Locked<ActionOperation<Counter, CounterAction>?>(nil)
    let dispatcher = Dispatcher()
    final class HeldReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
      let started: Locked<ActionOperation<Counter, CounterAction>?>
      init(started: Locked<ActionOperation<Counter, CounterAction>?>) { self.started = started }
      override func operation(
        for action: CounterAction, in store: Store<Counter, CounterAction>
      ) -> ActionOperation<Counter, CounterAction> {
        ActionOperation(action: action, store: store) { [started] operation, _, _ in
          started.withLock { $0 = operation }
        }
      }
    }
    try dispatcher.register(store: Store(identifier: "held", model: Counter(), reducer: HeldReducer(started: started)))
    let seen = Locked<[String]>([])
    var middleware: HookMiddleware? = HookMiddleware("M", seen: seen)
    let box = WeakBox(middleware!)
    dispatcher.register(middleware: middleware!)
    let results = Collector<Bool>()
    dispatcher.dispatch(action: CounterAction.increase(1), mode: mode) { results.append($0.isSuccess) }
    // Waits on the operation's own state until the dispatch registered to hear it finish.
    let operation = await waitForStart(started)
    while !operation.isAwaited { await Task.yield() }
    dispatcher.unregister(middleware: middleware!)
    middleware = nil

    operation.finish()

    #expect(await results.wait(for: 1) == [true])
    #expect(seen.withLock { $0 } == ["M will held", "M did held"])
    withExtendedLifetime(box) {}
  }
}

/// The operation `started` received, once it did.
private func waitForStart(
  _ started: Locked<ActionOperation<Counter, CounterAction>?>
) async -> ActionOperation<Counter, CounterAction> {
  while true {
    if let operation = started.withLock({ $0 }) { return operation }
    await Task.yield()
  }
}
