/// Sits between `dispatch` and the stores: sees each dispatched action before it is routed, and passes it on,
/// replaces it, blocks it, or decides later.
///
/// Interceptors run in registration order; each sees the action as the ones before it left it. Unlike
/// ``Middleware``, which observes the transactions of the stores, an interceptor decides whether there is a dispatch
/// at all.
///
/// ```swift
/// final class SignedInOnly: Interceptor {
///   let session: Store<SessionModel, SessionAction>
///   init(session: Store<SessionModel, SessionAction>) { self.session = session }
///
///   func intercept(_ action: any ActionType, dispatcher: Dispatcher) -> Interception {
///     guard action is CheckoutAction else { return .proceed }
///     return session.model.isSignedIn ? .proceed : .block(reason: "sign in first")
///   }
/// }
/// dispatcher.register(interceptor: SignedInOnly(session: session))
/// ```
///
/// A blocked dispatch completes with ``DispatchError/blocked(interceptor:reason:)``; a replaced one runs the
/// replacement, which a handle's ``DispatchHandle/dispatchedActions`` reports.
///
/// > Important: `intercept` runs on the thread that runs the dispatch (the caller for `.sync`, the lane's thread for
/// > `.serial` and `.mainThread`), never under a library lock, and may dispatch. A `.serial` or `.mainThread` lane
/// > waits for a decision made later, so that the dispatches after it keep their order.
public protocol Interceptor: AnyObject, Sendable {
  /// Decides what happens to `action` before any store sees it.
  /// - Parameters:
  ///   - action: The dispatched action, or what an earlier interceptor replaced it with.
  ///   - dispatcher: The dispatcher running the dispatch, to read stores or dispatch other actions.
  /// - Returns: Whether the action goes on, is replaced or blocked, or is decided later.
  func intercept(_ action: any ActionType, dispatcher: Dispatcher) -> Interception
}

/// What an ``Interceptor`` decided about an action.
public struct Interception: Sendable {
  enum Decision: Sendable {
    case proceed
    case replace(any ActionType)
    case block(reason: String?)
    case later(@Sendable (InterceptionDecision) -> Void)
  }

  let decision: Decision

  /// Passes the action on, unchanged, to the next interceptor or the stores.
  public static var proceed: Interception { Interception(decision: .proceed) }

  /// Passes `action` on instead of the intercepted one.
  /// - Parameter action: The replacement, of any action type; it is routed by its own type.
  /// - Returns: The decision.
  public static func replace(with action: any ActionType) -> Interception {
    Interception(decision: .replace(action))
  }

  /// Stops the action: no later interceptor and no store sees it, and the dispatch fails with
  /// ``DispatchError/blocked(interceptor:reason:)``.
  /// - Parameter reason: Why, for the error.
  /// - Returns: The decision.
  public static func block(reason: String? = nil) -> Interception {
    Interception(decision: .block(reason: reason))
  }

  /// Decides later, for example after an asynchronous check.
  ///
  /// ```swift
  /// .later { decide in
  ///   Task { decide(await session.isValid ? .proceed : .block(reason: "signed out")) }
  /// }
  /// ```
  ///
  /// Call `decide` once, from any thread; later calls are ignored, and it may itself decide `.later`. A `decide`
  /// released without being called blocks the action, with a reason that says so, rather than leaving the dispatch
  /// waiting forever.
  /// - Parameter body: Called at once, on the intercepting thread, with the `decide` function to call.
  /// - Returns: The decision.
  public static func later(
    _ body: @escaping @Sendable (_ decide: @escaping @Sendable (Interception) -> Void) -> Void
  ) -> Interception {
    Interception(decision: .later { decision in body { decision.decide($0) } })
  }

  /// Decides later through the decision object itself, whose identity the caller keeps (the test kit).
  package static func laterDeciding(_ body: @escaping @Sendable (InterceptionDecision) -> Void) -> Interception {
    Interception(decision: .later(body))
  }
}

/// An interceptor's decision made after ``Interceptor/intercept(_:dispatcher:)`` returned (``Interception/later(_:)``).
///
/// Made once, from any thread; later calls are ignored. One released without deciding blocks the action, with a
/// reason that says so, rather than leaving the dispatch waiting forever.
package final class InterceptionDecision: Sendable {
  private let state: LockedValue<(@Sendable (Interception) -> Void)?>

  init(_ resume: @escaping @Sendable (Interception) -> Void) {
    state = LockedValue(resume)
  }

  deinit {
    decide(.block(reason: "the interceptor released its decision without making it"))
  }

  /// Makes the decision, the first time; it may itself be `.later`.
  package func decide(_ interception: Interception) {
    let resume = state.withLock { resume in
      defer { resume = nil }
      return resume
    }
    resume?(interception)  // After the lock: it runs the rest of the dispatch.
  }
}
