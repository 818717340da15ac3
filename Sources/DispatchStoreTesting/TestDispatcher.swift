import DispatchStore

/// A dispatcher for tests: sends actions one at a time, and fails the test unless each store's model changed exactly
/// as stated, every follow-up action was received, and nothing is left running at the end.
///
/// ```swift
/// @Test func increasing() async throws {
///   let test = TestDispatcher()
///   let counter = try test.register(Store(identifier: "counter", model: Counter()) { ... })
///   let log = try test.register(Store(identifier: "log", model: Log()) { ... })
///   await test.send(CounterAction.increase(by: 1), .store(counter) { $0.count = 1 })
///   await test.receive(LogAction.record("increase"), .store(log) { $0.lines = ["increase"] })
///   await test.finish()
/// }
/// ```
///
/// Exhaustive by default: a store that changed without an expectation is a failure, with the
/// fields that changed; follow-up actions the app's code dispatches are held, before any store sees them, until the
/// test receives them (``receive(_:_:timeout:fileID:filePath:line:column:)``), so each one's change is asserted on its
/// own. `TestDispatcher(exhaustive: false)` lets follow-ups run at once and checks only the stores the test names: for
/// integration tests, and for operations that await their follow-ups' completion (which a held follow-up would never
/// give).
///
/// Time-based work (throttle, debounce, delayed dispatches) counts on the dispatcher's ``TestClock``: `advance(by:)`
/// moves it, so tests never sleep.
///
/// Failures are reported to Swift Testing inside its tests, and to XCTest otherwise.
///
/// Nothing the kit waits for can hang a test: each `send`, `receive`, `advance` and `finish` waits at most
/// the time limit, then fails naming the stores and actions still running, and returns. A dispatch the test makes on
/// ``dispatcher`` itself is held as a follow-up in an exhaustive test; one held longer than the time limit fails with
/// `DispatchError.blocked(interceptor:reason:)`, whose reason names it, so that a test awaiting it
/// ends.
///
/// > Important: Call `send`, `receive`, `advance` and `finish` from one task, one at a time.
public final class TestDispatcher: Sendable {
  /// The dispatcher the stores are registered with; use it to build what the tested code needs.
  public let dispatcher: Dispatcher
  /// The time the dispatcher's throttled and debounced dispatches count by.
  let clock: TestClock
  /// Whether every change and every follow-up must be asserted.
  let exhaustive: Bool
  /// How long each step of the test waits for what it started, and a follow-up is held, before the test fails.
  let timeLimit: Duration

  private let monitor: DispatchMonitor
  /// The registered stores and their models as last asserted.
  ///
  private let stores = LockedValue<[String: TrackedStore]>([:])

  private struct TrackedStore: Sendable {
    let read: @Sendable () -> any ModelType
    let equal: @Sendable (any ModelType, any ModelType) -> Bool
    var asserted: any ModelType
  }

  /// Creates a test dispatcher, with a ``TestClock`` and the library's run-loop thread as its main queue.
  /// - Parameters:
  ///   - exhaustive: `true` (the default) if every store's change and every follow-up action must be asserted;
  ///     `false` to check only the stores a test names and let follow-up actions run at once.
  ///   - timeLimit: How long each step waits for what it started, and a follow-up is held, before the test fails
  ///     (on the system's clock, not on the test clock). Shorter than Swift Testing's time limits, so that the kit,
  ///     which names what still runs, reports a hang first.
  public convenience init(exhaustive: Bool = true, timeLimit: Duration = .seconds(30)) {
    self.init(exhaustive: exhaustive, timeLimit: timeLimit, holdLimit: timeLimit)
  }

  /// Creates a test dispatcher whose follow-ups are held at most `holdLimit`, and each step waits `timeLimit`: for
  /// the kit's own tests of each limit.
  init(exhaustive: Bool, timeLimit: Duration, holdLimit: Duration) {
    self.exhaustive = exhaustive
    self.timeLimit = timeLimit
    clock = TestClock()
    // The follow-ups the kit blocks (at the end of the test, or held past the limit) are reported by `finish`.
    let monitorName = String(reflecting: DispatchMonitor.self)
    dispatcher = Dispatcher(
      mainQueue: .libraryThread, clock: clock,
      onUnheardFailure: { action, error in
        if case .blocked(let interceptor, _) = error, interceptor == monitorName { return }
        Dispatcher.writeUnheard(error, of: action)
      })
    monitor = DispatchMonitor(holding: exhaustive, holdLimit: holdLimit)
    dispatcher.register(interceptor: monitor)
    dispatcher.register(middleware: monitor)
    // A dispatch's handle ends after its last transaction: the waits that count unfinished dispatches hear it.
    dispatcher.onDispatchFinished { [monitor] in monitor.wake() }
  }

  /// Registers `store` and takes its model as the one the first expectation starts from.
  /// - Parameter store: A store whose model can be compared.
  /// - Returns: `store`, for chaining.
  /// - Throws: `DispatchError.duplicateStoreIdentifier(_:)` if its identifier is taken.
  @discardableResult
  public func register<Model: ModelType & Equatable, Action>(
    _ store: Store<Model, Action>
  ) throws(DispatchError) -> Store<Model, Action> {
    try dispatcher.register(store: store)
    let tracked = TrackedStore(
      read: { store.model }, equal: { ($0 as? Model) == ($1 as? Model) }, asserted: store.model)
    stores.withLock { $0[store.identifier] = tracked }
    return store
  }

  /// Dispatches `action` (`.async`), waits until every store finished it, and checks the stores' models against
  /// `expectations`.
  ///
  /// The test fails if the dispatch fails, or has not finished within the time limit (it is then cancelled).
  /// - Parameters:
  ///   - action: The action a user or the app would dispatch.
  ///   - expectations: How each store's model must change; in exhaustive tests, every store that changed.
  ///   - fileID: The file a failure is reported in: the caller's, by default.
  ///   - filePath: The path of that file: the caller's, by default.
  ///   - line: The line a failure is reported at: the caller's, by default.
  ///   - column: The column a failure is reported at: the caller's, by default.
  public func send<Action: ActionType>(
    _ action: Action, _ expectations: StoreExpectation..., fileID: String = #fileID,
    filePath: StaticString = #filePath, line: UInt = #line, column: UInt = #column
  ) async {
    let site = CallSite(fileID: fileID, filePath: filePath, line: line, column: column)
    switch await dispatchAndWait(action, at: site) {
    case .success: break
    case .failure(let error): TestReporter.fail("Sending \(action) failed: \(error)", at: site)
    case nil: return  // Past the time limit: reported, with what still runs.
    }
    check(expectations, after: "sending \(action)", at: site)
  }

  /// Dispatches `action` (`.async`), waits until every store finished it, and checks that it failed with
  /// `expectedError` and that no store changed.
  ///
  /// The dispatch's error matches if every store that failed (`DispatchError.operationsFailed(_:)`)
  /// failed with `expectedError`, apart from stores that did not start because a store they wait for failed
  /// (`DispatchError.waitTargetFailed(storeIdentifier:waitsFor:)`).
  /// - Parameters:
  ///   - action: The action a user or the app would dispatch.
  ///   - expectedError: The error a store's reducer or operation must fail with.
  ///   - fileID: The file a failure is reported in: the caller's, by default.
  ///   - filePath: The path of that file: the caller's, by default.
  ///   - line: The line a failure is reported at: the caller's, by default.
  ///   - column: The column a failure is reported at: the caller's, by default.
  public func send<Action: ActionType, Failure: Error & Equatable>(
    _ action: Action, fails expectedError: Failure, fileID: String = #fileID,
    filePath: StaticString = #filePath, line: UInt = #line, column: UInt = #column
  ) async {
    let site = CallSite(fileID: fileID, filePath: filePath, line: line, column: column)
    switch await dispatchAndWait(action, at: site) {
    case .success:
      TestReporter.fail("Sending \(action) succeeded; expected it to fail with \(expectedError).", at: site)
    case .failure(let error):
      if !Self.error(error, matches: expectedError) {
        TestReporter.fail("Sending \(action) failed with \(error); expected \(expectedError).", at: site)
      }
    case nil:
      return  // Past the time limit: reported, with what still runs.
    }
    check([], after: "sending \(action) (expected to fail)", at: site, everyStore: true)
  }

  /// Whether a store failed with `expected` in `error`, and every other store that failed did not start because a
  /// store it waits for failed.
  private static func error<Failure: Error & Equatable>(_ error: DispatchError, matches expected: Failure) -> Bool {
    guard case .operationsFailed(let failures) = error else { return false }
    let causes = failures.filter { failure in
      guard case .waitTargetFailed = failure.error as? DispatchError else { return true }
      return false
    }
    return !causes.isEmpty && causes.allSatisfy { ($0.error as? Failure) == expected }
  }

  /// Dispatches `action` as the test's own, and waits until it finished, at most the time limit.
  ///
  /// Returns its result, or `nil` once the time limit was reported and the dispatch cancelled.
  private func dispatchAndWait<Action: ActionType>(
    _ action: Action, at site: CallSite
  ) async -> Result<Void, DispatchError>? {
    let unreceived = monitor.state.withLock { $0.held.map(\.action) }
    if exhaustive, !unreceived.isEmpty {
      TestReporter.fail(
        "Sending \(action) while follow-up actions were not received: \(describe(unreceived)). Receive them first.",
        at: site)
    }
    // `.async`: `.sync` would block a cooperative-pool thread until every store finished.
    let handle = dispatcher.prepare(action: action, mode: .async)
    let id = handle.id
    // Known to the monitor before it can be intercepted: the test's own, not a follow-up.
    monitor.state.withLock { _ = $0.own.insert(id) }
    // Told outside the handle's lock, so that the monitor's lock is never taken inside it.
    let token = handle.observe { [monitor] state in
      if state.isFinished { monitor.dispatchFinished(id) }
    }
    defer {
      token.cancel()
      // Cancelled or blocked before the monitor saw it: its id would otherwise stay.
      monitor.state.withLock { _ = $0.own.remove(id) }
    }
    handle.start()
    let finished = await within(until: { $0.finishedDispatches.contains(id) }, "Sending \(action)", at: site)
    monitor.state.withLock { _ = $0.finishedDispatches.remove(id) }
    guard finished else {
      handle.cancel()
      return nil
    }
    return handle.state.result ?? .failure(.cancelled)
  }

  /// Waits until `condition` holds, at most the time limit; past it, fails the test naming what still runs.
  ///
  /// - Returns: Whether `condition` held in time.
  private func within(
    until condition: @escaping @Sendable (DispatchMonitor.State) -> Bool, _ step: String, at site: CallSite
  ) async -> Bool {
    if await monitor.wait(until: condition, timeout: timeLimit) { return true }
    let (running, held) = monitor.state.withLock { state in
      (state.running.values.sorted { $0.id.rawValue < $1.id.rawValue }, state.held.map(\.action))
    }
    var what = running.map { "store \"\($0.storeIdentifier)\" handling \($0.action) is still running" }
    if !held.isEmpty { what.append("follow-up actions are held until received: \(describe(held))") }
    if what.isEmpty { what.append("dispatches are still waiting to start") }
    TestReporter.fail(
      "\(step) did not finish within \(timeLimit), the test dispatcher's time limit: \(what.joined(separator: "; ")).",
      at: site)
    return false
  }

  /// Takes the next follow-up action the app's code dispatched, checks it is `action`, lets it run, and checks the
  /// stores' models against `expectations`.
  ///
  /// In a test that is not exhaustive, follow-ups have already run: this waits for running transactions to finish, then
  /// checks the stores `expectations` name.
  /// - Parameters:
  ///   - action: The follow-up expected next.
  ///   - expectations: How each store's model must change; in exhaustive tests, every store that changed.
  ///   - timeout: In a test that is not exhaustive, how long to wait for the follow-up to finish before failing;
  ///     the time limit if `nil`. (Exhaustive tests know when nothing more can come, and wait for time only as long
  ///     as the time limit, for operations that do not finish.)
  ///   - fileID: The file a failure is reported in: the caller's, by default.
  ///   - filePath: The path of that file: the caller's, by default.
  ///   - line: The line a failure is reported at: the caller's, by default.
  ///   - column: The column a failure is reported at: the caller's, by default.
  public func receive<Action: ActionType & Equatable>(
    _ action: Action, _ expectations: StoreExpectation..., timeout: Duration? = nil, fileID: String = #fileID,
    filePath: StaticString = #filePath, line: UInt = #line, column: UInt = #column
  ) async {
    let site = CallSite(fileID: fileID, filePath: filePath, line: line, column: column)
    guard exhaustive else {
      // Follow-ups ran at once: wait for one equal to `action` to finish. Nothing announces that one never will, so
      // this waits a bounded time, as a test does for an asynchronous effect. The actions are compared after the
      // monitor's lock, each time more have finished: `==` is the app's code.
      let timeout = timeout ?? timeLimit
      let deadline = ContinuousClock.now + timeout
      var compared = 0
      while true {
        let remaining = deadline - ContinuousClock.now
        let more = await monitor.wait(
          until: { [compared] state in state.running.isEmpty && state.finished.count > compared },
          timeout: max(remaining, .zero))
        let finished = monitor.state.withLock { $0.finished }
        if let index = finished.firstIndex(where: { ($0 as? Action) == action }) {
          monitor.state.withLock { _ = $0.finished.remove(at: index) }  // Only `receive` removes: still there.
          check(expectations, after: "receiving \(action)", at: site)
          return
        }
        guard more else {
          TestReporter.fail("Expected to receive \(action) within \(timeout), but it did not finish.", at: site)
          return
        }
        compared = finished.count
      }
    }
    // A follow-up may come from an operation still running, or from a dispatch not intercepted yet (a debounced
    // one the clock just started): wait for one, or for nothing left that could send one.
    guard await within(until: settled, "Receiving \(action)", at: site) else { return }
    let next = monitor.state.withLock { state -> (held: DispatchMonitor.Held, number: UInt64)? in
      guard !state.held.isEmpty else { return nil }
      state.lastReleased &+= 1
      return (state.held.removeFirst(), state.lastReleased)
    }
    guard let (next, number) = next else {
      TestReporter.fail("Expected to receive \(action), but no follow-up action was dispatched.", at: site)
      return
    }
    if (next.action as? Action) != action {
      TestReporter.fail("Received \(next.action), expected \(action).", at: site)
    }
    // Waits for the follow-up itself, whichever stores it reaches, and for the transactions it started.
    next.dispatch.whenFinished { [monitor] _ in monitor.followUpFinished(number) }
    next.decision.decide(.proceed)
    let finished = await within(
      until: { $0.finishedFollowUps.contains(number) && $0.running.isEmpty }, "Receiving \(next.action)", at: site)
    monitor.state.withLock { _ = $0.finishedFollowUps.remove(number) }
    guard finished else { return }
    check(expectations, after: "receiving \(next.action)", at: site)
  }

  /// Moves the test clock forward, running the throttled, debounced and delayed work that falls due, then waits for the
  /// transactions it started and checks the stores' models against `expectations`.
  ///
  /// A debounced dispatch that runs is a follow-up like any other: receive it.
  /// - Parameters:
  ///   - duration: How far to move the clock.
  ///   - expectations: How each store's model must change meanwhile.
  ///   - fileID: The file a failure is reported in: the caller's, by default.
  ///   - filePath: The path of that file: the caller's, by default.
  ///   - line: The line a failure is reported at: the caller's, by default.
  ///   - column: The column a failure is reported at: the caller's, by default.
  public func advance(
    by duration: Duration, _ expectations: StoreExpectation..., fileID: String = #fileID,
    filePath: StaticString = #filePath, line: UInt = #line, column: UInt = #column
  ) async {
    let site = CallSite(fileID: fileID, filePath: filePath, line: line, column: column)
    clock.advance(by: duration)
    let step = "Advancing the clock by \(duration)"
    if exhaustive {
      guard await within(until: settled, step, at: site) else { return }
    } else {
      guard await within(until: { $0.running.isEmpty }, step, at: site) else { return }
    }
    check(expectations, after: "advancing the clock by \(duration)", at: site)
  }

  /// Ends the test: fails for every follow-up not received, operation still running, timer still pending, and store
  /// changed since its last assertion.
  ///
  /// Waits until what the last step started has settled, at most the time limit.
  public func finish(
    fileID: String = #fileID, filePath: StaticString = #filePath, line: UInt = #line, column: UInt = #column
  ) async {
    let site = CallSite(fileID: fileID, filePath: filePath, line: line, column: column)
    // Follow-ups of the last step may still be on their way to the monitor; an operation that never finishes is
    // reported below, after a bounded wait, and so is a dispatch that neither runs nor waits for the clock.
    let settledInTime = await monitor.wait(
      until: { [settled] state in settled(state) && state.running.isEmpty }, timeout: timeLimit)
    let (held, expired, running) = monitor.state.withLock { state in
      defer {
        state.held = []
        state.expired = []
      }
      return (state.held, state.expired, Array(state.running.values))
    }
    if !held.isEmpty {
      TestReporter.fail(
        "Follow-up actions were dispatched and not received: \(describe(held.map(\.action))).", at: site)
    }
    if !expired.isEmpty {
      TestReporter.fail(
        "Follow-up actions were held longer than the time limit (\(timeLimit)) and failed: \(describe(expired)). "
          + "Receive follow-ups with `receive`; send the test's own actions with `send`.", at: site)
    }
    for transaction in running.sorted(by: { $0.id.rawValue < $1.id.rawValue }) {
      TestReporter.fail(
        "An operation is still running at the end of the test: store \"\(transaction.storeIdentifier)\" handling "
          + "\(transaction.action).", at: site)
    }
    if clock.pendingCount > 0 {
      // The dispatches that wait name the timers: a debounced or delayed dispatch, to the stores of its action.
      let waiting = dispatcher.pendingDispatches.map { handle in
        let stores = dispatcher.storeIdentifiers(handling: handle.action).map { "\"\($0)\"" }
        return "\(handle.action) to \(stores.isEmpty ? "no store" : "store " + stores.joined(separator: ", "))"
      }
      TestReporter.fail(
        "\(clock.pendingCount) timer(s) still pending at the end of the test (throttled, debounced or delayed work"
          + (waiting.isEmpty ? "" : ": " + waiting.sorted().joined(separator: "; "))
          + "): advance the clock past them.",
        at: site)
    }
    if !settledInTime, running.isEmpty {
      TestReporter.fail(
        "Dispatches were still unfinished at the end of the test, \(timeLimit) after its last step: neither running, "
          + "held nor waiting for the test clock (queued behind work that does not end, or a handle never started).",
        at: site)
    }
    if exhaustive { check([], after: "the last assertion", at: site) }
    // The held follow-ups end now, with the test, rather than when their time limit would have.
    for follow in held {
      follow.decision.decide(
        .block(reason: "\(follow.action) was held as a follow-up and the test ended before receiving it"))
    }
  }

  /// Whether nothing runs that could still dispatch or change a store, apart from held follow-ups and work waiting
  /// for the clock.
  private var settled: @Sendable (DispatchMonitor.State) -> Bool {
    let dispatcher = dispatcher
    let clock = clock
    let holding = exhaustive
    // Dispatches waiting for the test clock (debounced, delayed) cannot come before it is advanced: one timer each.
    return { state in
      (holding && !state.held.isEmpty)
        || (state.running.isEmpty && dispatcher.unfinishedDispatchCount <= state.held.count + clock.pendingCount)
    }
  }

  /// Compares every registered store with its last asserted model, changed by its expectation if it has one.
  ///
  /// With `everyStore`, a store that changed without an expectation fails also in a test that is not exhaustive.
  private func check(
    _ expectations: [StoreExpectation], after event: String, at site: CallSite, everyStore: Bool = false
  ) {
    let tracked = stores.withLock { $0 }
    for expectation in expectations where tracked[expectation.storeIdentifier] == nil {
      TestReporter.fail(
        "An expectation names store \"\(expectation.storeIdentifier)\", which is not registered with this test "
          + "dispatcher.", at: site)
    }
    var asserted: [String: any ModelType] = [:]
    for (identifier, store) in tracked.sorted(by: { $0.key < $1.key }) {
      let actual = store.read()
      asserted[identifier] = actual
      let expectation = expectations.last { $0.storeIdentifier == identifier }
      guard let expectation else {
        if exhaustive || everyStore, !store.equal(store.asserted, actual) {
          let diff = ValueDiff.lines(expected: store.asserted, actual: actual)
          TestReporter.fail(
            "Store \"\(identifier)\" changed after \(event) without an expectation:\n" + indent(diff), at: site)
        }
        continue
      }
      guard let expected = expectation.apply(store.asserted) else { continue }
      if !store.equal(expected, actual) {
        let diff = ValueDiff.lines(expected: expected, actual: actual)
        TestReporter.fail(
          "Store \"\(identifier)\" after \(event) differs from the expectation:\n" + indent(diff), at: site)
      }
    }
    stores.withLock { stores in
      for (identifier, model) in asserted { stores[identifier]?.asserted = model }
    }
  }

  private func indent(_ lines: [String]) -> String {
    lines.map { "  " + $0 }.joined(separator: "\n")
  }

  private func describe(_ actions: [any ActionType]) -> String {
    actions.map { "\($0)" }.joined(separator: ", ")
  }
}
