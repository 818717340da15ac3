import Dispatch
import Foundation
import Testing

@testable import DispatchStore

/// Dispatches made with `Dispatcher.start`: states, awaiting, observing, cancelling.
@Suite("Dispatch handles", .timeLimit(.minutes(1)), .watchdog)
struct DispatchHandleTests {
  static let queuedModes: [Dispatcher.Mode] = [.async, .serial, .mainThread]

  /// A handle's states, as its observer heard them, are a run through pending, started and completed, ending in
  /// completed; the same as `states` yields.
  @Test(arguments: Dispatcher.Mode.allCases)
  func aHandleGoesThroughItsStatesInOrder(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    try dispatcher.register(store: Store(identifier: "gated", model: Counter(), reducer: GatedReducer(gate: gate)))
    let heard = Collector<String>()

    let handle: DispatchHandle
    if mode == .sync {
      // `.sync` returns once the dispatch finished: it blocks a thread of its own (not one of the cooperative
      // pool's, which the opener may need), and the gate opens once the operation is there.
      async let started = onOwnThread { dispatcher.start(action: CounterAction.increase(1), mode: mode) }
      _ = await gate.waitForOperations(1)
      gate.open()
      handle = await started
      #expect(handle.state.isFinished)
    } else {
      handle = dispatcher.start(action: CounterAction.increase(1), mode: mode)
    }
    let ended = Collector<Bool>()
    let token = handle.observe { state in
      heard.append(state.description)
      if state.isFinished { ended.append(true) }
    }
    if mode != .sync {
      _ = await gate.waitForOperations(1)
      gate.open()
    }
    try await handle.value

    _ = await ended.wait(for: 1)
    let states = heard.values
    let expected = ["pending", "started", "completed"]
    #expect(states.last == "completed")
    #expect(Array(expected.suffix(states.count)) == states)
    var streamed: [String] = []
    for await state in handle.states { streamed.append(state.description) }
    #expect(streamed == ["completed"])  // Registered after the end: the final state, and the sequence ends.
    withExtendedLifetime(token) {}
  }

  /// A dispatch queued behind another in its lane is pending, then started, then completed, heard in that order.
  @Test(arguments: [Dispatcher.Mode.serial, .mainThread])
  func aQueuedDispatchIsPendingUntilItsTurn(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    try dispatcher.register(store: Store(identifier: "gated", model: Counter(), reducer: GatedReducer(gate: gate)))
    let first = dispatcher.start(action: CounterAction.increase(1), mode: mode)
    _ = await gate.waitForOperations(1)

    let second = dispatcher.start(action: CounterAction.increase(2), mode: mode)
    let heard = Collector<String>()
    let token = second.observe { heard.append($0.description) }
    #expect(second.state.description == "pending")
    gate.open()
    _ = await gate.waitForOperations(2)
    gate.open()
    try await second.value

    #expect(await heard.wait(for: 3) == ["pending", "started", "completed"])
    #expect(first.state.description == "completed")
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func valueThrowsTheErrorTheDispatchFailedWith(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeCounterStore("failing"))

    let handle = dispatcher.start(action: CounterAction.fail, mode: mode)

    await #expect(throws: DispatchError.self) { try await handle.value }
    guard case .failed(.operationsFailed(let failures)) = handle.state else {
      Issue.record("expected a failure, got \(handle.state)")
      return
    }
    #expect(failures.map(\.storeIdentifier) == ["failing"])
  }

  /// A dispatch cancelled while it waits in its lane never reaches a reducer, and is reported cancelled once.
  @Test(arguments: [Dispatcher.Mode.serial, .mainThread])
  func aDispatchCancelledBeforeItStartsRunsNoReducer(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    let reducer = GatedReducer(gate: gate)
    try dispatcher.register(store: Store(identifier: "gated", model: Counter(), reducer: reducer))
    _ = dispatcher.start(action: CounterAction.increase(1), mode: mode)
    _ = await gate.waitForOperations(1)
    let queued = dispatcher.start(action: CounterAction.increase(100), mode: mode)
    let finals = Locked(0)
    let token = queued.observe { if $0.isFinished { finals.withLock { $0 += 1 } } }

    queued.cancel()
    queued.cancel()
    gate.open()
    // The lane goes on past the cancelled dispatch: this one runs and completes.
    let after = dispatcher.start(action: CounterAction.increase(10), mode: mode)
    _ = await gate.waitForOperations(2)
    gate.open()
    try await after.value

    await #expect(throws: DispatchError.self) { try await queued.value }
    #expect(queued.state.description == "cancelled")
    #expect(finals.withLock { $0 } == 1)
    #expect(reducer.asked.withLock { $0 } == [.increase(1), .increase(10)])
    withExtendedLifetime(token) {}
  }

  /// Cancelling a dispatch whose operation is running (to finish later, on another thread) tells the operation,
  /// ends the handle as cancelled at once, and lets middleware see the store's transaction end as cancelled.
  @Test(arguments: Dispatcher.Mode.allCases)
  func cancellingARunningOperationTellsItAndEndsTheDispatch(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    let store = Store(identifier: "gated", model: Counter(), reducer: GatedReducer(gate: gate))
    try dispatcher.register(store: store)
    let middleware = RecordingMiddleware()
    dispatcher.register(middleware: middleware)

    let handle = await startThenCancel(CounterAction.increase(5), mode: mode, on: dispatcher) {
      let operations = await gate.waitForOperations(1)
      #expect(!operations[0].isCancelled)
    }
    #expect(handle.state.description == "cancelled")

    await #expect(throws: DispatchError.self) { try await handle.value }
    let operation = await gate.waitForOperations(1)[0]
    #expect(operation.isCancelled)
    #expect(gate.cancellations.withLock { $0 } == 1)
    #expect(store.model.count == 0)
    // The dispatcher is not stuck: the next dispatch in the same mode runs.
    let next = dispatcher.start(action: CounterAction.increase(1), mode: mode == .sync ? .async : mode)
    _ = await gate.waitForOperations(2)
    gate.open()
    try await next.value
    #expect(store.model.count == 1)
    let ended = middleware.transactions.withLock { $0 }
    #expect(ended.map(\.wasCancelled) == [true, false])
  }

  /// A store waiting for a store whose operation is running does not start once the dispatch is cancelled.
  @Test(arguments: Dispatcher.Mode.allCases)
  func storesWaitingForACancelledStoreDoNotStart(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    let waiting = GatedReducer(gate: gate, waits: ["first"])
    try dispatcher.register(store: Store(identifier: "first", model: Counter(), reducer: GatedReducer(gate: gate)))
    try dispatcher.register(store: Store(identifier: "second", model: Counter(), reducer: waiting))

    let handle = await startThenCancel(CounterAction.increase(1), mode: mode, on: dispatcher) {
      _ = await gate.waitForOperations(1)
    }

    await #expect(throws: DispatchError.self) { try await handle.value }
    // Both stores handle the next dispatch, in order: the lane and the stores are free.
    let next = dispatcher.start(action: CounterAction.increase(2), mode: mode == .sync ? .async : mode)
    _ = await gate.waitForOperations(2)
    gate.open()
    _ = await gate.waitForOperations(3)
    gate.open()
    try await next.value
    #expect(waiting.asked.withLock { $0 } == [.increase(2)])
  }

  /// An operation that registers for cancellation after its dispatch was cancelled hears it at once.
  @Test func onCancelAfterTheCancellationRunsAtOnce() async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    try dispatcher.register(store: Store(identifier: "gated", model: Counter(), reducer: GatedReducer(gate: gate)))
    let handle = dispatcher.start(action: CounterAction.increase(1), mode: .async)
    let operation = await gate.waitForOperations(1)[0]
    handle.cancel()

    let heard = Locked(0)
    operation.onCancel { heard.withLock { $0 += 1 } }

    #expect(heard.withLock { $0 } == 1)
  }

  /// `cancelPending(in:)` empties a lane: dispatches with a completion hear `cancelled` once, handles end
  /// cancelled, and no reducer runs for them; the running one goes on.
  @Test(arguments: [Dispatcher.Mode.serial, .mainThread])
  func cancelPendingEmptiesTheLane(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    let reducer = GatedReducer(gate: gate)
    try dispatcher.register(store: Store(identifier: "gated", model: Counter(), reducer: reducer))
    let running = dispatcher.start(action: CounterAction.increase(1), mode: mode)
    _ = await gate.waitForOperations(1)
    let completions = Collector<String>()
    dispatcher.dispatch(action: CounterAction.increase(2), mode: mode) { result in
      completions.append(result.dispatchError.map { "\($0)" } ?? "success")
    }
    let held = dispatcher.start(action: CounterAction.increase(3), mode: mode)

    dispatcher.cancelPending(in: mode)
    dispatcher.cancelPending(in: .async)  // No lane: nothing happens.
    gate.open()
    try await running.value

    #expect(await completions.wait(for: 1) == ["The dispatch was cancelled."])
    #expect(held.state.description == "cancelled")
    #expect(reducer.asked.withLock { $0 } == [.increase(1)])
  }

  @Test func cancelAllCancelsEveryUnfinishedHandle() async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    try dispatcher.register(store: Store(identifier: "gated", model: Counter(), reducer: GatedReducer(gate: gate)))
    let handles = (1...4).map {
      dispatcher.start(action: CounterAction.increase($0), mode: $0.isMultiple(of: 2) ? .serial : .async)
    }
    _ = await gate.waitForOperations(3)  // Two `.async` ones and the first `.serial` one run; one waits.

    dispatcher.cancelAll()

    for handle in handles { #expect(handle.state.description == "cancelled") }
    #expect(gate.cancellations.withLock { $0 } == 3)
  }

  /// Eight threads of their own start dispatches in every mode and cancel every third one at once, while one of
  /// them also cancels everything now and then: every handle ends exactly once, completed and cancelled add up to
  /// the total, and the store counted each reduction that ran (at least every completed one).
  @Test func eightThreadsStartingAndCancellingAtOnceLoseNothing() async throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "contended", model: Counter(), reducer: CounterSynchronousReducer())
    try dispatcher.register(store: store)
    let threads = 8
    let perThread = 200
    let endings = Locked<[TransactionID: Int]>([:])
    let outcomes = Collector<Bool>()  // true: completed; false: cancelled.
    let tokens = Locked<[ObservationToken]>([])
    let modes: [Dispatcher.Mode] = [.async, .serial, .mainThread, .sync]

    await onThreads(threads) { thread in
      for index in 0..<perThread {
        let handle = dispatcher.start(action: CounterAction.increase(1), mode: modes[index % modes.count])
        let key = handle.id
        let token = handle.observe { state in
          guard state.isFinished else { return }
          endings.withLock { $0[key, default: 0] += 1 }
          switch state {
          case .completed: outcomes.append(true)
          case .cancelled: outcomes.append(false)
          default: Issue.record("unexpected final state \(state)")
          }
        }
        tokens.withLock { $0.append(token) }
        if index % 3 == 0 { handle.cancel() }
        if thread == 0, index % 50 == 49 { dispatcher.cancelAll() }
      }
    }

    let total = threads * perThread
    let results = await outcomes.wait(for: total)
    let completed = results.filter { $0 }.count
    #expect(results.count == total)
    #expect(endings.withLock { $0.count == total && $0.values.allSatisfy { $0 == 1 } })
    #expect(store.model.count >= completed)
    #expect(store.model.count <= total)
    // The lanes are free: one more dispatch in each runs.
    for mode in modes { try await dispatcher.start(action: CounterAction.increase(1), mode: mode).value }
  }

  @Test func dispatchSyncThrowsWhereItIsCalled() throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("counter")
    try dispatcher.register(store: store)

    try dispatcher.dispatchSync(action: CounterAction.increase(2))
    #expect(throws: DispatchError.self) { try dispatcher.dispatchSync(action: CounterAction.fail) }
    #expect(throws: DispatchError.self) {
      try dispatcher.dispatchSync(action: CounterAction.noop, to: "nobody")
    }

    #expect(store.model.count == 2)
  }

  /// A prepared dispatch started after its dispatcher is gone ends as cancelled instead of staying pending for ever;
  /// so does one that waited for another (helper-61).
  @Test func aDispatchStartedAfterItsDispatcherIsGoneEndsCancelled() async throws {
    var dispatcher: Dispatcher? = Dispatcher()
    let other = Dispatcher()
    try other.register(store: makeCounterStore("other"))
    let alone = try #require(dispatcher).prepare(action: CounterAction.increase(1))
    let waiting = try #require(dispatcher).prepare(action: CounterAction.increase(1))
    let first = other.prepare(action: CounterAction.increase(1))
    try waiting.depend(on: first)
    dispatcher = nil
    for handle in [alone, waiting] {
      handle.start()
      if handle === waiting { first.start() }
      do throws(DispatchError) {
        try await handle.value
        Issue.record("the dispatch completed")
      } catch {
        #expect(error == .cancelled)
      }
      #expect(handle.state.description == "cancelled")
    }
  }

  /// A held dispatch whose operation its reducer let go of without finishing fails with `releasedWithoutFinishing`,
  /// as it does without a handle, instead of never ending (helper-61).
  @Test(arguments: Dispatcher.Mode.allCases)
  func aHeldDispatchWhoseOperationWasLetGoOfFails(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("abandoned")
    try dispatcher.register(store: store)
    // `.sync` returns once the dispatch finished: on a thread of its own, not one of the cooperative pool's.
    let handle = await onOwnThread { dispatcher.start(action: CounterAction.abandon, mode: mode) }
    do throws(DispatchError) {
      try await handle.value
      Issue.record("the dispatch completed")
    } catch {
      guard case .operationsFailed(let failures) = error else {
        Issue.record("expected operationsFailed, got \(error)")
        return
      }
      #expect(failures.first?.error as? DispatchError == .releasedWithoutFinishing(storeIdentifier: "abandoned"))
    }
    // The lane is free again.
    try await dispatcher.dispatch(action: CounterAction.increase(1), mode: mode)
    #expect(store.model.count == 1)
  }

  /// An operation's captured object whose deinit cancels every dispatch is not released under the handle's lock.
  ///
  /// There, `cancelAll()` took the lock its thread held and trapped (helper-61). Released when the operation goes,
  /// it may cancel the dispatch still ending, or find it completed.
  @Test(arguments: Dispatcher.Mode.allCases)
  func anOperationsCapturesAreNotReleasedUnderTheHandlesLock(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let cancelled = Locked(0)
    let store = Store(
      identifier: "screen", model: Counter(),
      reducer: CapturingReducer { CancelsAllOnDeinit(dispatcher, counting: cancelled) })
    try dispatcher.register(store: store)
    let handle = await onOwnThread { dispatcher.start(action: CounterAction.increase(1), mode: mode) }
    do throws(DispatchError) {
      try await handle.value
    } catch {
      #expect(error == .cancelled)
    }
    _ = await dispatcher.drain()
    #expect(cancelled.withLock { $0 } == 1)
    #expect(store.model.count == 1)
  }
}

/// Cancels every dispatch of its dispatcher when released, and counts it.
final class CancelsAllOnDeinit: Sendable {
  let dispatcher: Dispatcher
  let counting: Locked<Int>

  init(_ dispatcher: Dispatcher, counting: Locked<Int>) {
    (self.dispatcher, self.counting) = (dispatcher, counting)
  }

  deinit {
    dispatcher.cancelAll()
    counting.withLock { $0 += 1 }
  }
}

/// An operation whose block captures a fresh object from `make`, changes the count and finishes inside its start.
final class CapturingReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
  let make: @Sendable () -> any Sendable

  init(make: @escaping @Sendable () -> any Sendable) {
    self.make = make
  }

  override func operation(
    for action: CounterAction, in store: Store<Counter, CounterAction>
  ) -> ActionOperation<Counter, CounterAction> {
    let captured = make()
    return ActionOperation(action: action, store: store) { operation, _, _ in
      _ = captured
      operation.updateModel { $0.count += 1 }
      operation.finish()
    }
  }
}
