import Dispatch
import Synchronization
import Testing

@testable import DispatchStore

/// An interceptor whose decision is a closure.
private final class ClosureInterceptor: Interceptor {
  let body: @Sendable (any ActionType, Dispatcher) -> Interception

  init(_ body: @escaping @Sendable (any ActionType, Dispatcher) -> Interception) {
    self.body = body
  }

  func intercept(_ action: any ActionType, dispatcher: Dispatcher) -> Interception {
    body(action, dispatcher)
  }
}

/// Decisions an interceptor handed out to make later, for the test to make.
private final class PendingDecisions: Sendable {
  private let decisions = Locked<[@Sendable (Interception) -> Void]>([])
  private let arrived = DispatchSemaphore(value: 0)

  func add(_ decision: @escaping @Sendable (Interception) -> Void) {
    decisions.withLock { $0.append(decision) }
    arrived.signal()
  }

  /// The next decision handed out, once it was (on a thread that may block: not the cooperative pool's).
  func next() async -> @Sendable (Interception) -> Void {
    await withCheckedContinuation { continuation in
      DispatchQueue.global().async {
        self.arrived.wait()
        continuation.resume(returning: self.decisions.withLock { $0.removeFirst() })
      }
    }
  }
}

@Suite("Interceptors", .timeLimit(.minutes(1)), .watchdog)
struct InterceptorTests {
  /// A counter store and a text store on one dispatcher.
  private func makeDispatcher() throws -> (Dispatcher, Store<Counter, CounterAction>, Store<Text, TextAction>) {
    let dispatcher = Dispatcher()
    let counter = makeCounterStore("counter")
    let text = Store(identifier: "text", model: Text(), reducer: TextReducer())
    try dispatcher.register(store: counter)
    try dispatcher.register(store: text)
    return (dispatcher, counter, text)
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func blockedActionReachesNoStoreAndFailsNamingTheInterceptor(mode: Dispatcher.Mode) async throws {
    let (dispatcher, counter, _) = try makeDispatcher()
    dispatcher.register(interceptor: ClosureInterceptor { _, _ in .block(reason: "not now") })

    let report = await dispatcher.dispatchReporting(action: CounterAction.increase(1), mode: mode)

    guard case .failure(.blocked(let interceptor, let reason)) = report.result else {
      Issue.record("expected a blocked dispatch, got \(report.result)")
      return
    }
    #expect(interceptor.hasSuffix("ClosureInterceptor"))
    #expect(reason == "not now")
    #expect(report.actions.isEmpty)
    #expect(counter.model.count == 0)
    #expect(
      "\(DispatchError.blocked(interceptor: "Gate", reason: "not now"))"
        == "The interceptor Gate blocked the action: not now.")
  }

  /// A replacement of another action type is routed by its own type, and the report names it.
  @Test(arguments: Dispatcher.Mode.allCases)
  func replacementRunsInsteadAndIsReported(mode: Dispatcher.Mode) async throws {
    let (dispatcher, counter, text) = try makeDispatcher()
    dispatcher.register(
      interceptor: ClosureInterceptor { action, _ in
        guard case CounterAction.increase(let amount) = action else { return .proceed }
        return .replace(with: TextAction.append("\(amount)"))
      })

    let report = await dispatcher.dispatchReporting(action: CounterAction.increase(7), mode: mode)

    #expect(report.result.isSuccess)
    #expect(report.actions.map { "\($0)" } == ["append(\"7\")"])
    #expect(counter.model.count == 0)
    #expect(text.model.value == "7")
  }

  /// Interceptors run in registration order, each seeing what the one before passed on.
  @Test func interceptorsRunInOrderOnWhatTheOnesBeforePassedOn() async throws {
    let (dispatcher, counter, _) = try makeDispatcher()
    let seen = Locked<[String]>([])
    dispatcher.register(
      interceptor: ClosureInterceptor { action, _ in
        seen.withLock { $0.append("first \(action)") }
        return .replace(with: CounterAction.increase(2))
      })
    dispatcher.register(
      interceptor: ClosureInterceptor { action, _ in
        seen.withLock { $0.append("second \(action)") }
        return .proceed
      })

    try await dispatcher.dispatch(action: CounterAction.increase(1), mode: .sync)

    #expect(seen.withLock { $0 } == ["first increase(1)", "second increase(2)"])
    #expect(counter.model.count == 2)
  }

  /// A decision made later, on another thread, lets the action on; in a lane, the dispatches after it wait for it,
  /// so that their order is kept.
  @Test(arguments: Dispatcher.Mode.allCases)
  func decisionMadeLaterOnAnotherThreadPassesTheActionOn(mode: Dispatcher.Mode) async throws {
    let (dispatcher, counter, _) = try makeDispatcher()
    let pending = PendingDecisions()
    dispatcher.register(
      interceptor: ClosureInterceptor { action, _ in
        guard case CounterAction.increase(1) = action else { return .proceed }
        return .later { decision in pending.add(decision) }
      })
    let completions = Collector<String>()

    dispatcher.dispatch(action: CounterAction.increase(1), mode: mode == .sync ? .async : mode) { result in
      completions.append("checked \(result.isSuccess) count \(counter.model.count)")
    }
    let decision = await pending.next()
    if mode == .serial || mode == .mainThread {
      // Dispatched after the one waiting for its decision: it must not overtake it.
      dispatcher.dispatch(action: CounterAction.increase(10), mode: mode) { result in
        completions.append("next \(result.isSuccess) count \(counter.model.count)")
      }
    }
    DispatchQueue.global().async { decision(.proceed) }

    let expected =
      mode == .serial || mode == .mainThread
      ? ["checked true count 1", "next true count 11"] : ["checked true count 1"]
    #expect(await completions.wait(for: expected.count) == expected)
  }

  /// A `.sync` dispatch waits for a decision made later on another thread.
  @Test func synchronousDispatchWaitsForADecisionMadeLater() async throws {
    let (dispatcher, counter, _) = try makeDispatcher()
    dispatcher.register(
      interceptor: ClosureInterceptor { _, _ in
        .later { decision in DispatchQueue.global().async { decision(.replace(with: CounterAction.increase(5))) } }
      })
    let report = Locked<DispatchReport?>(nil)
    await onThreads(1) { _ in
      dispatcher.dispatchReporting(action: CounterAction.increase(1), mode: .sync) { value in
        report.withLock { $0 = value }
      }
    }
    #expect(report.withLock { $0?.result.isSuccess } == true)
    #expect(counter.model.count == 5)
  }

  /// A decision released without being made blocks the action, with a reason that says so, in every mode.
  @Test(arguments: Dispatcher.Mode.allCases)
  func decisionReleasedWithoutBeingMadeBlocks(mode: Dispatcher.Mode) async throws {
    let (dispatcher, counter, _) = try makeDispatcher()
    dispatcher.register(interceptor: ClosureInterceptor { _, _ in .later { _ in } })

    let result = await dispatcher.dispatchReporting(action: CounterAction.increase(1), mode: mode).result

    guard case .failure(.blocked(_, let reason)) = result else {
      Issue.record("expected a blocked dispatch, got \(result)")
      return
    }
    #expect(reason?.contains("released its decision") == true)
    #expect(counter.model.count == 0)
  }

  /// An interceptor may dispatch, `.sync` included, in every mode: it runs under no lock and not as an operation.
  @Test(arguments: Dispatcher.Mode.allCases)
  func interceptorMayDispatch(mode: Dispatcher.Mode) async throws {
    let (dispatcher, counter, text) = try makeDispatcher()
    dispatcher.register(
      interceptor: ClosureInterceptor { action, dispatcher in
        if action is CounterAction { try? dispatcher.dispatchSync(action: TextAction.append("seen")) }
        return .proceed
      })

    try await dispatcher.dispatch(action: CounterAction.increase(1), mode: mode)

    #expect(counter.model.count == 1)
    #expect(text.model.value == "seen")
  }

  /// Sequences go through the interceptors too, and a removed interceptor no longer runs.
  @Test func sequencesAreInterceptedAndRemovedInterceptorsNoLongerRun() async throws {
    let (dispatcher, counter, _) = try makeDispatcher()
    let interceptor = ClosureInterceptor { action, _ in
      guard case CounterAction.increase(let amount) = action else { return .proceed }
      return .replace(with: CounterAction.increase(amount * 10))
    }
    dispatcher.register(interceptor: interceptor)

    try await dispatcher.dispatch(actions: [CounterAction.increase(1), CounterAction.increase(2)], mode: .sync)
    #expect(counter.model.count == 30)

    dispatcher.unregister(interceptor: interceptor)
    let report = await dispatcher.dispatchReporting(action: CounterAction.increase(1), mode: .sync)
    #expect(report.actions.map { "\($0)" } == ["increase(1)"])
    #expect(counter.model.count == 31)
  }
}
