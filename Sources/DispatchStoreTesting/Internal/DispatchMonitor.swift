import Dispatch
import DispatchStore

/// What the test dispatcher watches: the actions dispatched by the app's code while a test runs (held until the
/// test receives them, when exhaustive), and the transactions running.
///
/// An interceptor, to hold follow-up actions before any store sees them (following each dispatch, to tell the test's
/// own from follow-ups by their handles, and to know when a follow-up let through finished), and a middleware, to
/// know which transactions run.
///
/// A follow-up held longer than `holdLimit` is blocked, so that code awaiting it (a test awaiting a dispatch it made
/// on the test dispatcher itself) ends with an error that names it; the test's `finish` reports it too.
final class DispatchMonitor: FollowingInterceptor, Middleware {
  struct Held: Sendable {
    let action: any ActionType
    let decision: InterceptionDecision
    /// The follow-up's dispatch, whose end `receive` waits for.
    let dispatch: InterceptedDispatch
  }

  struct Running: Sendable {
    let id: TransactionID
    let storeIdentifier: String
    let action: any ActionType
  }

  struct State {
    /// Whether follow-ups are held until received.
    var holding: Bool
    /// The handles of the test's own dispatches (`send`) not intercepted yet: let through.
    var own: Set<TransactionID> = []
    var held: [Held] = []
    /// Follow-ups blocked after being held longer than the limit, for `finish` to report.
    var expired: [any ActionType] = []
    /// The test's own dispatches that finished, until the test takes them.
    var finishedDispatches: Set<TransactionID> = []
    var running: [TransactionID: Running] = [:]
    /// Follow-ups let through by `receive` that finished, by the number `receive` gave them, until it takes them.
    var finishedFollowUps: Set<UInt64> = []
    /// The number of the last follow-up `receive` let through.
    var lastReleased: UInt64 = 0
    /// The actions of finished transactions not yet received, when follow-ups are not held.
    var finished: [any ActionType] = []
    /// Woken when a follow-up is held or a transaction ends.
    var waiters: [CheckedContinuation<Bool?, Never>] = []
  }

  let state: LockedValue<State>
  let holdLimit: Duration

  init(holding: Bool, holdLimit: Duration) {
    state = LockedValue(State(holding: holding))
    self.holdLimit = holdLimit
  }

  /// Not called: the chain calls ``intercept(_:dispatcher:dispatch:)``, which sees the dispatch.
  func intercept(_ action: any ActionType, dispatcher: Dispatcher) -> Interception { .proceed }

  func intercept(_ action: any ActionType, dispatcher: Dispatcher, dispatch: InterceptedDispatch) -> Interception {
    let hold = state.withLock { state -> Bool in
      if let id = dispatch.id, state.own.remove(id) != nil { return false }
      return state.holding
    }
    guard hold else { return .proceed }
    return .laterDeciding({ [self] decision in
      let waiters = state.withLock { state in
        state.held.append(Held(action: action, decision: decision, dispatch: dispatch))
        return state.takeWaiters()
      }
      for waiter in waiters { waiter.resume(returning: nil) }
      // A time limit, on the system's clock: nothing else ends a wait for a follow-up the test never receives.
      DispatchQueue.global().asyncAfter(deadline: .now() + Self.dispatchInterval(holdLimit)) {
        [weak self, weak decision] in
        guard let self, let decision else { return }
        expire(decision, of: action)
      }
    })
  }

  /// Blocks `decision` if its follow-up is still held.
  private func expire(_ decision: InterceptionDecision, of action: any ActionType) {
    let (expired, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Bool?, Never>]) in
      guard let index = state.held.firstIndex(where: { $0.decision === decision }) else { return (false, []) }
      state.held.remove(at: index)
      state.expired.append(action)
      return (true, state.takeWaiters())
    }
    guard expired else { return }
    decision.decide(
      .block(
        reason: "\(action) was held as a follow-up for longer than the test dispatcher's time limit (\(holdLimit)) "
          + "and never received: receive follow-ups with `receive`, and send the test's own actions with `send`"))
    for waiter in waiters { waiter.resume(returning: nil) }
  }

  func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    state.withLock { state in
      state.running[transaction.id] = Running(
        id: transaction.id, storeIdentifier: transaction.storeIdentifier, action: action)
    }
  }

  func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    let waiters = state.withLock { state in
      state.running.removeValue(forKey: transaction.id)
      if !state.holding { state.finished.append(action) }
      return state.takeWaiters()
    }
    for waiter in waiters { waiter.resume(returning: nil) }
  }

  /// The test's own dispatch `id` finished.
  func dispatchFinished(_ id: TransactionID) {
    let waiters = state.withLock { state in
      state.finishedDispatches.insert(id)
      return state.takeWaiters()
    }
    for waiter in waiters { waiter.resume(returning: nil) }
  }

  /// The follow-up `receive` let through as `number` finished.
  func followUpFinished(_ number: UInt64) {
    let waiters = state.withLock { state in
      state.finishedFollowUps.insert(number)
      return state.takeWaiters()
    }
    for waiter in waiters { waiter.resume(returning: nil) }
  }

  /// Wakes the waiters, so that they check their conditions again: a dispatch finished.
  func wake() {
    let waiters = state.withLock { $0.takeWaiters() }
    for waiter in waiters { waiter.resume(returning: nil) }
  }

  /// Suspends until `condition` holds (returns `true`) or `timeout` passed (returns `false`).
  ///
  /// `condition` is checked now and after each event of the monitor (a held action, a transaction's start or end, a
  /// finished dispatch), under the monitor's lock: it must call no code of the app's. A timer on the system's clock
  /// wakes the waiters when the time is up, for what no event announces.
  func wait(until condition: @escaping @Sendable (State) -> Bool, timeout: Duration) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    DispatchQueue.global().asyncAfter(deadline: .now() + Self.dispatchInterval(timeout)) { [weak self] in
      self?.wake()
    }
    while true {
      let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Bool?, Never>) in
        let decided = state.withLock { state -> Bool? in
          if condition(state) { return true }
          if ContinuousClock.now >= deadline { return false }
          state.waiters.append(continuation)
          return nil
        }
        if let decided { continuation.resume(returning: decided) }
      }
      if let outcome { return outcome }
    }
  }

  /// `duration` as a `DispatchTimeInterval`, clamped to what one holds.
  static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
    let (seconds, attoseconds) = duration.components
    let limit = Int64(Int.max / 1_000_000_000 - 1)
    guard seconds < limit else { return .never }
    return .nanoseconds(Int(max(0, seconds)) * 1_000_000_000 + Int(max(0, attoseconds) / 1_000_000_000))
  }
}

extension DispatchMonitor.State {
  /// The waiters, resumed (with `nil`) by the caller after the lock, to check their conditions again.
  mutating func takeWaiters() -> [CheckedContinuation<Bool?, Never>] {
    defer { waiters = [] }
    return waiters
  }
}
