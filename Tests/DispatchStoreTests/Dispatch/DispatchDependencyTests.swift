import Testing

@testable import DispatchStore

/// Dispatches that start only after others completed (`prepare`, `depend(on:)`, `start()`).
@Suite("Dispatch dependencies", .timeLimit(.minutes(1)), .watchdog)
struct DispatchDependencyTests {
  /// A dependent dispatch starts only after its dependencies completed, across stores, action types and modes.
  @Test(arguments: Dispatcher.Mode.allCases)
  func aDependentStartsAfterItsDependenciesCompleted(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    try dispatcher.register(store: Store(identifier: "gated", model: Counter(), reducer: GatedReducer(gate: gate)))
    let text = Store(identifier: "text", model: Text(), reducer: TextReducer())
    try dispatcher.register(store: text)

    let first = dispatcher.prepare(action: CounterAction.increase(1), mode: .async)
    let dependent = dispatcher.prepare(action: TextAction.append("after"), mode: mode)
    try dependent.depend(on: first)
    dependent.start()
    first.start()
    _ = await gate.waitForOperations(1)
    #expect(dependent.state.description == "pending")
    #expect(text.model.value.isEmpty)

    gate.open()
    try await dependent.value

    #expect(text.model.value == "after")
    #expect(first.state.description == "completed")
  }

  /// A failed or cancelled dependency fails the dependent with `dependencyFailed` naming it; the dependent's
  /// reducer never runs.
  @Test(arguments: [false, true])
  func aFailedOrCancelledDependencyFailsTheDependent(cancelled: Bool) async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    try dispatcher.register(store: Store(identifier: "gated", model: Counter(), reducer: GatedReducer(gate: gate)))
    let text = TextReducer()
    try dispatcher.register(store: Store(identifier: "text", model: Text(), reducer: text))

    let dependency = dispatcher.prepare(action: CounterAction.increase(1))
    let dependent = dispatcher.prepare(action: TextAction.append("never"))
    try dependent.depend(on: dependency)
    dependent.start()
    dependency.start()
    let operation = await gate.waitForOperations(1)[0]
    if cancelled {
      dependency.cancel()
    } else {
      operation.finish(throwing: TestFailure(reason: "dependency"))
    }

    let result = await dependent.result
    guard case .failure(.dependencyFailed(let id)) = result else {
      Issue.record("expected dependencyFailed, got \(result)")
      return
    }
    #expect(id == dependency.id)
    #expect(text.calls.load(ordering: .relaxed) == 0)
  }

  /// A dependency that would close a cycle is refused, and nothing changes: no dispatch waits for another.
  @Test func aCycleIsRejectedBeforeAnythingRuns() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("counter")
    try dispatcher.register(store: store)
    let a = dispatcher.prepare(action: CounterAction.increase(1))
    let b = dispatcher.prepare(action: CounterAction.increase(10))
    let c = dispatcher.prepare(action: CounterAction.increase(100))
    try b.depend(on: a)
    try c.depend(on: b)

    #expect(throws: DispatchError.self) { try a.depend(on: c) }
    #expect(throws: DispatchError.self) { try a.depend(on: a) }
    do {
      try a.depend(on: c)
    } catch {
      guard case .dependencyCycle(let ids) = error else {
        Issue.record("expected a cycle, got \(error)")
        return
      }
      #expect(ids == [a.id, c.id, b.id, a.id])
    }
    for handle in [c, b, a] { handle.start() }
    try await c.value
    #expect(store.model.count == 111)
  }

  @Test func aDependencyAddedAfterTheStartIsRefused() throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeCounterStore("counter"))
    let first = dispatcher.start(action: CounterAction.increase(1), mode: .sync)
    let later = dispatcher.start(action: CounterAction.increase(2), mode: .sync)

    #expect(throws: DispatchError.self) { try later.depend(on: first) }
  }

  /// A prepared dispatch cancelled before it is started ends at once, and starting it later runs nothing.
  @Test func aPreparedDispatchCancelledBeforeItStartsNeverRuns() throws {
    let dispatcher = Dispatcher()
    let reducer = CounterReducer()
    try dispatcher.register(store: Store(identifier: "counter", model: Counter(), reducer: reducer))
    let handle = dispatcher.prepare(action: CounterAction.increase(1), mode: .sync)

    handle.cancel()
    handle.start()

    #expect(handle.state.description == "cancelled")
    #expect(reducer.asked.withLock { $0 }.isEmpty)
  }
}
