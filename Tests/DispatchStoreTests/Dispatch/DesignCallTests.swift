import Dispatch
import Foundation
import Testing

@testable import DispatchStore

/// The design's own calls, written as its users write them: fire and forget from synchronous code (a function that is
/// not `async`, a `@MainActor` button action, a `Thread` body), awaited from `async` code.
@Suite("The design's dispatch calls", .timeLimit(.minutes(1)), .watchdog)
struct DesignCallTests {
  struct Counter: ModelType {
    enum Action: ActionType {
      case increase
    }

    var count = 0
  }

  enum Action: ActionType, Equatable {
    case foo
    case bar
  }

  /// The actions the log store heard, in order.
  struct Log: ModelType {
    var entries: [Action] = []
  }

  /// A counter store and a log store, registered with `dispatcher` under names that start with `prefix`.
  final class App: Sendable {
    let dispatcher: Dispatcher
    let counter: Store<Counter, Counter.Action>
    let log: Store<Log, Action>

    init(dispatcher: Dispatcher = Dispatcher(), prefix: String = "") throws {
      self.dispatcher = dispatcher
      counter = Store(identifier: prefix + "counter", model: Counter()) { (_: Counter.Action, model) in
        model.count += 1
      }
      log = Store(identifier: prefix + "log", model: Log()) { (action: Action, model) in model.entries.append(action) }
      try dispatcher.register(store: counter)
      try dispatcher.register(store: log)
    }

    func unregister() {
      _ = dispatcher.unregister(storeIdentifier: counter.identifier)
      _ = dispatcher.unregister(storeIdentifier: log.identifier)
    }

    /// Waits until the four calls arrived (one increase, four log entries) and checks where the models ended: the
    /// counter at 1; `foo, bar` twice, each pair in order when `ordered` (an `.async` pair may swap: its two
    /// dispatches run concurrently).
    func expectFourCallsLanded(pairsInOrder ordered: Bool, sourceLocation: SourceLocation = #_sourceLocation) async {
      guard let counted = await waitForModel(of: counter, where: { $0.count >= 1 }),
        let logged = await waitForModel(of: log, where: { $0.entries.count >= 4 })
      else {
        Issue.record("the dispatches did not all land within 60 s", sourceLocation: sourceLocation)
        return
      }
      #expect(counted.count == 1, sourceLocation: sourceLocation)
      #expect(logged.entries.filter { $0 == .foo }.count == 2, "\(logged.entries)", sourceLocation: sourceLocation)
      #expect(logged.entries.filter { $0 == .bar }.count == 2, "\(logged.entries)", sourceLocation: sourceLocation)
      guard ordered else { return }
      // Two `foo, bar` pairs interleaved, each in order: no prefix has more bars than foos.
      var balance = 0
      for entry in logged.entries {
        balance += entry == .foo ? 1 : -1
        #expect(balance >= 0, "a bar before its foo: \(logged.entries)", sourceLocation: sourceLocation)
      }
    }
  }

  // MARK: Fire and forget, from synchronous code

  /// The four calls as the design writes them, in a function that is not `async`.
  static func tapped(_ dispatcher: Dispatcher) {
    dispatcher.dispatch(action: Counter.Action.increase)
    dispatcher.dispatch(actions: [Action.foo, Action.bar])
    dispatcher.dispatch(action: Action.foo, mode: .serial)
    dispatcher.dispatch(action: Action.bar, mode: .serial)
  }

  /// The same four calls in a `@MainActor` button action.
  @MainActor static func buttonAction(_ dispatcher: Dispatcher) {
    dispatcher.dispatch(action: Counter.Action.increase)
    dispatcher.dispatch(actions: [Action.foo, Action.bar])
    dispatcher.dispatch(action: Action.foo, mode: .serial)
    dispatcher.dispatch(action: Action.bar, mode: .serial)
  }

  @Test func theFourCallsFromASynchronousFunction() async throws {
    let app = try App()
    Self.tapped(app.dispatcher)
    await app.expectFourCallsLanded(pairsInOrder: true)
  }

  @Test func theFourCallsFromAMainActorButtonAction() async throws {
    let app = try App()
    await MainActor.run { Self.buttonAction(app.dispatcher) }
    await app.expectFourCallsLanded(pairsInOrder: true)
  }

  @Test func theFourCallsFromAThreadBody() async throws {
    let app = try App()
    let dispatcher = app.dispatcher
    Thread {
      dispatcher.dispatch(action: Counter.Action.increase)
      dispatcher.dispatch(actions: [Action.foo, Action.bar])
      dispatcher.dispatch(action: Action.foo, mode: .serial)
      dispatcher.dispatch(action: Action.bar, mode: .serial)
    }.start()
    await app.expectFourCallsLanded(pairsInOrder: true)
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func theFourCallsInEveryMode(mode: Dispatcher.Mode) async throws {
    let app = try App()
    func tapped(_ dispatcher: Dispatcher) {
      dispatcher.dispatch(action: Counter.Action.increase)
      dispatcher.dispatch(actions: [Action.foo, Action.bar])
      dispatcher.dispatch(action: Action.foo, mode: mode)
      dispatcher.dispatch(action: Action.bar, mode: mode)
    }
    tapped(app.dispatcher)
    await app.expectFourCallsLanded(pairsInOrder: mode != .async)
  }

  /// Each action starts after the previous one's stores finished, also when an operation finishes later on another
  /// thread.
  @Test(arguments: Dispatcher.Mode.allCases)
  func actionsFromSynchronousCodeRunOneAfterAnother(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("seq")
    try dispatcher.register(store: store)
    func tapped() {
      dispatcher.dispatch(
        actions: [CounterAction.increaseLater(1), CounterAction.increase(2), CounterAction.increaseLater(3)],
        mode: mode)
    }
    tapped()
    let model = await waitForModel(of: store) { $0.log.count >= 3 }
    #expect(model?.log == ["seq+1", "seq+2", "seq+3"])
  }

  /// With `.sync`, the fire-and-forget form returns once every store finished, as the mode says.
  @Test func aSynchronousDispatchReturnsOnceEveryStoreFinished() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("sync")
    try dispatcher.register(store: store)
    dispatcher.dispatch(action: CounterAction.increaseLater(4), mode: .sync)
    #expect(store.model.count == 4)
    dispatcher.dispatch(actions: [CounterAction.increaseLater(1), CounterAction.increaseLater(2)], mode: .sync)
    #expect(store.model.count == 7)
    // A sequence stops at its first failure: the action after it is not dispatched.
    dispatcher.dispatch(
      actions: [CounterAction.increase(1), CounterAction.fail, CounterAction.increase(10)], mode: .sync)
    #expect(store.model.count == 8)
  }

  // MARK: Awaited, from async code

  @Test(arguments: Dispatcher.Mode.allCases)
  func anAwaitedDispatchInAnAsyncFunctionWaitsForEveryStore(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let first = makeCounterStore("first")
    let second = makeCounterStore("second", waits: { _ in ["first"] })
    try dispatcher.register(store: first)
    try dispatcher.register(store: second)

    try await dispatcher.dispatch(action: CounterAction.increaseLater(5), mode: mode)
    #expect(first.model.count == 5)
    #expect(second.model.count == 5)

    try await dispatcher.dispatch(
      actions: [CounterAction.increaseLater(1), CounterAction.increaseLater(2)], mode: mode)
    #expect(first.model.log == ["first+5", "first+1", "first+2"])
    #expect(second.model.log == ["second+5", "second+1", "second+2"])
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func anAwaitedDispatchThrowsTheErrorThatMadeItFail(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeCounterStore("counter"))

    do {
      try await dispatcher.dispatch(action: CounterAction.fail, mode: mode)
      Issue.record("expected the dispatch to fail")
    } catch {
      guard case .operationsFailed(let failures) = error else {
        Issue.record("unexpected \(error)")
        return
      }
      #expect(failures.map(\.storeIdentifier) == ["counter"])
      #expect(failures.first?.error as? TestFailure == TestFailure(reason: "fail in counter"))
    }
    do {
      try await dispatcher.dispatch(actions: [CounterAction.increase(1), CounterAction.fail], mode: mode)
      Issue.record("expected the sequence to fail")
    } catch {
      guard case .operationsFailed = error else {
        Issue.record("unexpected \(error)")
        return
      }
    }
  }
}
