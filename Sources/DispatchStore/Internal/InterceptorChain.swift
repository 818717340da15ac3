import Dispatch

/// The interceptors registered when a dispatch started, run in order on its action before it is routed.
///
/// Continuation-passing, so that a decision made later resumes the chain where it stopped, on the deciding thread.
struct InterceptorChain: Sendable {
  let interceptors: [any Interceptor]
  /// Whether one of them is a ``FollowingInterceptor``: only then does a dispatch carry an ``InterceptedDispatch``.
  let follow: Bool

  /// How the chain ended.
  enum Outcome: Sendable {
    /// Route this action: the dispatched one, or its replacement.
    case proceed(any ActionType)
    case blocked(DispatchError)
  }

  /// How far the chain got by the time ``start(_:dispatcher:whenDecidedLater:)`` returned.
  enum Progress: Sendable {
    case decided(Outcome)
    /// An interceptor decides later: `whenDecidedLater` receives the outcome, on the deciding thread.
    case pending
  }

  /// Runs the chain on `action`: its outcome is returned if every interceptor decided before this returns,
  /// otherwise passed to `whenDecidedLater`, exactly once either way.
  ///
  /// `followed`: the dispatch, as ``FollowingInterceptor``s see it; `nil` when none is registered.
  func start(
    _ action: any ActionType, dispatcher: Dispatcher, followed: InterceptedDispatch?,
    whenDecidedLater: @escaping @Sendable (Outcome) -> Void
  ) -> Progress {
    let handoff = Handoff()
    run(action, dispatcher: dispatcher, followed: followed) { outcome in
      if let late = handoff.decide(outcome) { whenDecidedLater(late) }
    }
    return handoff.endStart()
  }

  /// Runs the interceptors from `index` on `action`; calls `done` exactly once: on this thread, before returning, if
  /// every interceptor decided at once, otherwise on the thread that made the last decision.
  ///
  /// Interceptors are user code: called with the running dispatchers hidden, as observers are.
  func run(
    _ action: any ActionType, from index: Int = 0, dispatcher: Dispatcher, followed: InterceptedDispatch?,
    done: @escaping @Sendable (Outcome) -> Void
  ) {
    var action = action
    var index = index
    while index < interceptors.count {
      let interceptor = interceptors[index]
      let interception = ThreadContext.withoutRunning {
        if let followed, let following = interceptor as? any FollowingInterceptor {
          return following.intercept(action, dispatcher: dispatcher, dispatch: followed)
        }
        return interceptor.intercept(action, dispatcher: dispatcher)
      }
      switch step(interception, on: action, by: interceptor) {
      case .next(let passed):
        action = passed
        index += 1
      case .stop(let outcome):
        return done(outcome)
      case .later(let decide):
        return awaitDecision(decide, on: action, at: index, dispatcher: dispatcher, followed: followed, done: done)
      }
    }
    done(.proceed(action))
  }

  /// Hands interceptor `index` the decision to make later; the chain goes on when it is made.
  private func awaitDecision(
    _ decide: @escaping @Sendable (InterceptionDecision) -> Void, on action: any ActionType, at index: Int,
    dispatcher: Dispatcher, followed: InterceptedDispatch?, done: @escaping @Sendable (Outcome) -> Void
  ) {
    let interceptor = interceptors[index]
    let decision = InterceptionDecision { [self] interception in
      switch step(interception, on: action, by: interceptor) {
      case .next(let passed):
        run(passed, from: index + 1, dispatcher: dispatcher, followed: followed, done: done)
      case .stop(let outcome):
        done(outcome)
      case .later(let again):
        awaitDecision(again, on: action, at: index, dispatcher: dispatcher, followed: followed, done: done)
      }
    }
    ThreadContext.withoutRunning { decide(decision) }
  }

  private enum Step {
    case next(any ActionType)
    case stop(Outcome)
    case later(@Sendable (InterceptionDecision) -> Void)
  }

  private func step(_ interception: Interception, on action: any ActionType, by interceptor: any Interceptor) -> Step {
    switch interception.decision {
    case .proceed: return .next(action)
    case .replace(let replacement): return .next(replacement)
    case .block(let reason):
      return .stop(.blocked(.blocked(interceptor: String(reflecting: type(of: interceptor)), reason: reason)))
    case .later(let decide): return .later(decide)
    }
  }
}

/// Whether a chain's outcome came while its start was still running, or after.
///
/// In the first case the starting thread takes it; in the second the deciding thread passes it on. Decided under the
/// lock; acted on after it.
private final class Handoff: Sendable {
  private enum State {
    case starting
    case decidedWhileStarting(InterceptorChain.Outcome)
    case started
  }

  private let state = LockedValue(State.starting)

  /// Keeps `outcome`; returns it if the start already returned, so that the caller passes it on.
  func decide(_ outcome: InterceptorChain.Outcome) -> InterceptorChain.Outcome? {
    state.withLock { state in
      guard case .started = state else {
        state = .decidedWhileStarting(outcome)
        return nil
      }
      return outcome
    }
  }

  /// Ends the start: the outcome if it came meanwhile, otherwise `.pending`.
  func endStart() -> InterceptorChain.Progress {
    state.withLock { state in
      if case .decidedWhileStarting(let outcome) = state { return .decided(outcome) }
      state = .started
      return .pending
    }
  }
}

/// Where a `.sync` dispatch waits for a decision an interceptor makes later.
final class LaterDecision: Sendable {
  private let outcome = LockedValue<InterceptorChain.Outcome?>(nil)
  private let decided = DispatchSemaphore(value: 0)

  /// Called once, on the deciding thread.
  @Sendable func deliver(_ outcome: InterceptorChain.Outcome) {
    self.outcome.withLock { $0 = outcome }
    decided.signal()
  }

  /// Blocks until ``deliver(_:)`` ran.
  func wait() -> InterceptorChain.Outcome {
    ThreadContext.blocking { decided.wait() }
    guard let outcome = outcome.withLock({ $0 }) else {
      preconditionFailure("DispatchStore: a dispatch was woken before its interceptors decided")
    }
    return outcome
  }
}
