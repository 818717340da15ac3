/// An interceptor that follows the dispatches it intercepts to their end: the test kit's, which must tell the
/// test's own dispatches from follow-ups, and know when a follow-up it let through finished.
///
/// The chain calls ``intercept(_:dispatcher:dispatch:)`` instead of ``Interceptor/intercept(_:dispatcher:)``.
package protocol FollowingInterceptor: Interceptor {
  /// Decides what happens to `action`, as ``Interceptor/intercept(_:dispatcher:)`` does, seeing the dispatch.
  func intercept(_ action: any ActionType, dispatcher: Dispatcher, dispatch: InterceptedDispatch) -> Interception
}

/// One intercepted dispatch, as a ``FollowingInterceptor`` sees it: its handle's id, and its end.
package final class InterceptedDispatch: Sendable {
  private enum State {
    case running(whenFinished: [@Sendable (Result<Void, DispatchError>) -> Void])
    case finished(Result<Void, DispatchError>)
  }

  /// The id of the dispatch's handle (``Dispatcher/prepare(action:to:mode:options:)``); `nil` for a dispatch made
  /// without one.
  package let id: TransactionID?
  private let state = LockedValue(State.running(whenFinished: []))

  init(id: TransactionID?) {
    self.id = id
  }

  /// Calls `body` with the dispatch's result once it finished (interceptors and every store); at once if it has.
  package func whenFinished(_ body: @escaping @Sendable (Result<Void, DispatchError>) -> Void) {
    let finished = state.withLock { state -> Result<Void, DispatchError>? in
      switch state {
      case .running(var waiting):
        waiting.append(body)
        state = .running(whenFinished: waiting)
        return nil
      case .finished(let result):
        return result
      }
    }
    if let finished { body(finished) }
  }

  /// The dispatch finished with `result`: tells those waiting, after the lock.
  func finish(_ result: Result<Void, DispatchError>) {
    let waiting = state.withLock { state -> [@Sendable (Result<Void, DispatchError>) -> Void] in
      guard case .running(let waiting) = state else { return [] }
      state = .finished(result)
      return waiting
    }
    for body in waiting { body(result) }
  }
}
