import DispatchStoreTesting
import Testing

@testable import DispatchStore

/// Cancellation ids, throttling and debouncing (`DispatchOptions`), on a clock the tests advance.
// Three minutes: its stress test waits for the others (`Exclusive`), under ThreadSanitizer for over a minute.
@Suite("Dispatch options", .timeLimit(.minutes(3)), .watchdog)
struct DispatchOptionsTests {
  /// The latest dispatch with an id cancels the one in flight with the same id: "the latest search wins".
  @Test(arguments: [Dispatcher.Mode.async, .serial, .mainThread])
  func theLatestDispatchWithAnIdCancelsTheOneInFlight(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    let store = Store(identifier: "search", model: Counter(), reducer: GatedReducer(gate: gate))
    try dispatcher.register(store: store)
    let options = DispatchOptions(cancellationID: "search")

    let first = dispatcher.start(action: CounterAction.increase(1), mode: mode, options: options)
    _ = await gate.waitForOperations(1)
    let second = dispatcher.start(action: CounterAction.increase(10), mode: mode, options: options)
    // Another id is left alone.
    let other = dispatcher.start(
      action:
        CounterAction.increase(100), mode: mode, options: DispatchOptions(cancellationID: 7))

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

    let first = dispatcher.start(action: CounterAction.increase(1), options: options)
    let second = dispatcher.start(action: CounterAction.increase(2), options: options)
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

    let first = dispatcher.start(action: CounterAction.increase(1), mode: .sync, options: options)
    clock.advance(by: .milliseconds(500))
    let second = dispatcher.start(action: CounterAction.increase(10), mode: .sync, options: options)
    clock.advance(by: .milliseconds(499))
    let third = dispatcher.start(action: CounterAction.increase(100), mode: .sync, options: options)
    clock.advance(by: .milliseconds(1))
    let fourth = dispatcher.start(action: CounterAction.increase(1000), mode: .sync, options: options)
    // Another key is throttled on its own.
    let other = dispatcher.start(action: TextAction.append("x"), mode: .sync, options: options)

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
      handles.append(dispatcher.start(action: CounterAction.increase(amount), mode: .sync, options: options))
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
      action:
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

    let typed = dispatcher.start(action: CounterAction.increase(1), options: options)
    clock.advance(by: .milliseconds(300))  // A pause: it runs, and waits at the gate.
    _ = await gate.waitForOperations(1)
    let next = dispatcher.start(action: CounterAction.increase(2), options: options)
    let last = dispatcher.start(action: CounterAction.increase(3), options: options)
    #expect(typed.state.description == "started")  // Still running: the debounced ones have not started yet.
    clock.advance(by: .milliseconds(300))

    #expect(typed.state.description == "cancelled")
    #expect(next.state.description == "failed: \(DispatchError.superseded)")
    _ = await gate.waitForOperations(2)
    gate.open()
    try await last.value
    #expect(reducer.asked.withLock { $0 } == [.increase(1), .increase(3)])
  }

  // MARK: - A cancellation id covers every dispatch that carries it (issue 25, point 1)

  /// `cancel(id:)` reaches a debounced dispatch still waiting for its interval: it ends cancelled at once, and no
  /// reducer runs when the interval ends.
  @Test func cancelByIdCancelsADebouncedDispatchWaitingForItsInterval() throws {
    let clock = TestClock()
    let dispatcher = Dispatcher(clock: clock)
    let reducer = CounterReducer()
    try dispatcher.register(store: Store(identifier: "counter", model: Counter(), reducer: reducer))
    let waiting = dispatcher.start(
      action:
        CounterAction.increase(1), options: DispatchOptions(cancellationID: "search", debounce: .milliseconds(300)))
    #expect(waiting.state.description == "pending")

    dispatcher.cancel(id: "search")
    #expect(waiting.state.description == "cancelled")
    clock.advance(by: .seconds(1))
    #expect(waiting.state.description == "cancelled")
    #expect(reducer.asked.withLock { $0 }.isEmpty)
  }

  /// A newer dispatch with the id cancels a debounced one still waiting, and a prepared one not started yet.
  @Test func aNewerDispatchWithTheIdCancelsOnesStillWaiting() async throws {
    let clock = TestClock()
    let dispatcher = Dispatcher(clock: clock)
    let reducer = CounterReducer()
    try dispatcher.register(store: Store(identifier: "counter", model: Counter(), reducer: reducer))
    let prepared = dispatcher.prepare(
      action: CounterAction.increase(1), options: DispatchOptions(cancellationID: "save"))
    let waiting = dispatcher.start(
      action:
        CounterAction.increase(10), options: DispatchOptions(cancellationID: "save", debounce: .milliseconds(300)))
    let newest = dispatcher.start(action: CounterAction.increase(100), options: DispatchOptions(cancellationID: "save"))

    #expect(prepared.state.description == "cancelled")
    #expect(waiting.state.description == "cancelled")
    try await newest.value
    prepared.start()  // Cancelled: starting it does nothing.
    clock.advance(by: .seconds(1))
    #expect(reducer.asked.withLock { $0 } == [.increase(100)])
  }

  /// A debounced dispatch cancelled while it waited does not act when its interval ends.
  ///
  /// The dispatch in flight with its id goes on. It used to cancel it, as if it had run.
  @Test func aDebouncedDispatchCancelledWhileWaitingCancelsNothingWhenItsIntervalEnds() async throws {
    let clock = TestClock()
    let dispatcher = Dispatcher(clock: clock)
    let gate = Gate()
    try dispatcher.register(store: Store(identifier: "search", model: Counter(), reducer: GatedReducer(gate: gate)))
    let running = dispatcher.start(
      action:
        CounterAction.increase(1), options: DispatchOptions(cancellationID: "search", cancelsInFlight: false))
    _ = await gate.waitForOperations(1)
    let waiting = dispatcher.start(
      action:
        CounterAction.increase(3), options: DispatchOptions(cancellationID: "search", debounce: .milliseconds(300)))
    waiting.cancel()
    clock.advance(by: .seconds(1))

    #expect(waiting.state.description == "cancelled")
    #expect(running.state.description == "started")
    gate.open()
    try await running.value
    #expect(gate.cancellations.withLock { $0 } == 0)
  }

  /// A prepared dispatch cancelled by its id, then started, acts in no way: it neither replaces a debounced dispatch
  /// waiting with its key nor counts for throttling.
  @Test func aCancelledPreparedDispatchStartedLaterNeitherDebouncesNorThrottles() async throws {
    let clock = TestClock()
    let dispatcher = Dispatcher(clock: clock)
    let reducer = CounterReducer()
    try dispatcher.register(store: Store(identifier: "counter", model: Counter(), reducer: reducer))
    let debounced = DispatchOptions(cancellationID: "q", debounce: .milliseconds(300))
    let cancelled = dispatcher.prepare(action: CounterAction.increase(1), options: debounced)
    dispatcher.cancel(id: "q")
    let waiting = dispatcher.start(action: CounterAction.increase(10), options: debounced)
    cancelled.start()
    #expect(waiting.state.description == "pending")
    clock.advance(by: .milliseconds(300))
    try await waiting.value

    let throttled = DispatchOptions(cancellationID: "t", throttle: .seconds(1))
    let dropped = dispatcher.prepare(action: CounterAction.increase(100), options: throttled)
    dropped.cancel()
    dropped.start()
    try await dispatcher.start(action: CounterAction.increase(1_000), options: throttled).value
    #expect(reducer.asked.withLock { $0 } == [.increase(10), .increase(1_000)])
  }

  /// A dispatch cancels only the unfinished dispatches made before it with its id: an older debounced dispatch whose
  /// interval ends after a newer one started leaves the newer one running.
  @Test func aDispatchCancelsOnlyOlderOnesWithItsId() async throws {
    let clock = TestClock()
    let dispatcher = Dispatcher(clock: clock)
    let gate = Gate()
    try dispatcher.register(store: Store(identifier: "search", model: Counter(), reducer: GatedReducer(gate: gate)))
    let older = dispatcher.start(
      action:
        CounterAction.increase(1), options: DispatchOptions(cancellationID: "search", debounce: .milliseconds(300)))
    let newer = dispatcher.start(
      action:
        CounterAction.increase(2), options: DispatchOptions(cancellationID: "search", cancelsInFlight: false))
    _ = await gate.waitForOperations(1)
    clock.advance(by: .milliseconds(300))  // The older one starts now: it has nothing older to cancel.
    _ = await gate.waitForOperations(2)

    #expect(newer.state.description == "started")
    #expect(older.state.description == "started")
    gate.open()
    try await newer.value
    try await older.value
    #expect(gate.cancellations.withLock { $0 } == 0)
  }

  /// Eight threads start, debounce, throttle and cancel dispatches by three shared ids at once, on the test clock.
  ///
  /// The threads also advance the clock. A cancel by id leaves none of its dispatches waiting, every handle ends
  /// exactly once, and no dispatch cancelled before it started ran a reducer. Twenty schedules, one per `run`, one
  /// at a time (three under a sanitizer): several at once make more busy threads than the machine has cores, which
  /// starve other suites' tests.
  @Test(.serialized, arguments: 0..<(isSanitized ? 3 : 20))
  func eightThreadsUsingCancellationIdsEndEveryDispatchOnceAndRunNoCancelledOne(run: Int) async throws {
    try await Exclusive.stress {
      try await eightThreadsUsingCancellationIdsEndEveryDispatchOnceAndRunNoCancelledOneAlone(run: run)
    }
  }

  private func eightThreadsUsingCancellationIdsEndEveryDispatchOnceAndRunNoCancelledOneAlone(run: Int) async throws {
    let clock = TestClock()
    let dispatcher = Dispatcher(clock: clock)
    let reducer = CounterReducer()
    try dispatcher.register(store: Store(identifier: "counter", model: Counter(), reducer: reducer))
    final class Tracked: Sendable {
      let handle: DispatchHandle
      let amount: Int
      let states = Locked<[String]>([])
      let token = Locked<ObservationToken?>(nil)

      init(_ handle: DispatchHandle, amount: Int) {
        self.handle = handle
        self.amount = amount
      }
    }
    let tracked = Locked<[Tracked]>([])
    await onThreads(8) { thread in
      // A generator of its own per thread and run, seeded: the same schedule of calls each time.
      var seed = UInt64(run * 8 + thread + 1) &* 0x9E37_79B9_7F4A_7C15
      func next() -> Int {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int(truncatingIfNeeded: seed >> 33)
      }
      // This thread's dispatches by id: none may still wait once this thread cancelled their id.
      var mine: [Int: [DispatchHandle]] = [:]
      for step in 0..<400 {
        let key = next() % 3
        let id = key
        let options: DispatchOptions
        switch next() % 7 {
        case 0: options = DispatchOptions(cancellationID: id)
        case 1: options = DispatchOptions(cancellationID: id, cancelsInFlight: false)
        case 2, 3: options = DispatchOptions(cancellationID: id, debounce: .milliseconds(next() % 20))
        case 4: options = DispatchOptions(cancellationID: id, throttle: .milliseconds(5))
        case 5:
          dispatcher.cancel(id: id)
          for handle in mine[key] ?? [] {
            #expect(handle.state.description != "pending", "a dispatch with id \(key) was left waiting")
          }
          mine[key] = []
          continue
        default:
          clock.advance(by: .milliseconds(next() % 7))
          continue
        }
        let amount = thread * 10_000 + step
        let handle = dispatcher.prepare(action: CounterAction.increase(amount), options: options)
        let entry = Tracked(handle, amount: amount)
        // Observed before it starts: every state it goes through is heard.
        let token = handle.observe { state in entry.states.withLock { $0.append(state.description) } }
        entry.token.withLock { $0 = token }
        tracked.withLock { $0.append(entry) }
        handle.start()
        mine[key, default: []].append(handle)
      }
    }
    clock.advance(by: .seconds(1))  // Every debounce interval ends.
    let entries = tracked.withLock { $0 }
    for entry in entries { _ = await entry.handle.result }
    let ran = reducer.asked.withLock { $0 }
    var runs: [Int: Int] = [:]
    for case .increase(let amount) in ran { runs[amount, default: 0] += 1 }
    var cancelledBeforeStart = 0
    for entry in entries {
      let states = entry.states.withLock { $0 }
      let finals = states.filter { $0 != "pending" && $0 != "started" }
      #expect(finals.count == 1, "\(entry.amount): \(states)")
      #expect(states.last.map { $0 != "pending" && $0 != "started" } == true, "\(entry.amount): \(states)")
      #expect((runs[entry.amount] ?? 0) <= 1, "\(entry.amount) ran \(runs[entry.amount] ?? 0) times")
      if !states.contains("started") {
        #expect(runs[entry.amount] == nil, "\(entry.amount) ran without starting: \(states)")
        if states.last == "cancelled" { cancelledBeforeStart += 1 }
      }
    }
    // The schedule cancels waiting dispatches: the case this test is about happened.
    #expect(cancelledBeforeStart > 0)
    #expect(clock.pendingCount == 0)
  }
}
