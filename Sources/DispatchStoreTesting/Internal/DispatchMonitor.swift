import Dispatch
import DispatchStore

/// What the test dispatcher watches: the actions dispatched by the app's code while a test runs (held until the
/// test receives them, when exhaustive), and the transactions running.
///
/// An interceptor, to hold follow-up actions before any store sees them, and a middleware, to know which
/// transactions run.
///
/// A follow-up held longer than `holdLimit` is blocked, so that code awaiting it (a test awaiting a dispatch it made
/// on the test dispatcher itself) ends with an error that names it; the test's `finish` reports it too.
final class DispatchMonitor: Interceptor, Middleware {
  struct Held: Sendable {
    let action: any ActionType
    let decision: InterceptionDecision
  }

  struct Running: Sendable {
    let id: TransactionID
    let storeIdentifier: String
    let action: any ActionType
  }

  struct State {
    /// Whether follow-ups are held until received.
    var holding: Bool
    /// Actions the test itself dispatches next: let through.
    var passing = 0
    var held: [Held] = []
    /// Follow-ups blocked after being held longer than the limit, for `finish` to report.
    var expired: [any ActionType] = []
    /// The test's own dispatches that finished, until the test takes them.
    var finishedDispatches: Set<TransactionID> = []
    var running: [TransactionID: Running] = [:]
    /// Transactions started since the last follow-up was released.
    var startedSinceRelease = 0
    /// The actions of finished transactions not yet received, when follow-ups are not held.
    var finished: [any ActionType] = []
    /// Woken when a follow-up is held or a transaction ends.
    var waiters: [CheckedContinuation<Bool, Never>] = []
  }

  let state: LockedValue<State>
  let holdLimit: Duration

  init(holding: Bool, holdLimit: Duration) {
    state = LockedValue(State(holding: holding))
    self.holdLimit = holdLimit
  }

  func intercept(_ action: any ActionType, dispatcher: Dispatcher) -> Interception {
    let hold = state.withLock { state -> Bool in
      if state.passing > 0 {
        state.passing -= 1
        return false
      }
      return state.holding
    }
    guard hold else { return .proceed }
    return .later { [self] decision in
      let waiters = state.withLock { state in
        state.held.append(Held(action: action, decision: decision))
        return state.takeWaiters()
      }
      for waiter in waiters { waiter.resume(returning: false) }
      // A time limit, on the system's clock: nothing else ends a wait for a follow-up the test never receives.
      let (seconds, attoseconds) = holdLimit.components
      let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
      DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
        expire(decision, of: action)
      }
    }
  }

  /// Blocks `decision` if its follow-up is still held.
  private func expire(_ decision: InterceptionDecision, of action: any ActionType) {
    let (expired, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Bool, Never>]) in
      guard let index = state.held.firstIndex(where: { $0.decision === decision }) else { return (false, []) }
      state.held.remove(at: index)
      state.expired.append(action)
      return (true, state.takeWaiters())
    }
    guard expired else { return }
    decision.block(
      reason: "\(action) was held as a follow-up for longer than the test dispatcher's time limit (\(holdLimit)) "
        + "and never received: receive follow-ups with `receive`, and send the test's own actions with `send`")
    for waiter in waiters { waiter.resume(returning: false) }
  }

  func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    state.withLock { state in
      state.running[transaction.id] = Running(
        id: transaction.id, storeIdentifier: transaction.storeIdentifier, action: action)
      state.startedSinceRelease += 1
    }
  }

  func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    let waiters = state.withLock { state in
      state.running.removeValue(forKey: transaction.id)
      if !state.holding { state.finished.append(action) }
      return state.takeWaiters()
    }
    for waiter in waiters { waiter.resume(returning: false) }
  }

  /// The test's own dispatch `id` finished.
  func dispatchFinished(_ id: TransactionID) {
    let waiters = state.withLock { state in
      state.finishedDispatches.insert(id)
      return state.takeWaiters()
    }
    for waiter in waiters { waiter.resume(returning: false) }
  }

  /// Wakes the waiters, so that they check their conditions again: a dispatch finished.
  func wake() {
    let waiters = state.withLock { $0.takeWaiters() }
    for waiter in waiters { waiter.resume(returning: false) }
  }

  /// Suspends until `condition` holds or `timeout` passed; returns whether it holds.
  ///
  /// For what no event of the monitor announces: a timer task wakes the waiters when the time is up.
  func wait(until condition: @escaping @Sendable (State) -> Bool, timeout: Duration) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    let timer = Task { [self] in
      try? await Task.sleep(until: deadline)
      let waiters = state.withLock { $0.takeWaiters() }
      for waiter in waiters { waiter.resume(returning: false) }
    }
    defer { timer.cancel() }
    await wait { state in condition(state) || ContinuousClock.now >= deadline }
    return state.withLock { condition($0) }
  }

  /// Suspends until `condition` holds, checked now and after each held action or finished transaction.
  func wait(until condition: @escaping @Sendable (State) -> Bool) async {
    while true {
      let satisfied = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        let now = state.withLock { state -> Bool in
          if condition(state) { return true }
          state.waiters.append(continuation)
          return false
        }
        if now { continuation.resume(returning: true) }
      }
      if satisfied { return }
    }
  }
}

extension DispatchMonitor.State {
  mutating func takeWaiters() -> [CheckedContinuation<Bool, Never>] {
    defer { waiters = [] }
    return waiters
  }
}
