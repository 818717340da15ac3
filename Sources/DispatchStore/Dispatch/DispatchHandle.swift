import Dispatch
import Synchronization

/// A dispatch you can hold: its identifier and action, its ``DispatchState`` at any time, and ways to observe it,
/// await it and cancel it.
///
/// ```swift
/// let search = dispatcher.start(action: SearchAction.query("swift"), mode: .serial)
/// let token = search.observe { state in print("search is \(state)") }
/// search.cancel()                      // a newer query came: stop this one
/// try await search.value               // throws DispatchError.cancelled
/// ```
///
/// Made by ``Dispatcher/start(action:to:mode:options:)`` and ``Dispatcher/prepare(action:to:mode:options:)``.
///
/// > Important: Safe to use from any thread. Observers are called after the handle's lock was released, one state
/// > at a time and in order, on the thread that changed the state (or the one registering, for the current state).
public final class DispatchHandle: Sendable, CustomStringConvertible {
  /// The dispatch's identifier.
  public let id: TransactionID
  /// The dispatched action, as it was given to ``Dispatcher/start(action:to:mode:options:)``.
  package let action: any ActionType
  /// The mode the dispatch runs in.
  let mode: Dispatcher.Mode

  /// Where the dispatch goes, and how it is admitted: kept to route it when it is started.
  let storeIdentifier: String?
  /// Its options; `nil` for the default ones, which admit the dispatch at once.
  ///
  /// Boxed: a handle without options then copies and checks one pointer, not the options' optional value.
  let options: Options?

  /// The options of a dispatch that is admitted before it is routed (``DispatchOptions``).
  final class Options: Sendable {
    let value: DispatchOptions
    init(_ value: DispatchOptions) { self.value = value }
  }

  /// The cancellation id it was made with, if any.
  var cancellationID: CancellationID? { options?.value.cancellationID }
  /// Whether the dispatch holds its stores and puts them back if it fails (``DispatchOptions/allOrNothing``).
  let allOrNothing: Bool
  /// For an all-or-nothing dispatch made in an operation's task: that operation and those enclosing it, which it
  /// does not wait for (``Reservation/insideOperations``); otherwise `nil`.
  let insideOperations: [any RunningOperation]?
  /// The dispatcher that made it, which routes it and forgets it when it finished.
  ///
  /// Weak, since a handle may outlive it. Before Swift 6.2 a `let` cannot be `weak`: a `nonisolated(unsafe)` `var`
  /// then, assigned once, in `init`, and only read after.
  #if compiler(>=6.2)
    private weak let dispatcher: Dispatcher?
  #else
    nonisolated(unsafe) private weak var dispatcher: Dispatcher?
  #endif

  private let machine = LockedValue(HandleStateMachine())
  /// Whether the dispatch was cancelled, readable without the lock: a run loads it before starting each store.
  private let cancelledFlag = Atomic<Bool>(false)
  /// Whether someone reads the dispatch's outcome (its state, value, observers, a dispatch depending on it): if not,
  /// a failure is reported to the dispatcher's `onUnheardFailure` when the handle is released.
  private let isHeard = Atomic<Bool>(false)
  /// Whether the dispatch finished with a failure (not a cancellation): set before its state says so, read by
  /// `deinit` without the lock.
  private let failed = Atomic<Bool>(false)
  /// Made inside a dispatcher's `onUnheardFailure`: an unheard failure goes to standard error, not to the handler.
  private let writesUnheard: Bool
  /// The dispatcher's count of dispatches in flight, which counts this one from its start to its end (``start()``);
  /// held strongly, so that neither end loads the weak `dispatcher`.
  private let inFlight: InFlightCount?
  init(
    action: any ActionType, storeIdentifier: String? = nil, mode: Dispatcher.Mode,
    options: DispatchOptions? = nil, allOrNothing: Bool = false, dispatcher: Dispatcher? = nil,
    writesUnheard: Bool = false
  ) {
    self.id = TransactionID.next()
    self.allOrNothing = allOrNothing
    self.insideOperations = allOrNothing ? OperationTaskScope.current?.operations : nil
    self.action = action
    self.storeIdentifier = storeIdentifier
    self.mode = mode
    self.options = options.map(Options.init)
    self.dispatcher = dispatcher
    self.inFlight = dispatcher?.inFlight
    self.writesUnheard = writesUnheard
  }

  /// The dispatch's state now.
  public var state: DispatchState {
    isHeard.store(true, ordering: .relaxed)
    return currentState
  }

  /// The state, read by the library: it does not count as hearing the outcome.
  var currentState: DispatchState {
    machine.withLock { $0.state }
  }

  deinit {
    // Released with a failure nobody read: a fire-and-forget `start`, such as an operation's follow-up.
    guard failed.load(ordering: .relaxed), !isHeard.load(ordering: .relaxed),
      case .failure(let error)? = machine.withLock({ $0.state }).result, Dispatcher.isReported(error)
    else { return }
    let action = action
    guard !writesUnheard, let dispatcher else { return Dispatcher.writeUnheard(error, of: action) }
    // Not here: the last release may come from inside a lock of the library. Counted in flight until reported, so
    // that `drain()` waits for the handler (and what it dispatches).
    let inFlight = inFlight
    inFlight?.begin()
    DispatchQueue.global().async {
      dispatcher.reportUnheard(error, of: action)
      inFlight?.end()
    }
  }

  /// Whether the dispatch was cancelled.
  var isCancelled: Bool {
    cancelledFlag.load(ordering: .acquiring)
  }

  /// Returns once the dispatch finished; throws the error it failed with.
  ///
  /// Awaiting does not cancel the dispatch when the awaiting task is cancelled (as with `Task.value`): call
  /// ``cancel()`` for that.
  /// - Throws: The ``DispatchError`` that made the dispatch fail; ``DispatchError/cancelled`` if it was cancelled.
  public var value: Void {
    get async throws(DispatchError) {
      try await result.get()
    }
  }

  /// The dispatch's result, once it finished.
  var result: Result<Void, DispatchError> {
    get async {
      isHeard.store(true, ordering: .relaxed)
      return await withCheckedContinuation { continuation in
        if let result = machine.withLock({ $0.awaited(by: continuation) }) {
          continuation.resume(returning: result)
        }
      }
    }
  }

  /// Calls `onChange` with the current state, then with every later one, until the returned token is released or
  /// cancelled.
  /// - Parameter onChange: Called once per state, in order, never while the handle's lock is held.
  /// - Returns: The token that keeps the observation alive.
  public func observe(_ onChange: @escaping @Sendable (DispatchState) -> Void) -> ObservationToken {
    isHeard.store(true, ordering: .relaxed)
    let token = ObservationToken()
    let (id, effects) = machine.withLock { $0.observerAdded(onChange) }
    token.setCancellation { [weak self] in
      guard let self else { return }
      let removed = machine.withLock { $0.observerRemoved(id) }
      withExtendedLifetime(removed) {}  // Released after the lock.
    }
    perform(effects)
    return token
  }

  /// The actions that reached the stores, once the dispatch finished; `nil` before.
  ///
  /// The action given to ``Dispatcher/start(action:to:mode:options:)``, unless an ``Interceptor`` replaced it (its
  /// replacement), or blocked it, or the dispatch was cancelled or failed before it was routed (none).
  public var dispatchedActions: [any ActionType]? {
    machine.withLock { machine in
      guard machine.state.isFinished else { return nil }
      return machine.dispatchedActions ?? (machine.hasStarted ? [action] : [])
    }
  }

  /// Interceptors decided what the dispatch routes (``dispatchedActions``); called before it finishes.
  func interceptorsDispatched(_ actions: [any ActionType]) {
    machine.withLock { $0.dispatchedActions = actions }
  }

  /// The current state, then every later one; the sequence ends after the final state.
  var states: AsyncStream<DispatchState> {
    AsyncStream(bufferingPolicy: .bufferingNewest(3)) { continuation in
      let token = observe { state in
        continuation.yield(state)
        if state.isFinished { continuation.finish() }
      }
      continuation.onTermination = { _ in token.cancel() }
    }
  }

  /// Cancels the dispatch: if it had not finished, it ends as ``DispatchState/cancelled`` at once.
  ///
  /// Stores that had not started do not start; running operations are told (``ActionOperation/isCancelled``,
  /// ``ActionOperation/onCancel(_:)``). Later calls, and calls after the dispatch finished, do nothing.
  public func cancel() {
    let effects = machine.withLock { machine in
      let effects = machine.cancelled()
      if effects.finished { cancelledFlag.store(true, ordering: .releasing) }
      return effects
    }
    perform(effects)
  }

  /// Makes this dispatch start only after `dependency` completed; if it fails or is cancelled, this one fails with
  /// ``DispatchError/dependencyFailed(_:)`` without running.
  ///
  /// Call it before ``start()``, on a handle made with ``Dispatcher/prepare(action:to:mode:options:)``.
  /// - Parameter dependency: A dispatch of this or another dispatcher, in any mode.
  /// - Throws: ``DispatchError/dependencyCycle(_:)`` if `dependency` is this dispatch or waits for it, directly or
  ///   through others; ``DispatchError/dependencyAfterStart(_:)`` if this dispatch was started already. Nothing is
  ///   changed then.
  public func depend(on dependency: DispatchHandle) throws(DispatchError) {
    // One graph change at a time: two threads adding the two halves of a cycle must not both find none.
    let outcome = Self.dependencyChanges.withLock { changes -> DispatchError? in
      changes += 1
      if let path = dependency.path(to: self) { return .dependencyCycle([id] + path) }
      return machine.withLock({ $0.dependencyAdded(dependency) }) ? nil : .dependencyAfterStart(id)
    }
    if let outcome { throw outcome }
  }

  /// Taken while a dependency is checked and added, before any handle's lock (never inside one).
  private static let dependencyChanges = LockedValue(0)

  /// Starts a dispatch made with ``Dispatcher/prepare(action:to:mode:options:)``, once its dependencies completed;
  /// later calls do nothing.
  ///
  /// Without dependencies it runs as ``Dispatcher/start(action:to:mode:options:)`` runs it; with some, it runs on the
  /// thread that finished the last of them. If its dispatcher is gone by then, it ends as
  /// ``DispatchState/cancelled``.
  public func start() {
    // Counted in flight under the lock, so that its end, on any thread, is counted after it.
    let submitted = machine.withLock { machine -> [DispatchHandle]? in
      let dependencies = machine.submitted()
      if dependencies != nil, machine.isInFlight { inFlight?.begin() }
      return dependencies
    }
    guard let dependencies = submitted else { return }
    // A dispatcher that is gone runs nothing: the dispatch ends as cancelled rather than waiting for ever.
    guard !dependencies.isEmpty else { return dispatcher?.submit(self) ?? cancel() }
    let countdown = DependencyCountdown(count: dependencies.count)
    // Started inside an all-or-nothing dispatch, it passes that one's stores on the thread its last dependency ends.
    let admitted = ThreadContext.admission()
    for dependency in dependencies {
      dependency.whenFinished(hearing: false) { [self] result in
        if case .failure = result { countdown.failed(dependency.id) }
        guard countdown.finishedOne() else { return }
        if let failed = countdown.firstFailure {
          finish(.failure(.dependencyFailed(failed)))
        } else {
          guard let dispatcher else { return cancel() }
          ThreadContext.withReserving(admitted) { dispatcher.submit(self) }
        }
      }
    }
  }

  /// The identifier, action and state.
  public var description: String {
    "[\(id)] \(action): \(currentState)"
  }

  // MARK: - The dispatcher's side

  /// The dispatch leaves its queue and runs; returns `false` if it was cancelled (skip it).
  func markStarted() -> Bool {
    let (run, effects) = machine.withLock { $0.started() }
    perform(effects)
    return run
  }

  /// The dispatch finished; ignored if it was cancelled before.
  func finish(_ result: Result<Void, DispatchError>) {
    if case .failure = result { failed.store(true, ordering: .relaxed) }
    perform(machine.withLock { $0.finished(result) })
  }

  /// `operation` is about to start (`starting`: ``operationStarted(_:finished:)`` follows), or is running already:
  /// tell it if the dispatch is cancelled, now or later.
  func operationRunning(_ operation: any OperationStarting, starting: Bool) {
    let running = machine.withLock { $0.operationRunning(operation, starting: starting) }
    if !running { operation.cancel() }
  }

  /// The start of `operation` returned, `finished` or not; the caller holds it until after this.
  func operationStarted(_ operation: any OperationStarting, finished: Bool) {
    machine.withLock { $0.operationStarted(operation, finished: finished) }
  }

  /// The identifiers from this dispatch to `target` through dependencies, `target`'s last; `nil` if it does not
  /// wait for `target`.
  func path(to target: DispatchHandle) -> [TransactionID]? {
    if self === target { return [id] }
    let dependencies = machine.withLock { $0.dependencies }
    for dependency in dependencies {
      if let path = dependency.path(to: target) { return [id] + path }
    }
    return nil
  }

  /// Calls `body` with the final result: at once if the dispatch finished, otherwise when it does.
  ///
  /// - Parameter hearing: Whether the caller hears the outcome (`false` for a dispatch depending on this one: a
  ///   failure of this one nobody read is still reported).
  func whenFinished(hearing: Bool = true, _ body: @escaping @Sendable (Result<Void, DispatchError>) -> Void) {
    if hearing { isHeard.store(true, ordering: .relaxed) }
    if let result = machine.withLock({ $0.dependentAdded(body) }) { body(result) }
  }

  private func perform(_ effects: HandleStateMachine.Effects) {
    for operation in effects.cancel { operation.cancel() }
    // Observers first: unless another thread is delivering, they heard the final state when `value` returns.
    if effects.deliver {
      // The observers a final state lets go of are released here, after the lock, with the tuple.
      while let (state, observers, _) = machine.withLock({ $0.nextNotification() }) {
        for observer in observers { observer(state) }
      }
    }
    if let (result, waiters) = effects.resume {
      for waiter in waiters { waiter.resume(returning: result) }
      for dependent in effects.dependents { dependent(result) }
    }
    if effects.finished { dispatcher?.handleFinished(self) }
    if effects.endsInFlight { inFlight?.end() }
  }
}

/// Counts the dependencies of a dispatch that have not finished, and remembers the first that failed.
private final class DependencyCountdown: Sendable {
  private let state: LockedValue<(remaining: Int, failure: TransactionID?)>

  init(count: Int) {
    state = LockedValue((count, nil))
  }

  func failed(_ id: TransactionID) {
    state.withLock { if $0.failure == nil { $0.failure = id } }
  }

  /// Counts one more finished; `true` for the last.
  func finishedOne() -> Bool {
    state.withLock { state in
      state.remaining -= 1
      return state.remaining == 0
    }
  }

  var firstFailure: TransactionID? { state.withLock { $0.failure } }
}
