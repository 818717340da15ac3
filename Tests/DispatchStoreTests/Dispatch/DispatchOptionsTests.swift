import DispatchStore
import DispatchStoreTesting
import Testing

/// Cancellation ids, throttling and debouncing (`DispatchOptions`), on a clock the tests advance.
@Suite("Dispatch options", .timeLimit(.minutes(1)))
struct DispatchOptionsTests {
  /// The latest dispatch with an id cancels the one in flight with the same id: "the latest search wins".
  @Test(arguments: [Dispatcher.Mode.async, .serial, .mainThread])
  func theLatestDispatchWithAnIdCancelsTheOneInFlight(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    let store = Store(identifier: "search", model: Counter(), reducer: GatedReducer(gate: gate))
    try dispatcher.register(store: store)
    let options = DispatchOptions(cancellationID: "search")

    let first = dispatcher.start(CounterAction.increase(1), mode: mode, options: options)
    _ = await gate.waitForOperations(1)
    let second = dispatcher.start(CounterAction.increase(10), mode: mode, options: options)
    // Another id is left alone.
    let other = dispatcher.start(
      CounterAction.increase(100), mode: mode, options: DispatchOptions(cancellationID: CancellationID(7)))

    #expect(first.state.description == "cancelled")
    _ = await gate.waitForOperations(mode == .async ? 3 : 2)
    gate.open()
    try await second.value
    if mode != .async {
      _ = await gate.waitForOperations(3)
      gate.open()
    }
    try await other.value
    #expect(store.model.count == 110)
    #expect(gate.cancellations.withLock { $0 } == 1)
  }

  @Test func withoutCancellingInFlightBothRunAndCancelByIdStopsBoth() async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    try dispatcher.register(store: Store(identifier: "s", model: Counter(), reducer: GatedReducer(gate: gate)))
    let options = DispatchOptions(cancellationID: "upload", cancelsInFlight: false)

    let first = dispatcher.start(CounterAction.increase(1), options: options)
    let second = dispatcher.start(CounterAction.increase(2), options: options)
    _ = await gate.waitForOperations(2)
    #expect(!first.state.isFinished && !second.state.isFinished)

    dispatcher.cancel(id: "upload")

    #expect(first.state.description == "cancelled")
    #expect(second.state.description == "cancelled")
    #expect(gate.cancellations.withLock { $0 } == 2)
  }

  /// Throttling runs the first dispatch at once (not after the interval: alexdrone/Store's throttle compared with
  /// the wrong sign and always delayed), fails the others within the interval, and runs the next after it at once.
  @Test func throttleRunsTheFirstAtOnceAndDropsTheOthersWithinTheInterval() throws {
    let clock = TestClock()
    let dispatcher = Dispatcher(clock: clock)
    let store = makeCounterStore("counter")
    try dispatcher.register(store: store)
    let options = DispatchOptions(throttle: .seconds(1))

    let first = dispatcher.start(CounterAction.increase(1), mode: .sync, options: options)
    clock.advance(by: .milliseconds(500))
    let second = dispatcher.start(CounterAction.increase(10), mode: .sync, options: options)
    clock.advance(by: .milliseconds(499))
    let third = dispatcher.start(CounterAction.increase(100), mode: .sync, options: options)
    clock.advance(by: .milliseconds(1))
    let fourth = dispatcher.start(CounterAction.increase(1000), mode: .sync, options: options)
    // Another key is throttled on its own.
    let other = dispatcher.start(TextAction.append("x"), mode: .sync, options: options)

    #expect(first.state.description == "completed")
    #expect(second.state.description == "failed: \(DispatchError.throttled)")
    #expect(third.state.description == "failed: \(DispatchError.throttled)")
    #expect(fourth.state.description == "completed")
    #expect(other.state.isFinished)
    #expect(store.model.count == 1001)
    #expect(clock.pendingCount == 0)  // Nothing was delayed.
  }

  /// Debouncing runs only the last dispatch, once a quiet interval passed after it; each one it replaced fails at
  /// once with `superseded`, and never reaches a reducer.
  @Test func debounceRunsOnlyTheLastAfterAQuietInterval() async throws {
    let clock = TestClock()
    let dispatcher = Dispatcher(clock: clock)
    let reducer = CounterReducer()
    let store = Store(identifier: "counter", model: Counter(), reducer: reducer)
    try dispatcher.register(store: store)
    let options = DispatchOptions(debounce: .milliseconds(300))

    var handles: [DispatchHandle] = []
    for amount in [1, 10, 100] {
      handles.append(dispatcher.start(CounterAction.increase(amount), mode: .sync, options: options))
      clock.advance(by: .milliseconds(100))
    }
    #expect(handles[0].state.description == "failed: \(DispatchError.superseded)")
    #expect(handles[1].state.description == "failed: \(DispatchError.superseded)")
    #expect(handles[2].state.description == "pending")
    clock.advance(by: .milliseconds(199))
    #expect(handles[2].state.description == "pending")
    clock.advance(by: .milliseconds(1))

    #expect(handles[2].state.description == "completed")
    #expect(store.model.count == 100)
    #expect(reducer.asked.withLock { $0 } == [.increase(100)])
  }

  /// A debounced dispatch cancelled while it waits does not run when its interval ends.
  @Test func aDebouncedDispatchCancelledWhileWaitingDoesNotRun() throws {
    let clock = TestClock()
    let dispatcher = Dispatcher(clock: clock)
    let reducer = CounterReducer()
    try dispatcher.register(store: Store(identifier: "counter", model: Counter(), reducer: reducer))

    let handle = dispatcher.start(
      CounterAction.increase(1), mode: .sync, options: DispatchOptions(debounce: .milliseconds(300)))
    handle.cancel()
    clock.advance(by: .seconds(1))

    #expect(handle.state.description == "cancelled")
    #expect(reducer.asked.withLock { $0 }.isEmpty)
  }

  /// Typing with a debounced, cancelling search: only queries after a pause run, and a running one is cancelled by
  /// the next that runs.
  @Test func debouncedSearchWithAnIdCancelsTheRunningQuery() async throws {
    let clock = TestClock()
    let dispatcher = Dispatcher(clock: clock)
    let gate = Gate()
    let reducer = GatedReducer(gate: gate)
    try dispatcher.register(store: Store(identifier: "search", model: Counter(), reducer: reducer))
    let options = DispatchOptions(cancellationID: "search", debounce: .milliseconds(300))

    let typed = dispatcher.start(CounterAction.increase(1), options: options)
    clock.advance(by: .milliseconds(300))  // A pause: it runs, and waits at the gate.
    _ = await gate.waitForOperations(1)
    let next = dispatcher.start(CounterAction.increase(2), options: options)
    let last = dispatcher.start(CounterAction.increase(3), options: options)
    #expect(typed.state.description == "started")  // Still running: the debounced ones have not started yet.
    clock.advance(by: .milliseconds(300))

    #expect(typed.state.description == "cancelled")
    #expect(next.state.description == "failed: \(DispatchError.superseded)")
    _ = await gate.waitForOperations(2)
    gate.open()
    try await last.value
    #expect(reducer.asked.withLock { $0 } == [.increase(1), .increase(3)])
  }
}
