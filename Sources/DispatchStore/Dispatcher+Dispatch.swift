import Dispatch

extension Dispatcher {
  /// The completion of a dispatch: success, or the typed error that made it fail.
  public typealias Completion = @Sendable (Result<Void, DispatchError>) -> Void

  /// Dispatches `action` to every registered store that handles its type, or to one store.
  ///
  /// Each responding store's reducer returns an operation; a store whose wait list names other responding stores
  /// starts after they finished. `completion` runs exactly once, after every operation finished: on the calling
  /// thread for `.sync`, on the main queue for `.mainThread`, otherwise on the thread that finished last.
  /// - Parameters:
  ///   - storeIdentifier: The one store to send the action to; `nil` (the default) sends it to every store that
  ///     handles `Action`.
  ///   - action: The action to dispatch.
  ///   - mode: How the dispatch runs; `.async` by default.
  ///   - completion: Receives success or the ``DispatchError`` that made the dispatch fail.
  ///
  /// > Important: With `.sync` this returns only after every operation finished and `completion` ran, even
  /// > operations that finish later on another thread: do not call it on a thread those operations need.
  public func dispatch<Action: ActionType>(
    storeIdentifier: String? = nil,
    action: Action,
    mode: Mode = .async,
    then completion: Completion?
  ) {
    switch mode {
    case .sync:
      let result = dispatchSynchronously(storeIdentifier: storeIdentifier, action: action)
      completion?(result)
    case .async:
      DispatchQueue.global().async { [self] in
        let failure = run(
          storeIdentifier: storeIdentifier, action: action, placement: .anyThread, onComplete: completion)
        if case .failure = failure { completion?(failure) }
      }
    case .serial:
      enqueue(on: serialLane, placement: .anyThread, storeIdentifier: storeIdentifier, action: action, completion)
    case .mainThread:
      enqueue(on: mainLane, placement: .main(mainQueue), storeIdentifier: storeIdentifier, action: action, completion)
    }
  }

  /// Dispatches `action` without waiting for, or hearing about, its result.
  ///
  /// Failures still happen (and reach middleware); use ``dispatch(storeIdentifier:action:mode:then:)`` or the
  /// `async` form to receive them. In an `async` context this name resolves to the `async` form: write
  /// `try await`.
  /// - Parameters:
  ///   - storeIdentifier: The one store to send the action to; `nil` (the default) sends it to every store that
  ///     handles `Action`.
  ///   - action: The action to dispatch.
  ///   - mode: How the dispatch runs; `.async` by default.
  public func dispatch<Action: ActionType>(storeIdentifier: String? = nil, action: Action, mode: Mode = .async) {
    dispatch(storeIdentifier: storeIdentifier, action: action, mode: mode, then: nil)
  }

  /// Dispatches `actions` one after another: each starts after the previous one's stores all finished.
  ///
  /// Stops at the first action that fails; `completion` then receives its error and the later actions are not
  /// dispatched.
  /// - Parameters:
  ///   - actions: The actions, of any action types, in order.
  ///   - mode: How each dispatch runs; `.async` by default.
  ///   - completion: Runs once, after the last action finished or the first one failed.
  public func dispatch(actions: [any ActionType], mode: Mode = .async, then completion: Completion?) {
    dispatchSequence(actions[...], mode: mode, completion: completion)
  }

  /// Dispatches `action` and returns once every responding store finished.
  /// - Parameters:
  ///   - storeIdentifier: The one store to send the action to; `nil` (the default) sends it to every store that
  ///     handles `Action`.
  ///   - action: The action to dispatch.
  ///   - mode: How the dispatch runs; `.async` by default.
  /// - Throws: The ``DispatchError`` that made the dispatch fail.
  ///
  /// > Important: `.sync` blocks the calling thread, a cooperative-pool thread here; prefer the other modes.
  public func dispatch<Action: ActionType>(
    storeIdentifier: String? = nil,
    action: Action,
    mode: Mode = .async
  ) async throws(DispatchError) {
    let result = await withCheckedContinuation { continuation in
      dispatch(storeIdentifier: storeIdentifier, action: action, mode: mode) { result in
        continuation.resume(returning: result)
      }
    }
    try result.get()
  }

  /// Dispatches `actions` one after another and returns once the last finished.
  /// - Parameters:
  ///   - actions: The actions, of any action types, in order.
  ///   - mode: How each dispatch runs; `.async` by default.
  /// - Throws: The ``DispatchError`` of the first action that failed; later actions were not dispatched.
  public func dispatch(actions: [any ActionType], mode: Mode = .async) async throws(DispatchError) {
    let result = await withCheckedContinuation { continuation in
      dispatch(actions: actions, mode: mode) { result in continuation.resume(returning: result) }
    }
    try result.get()
  }

  // MARK: - Implementation

  private func dispatchSequence(_ actions: ArraySlice<any ActionType>, mode: Mode, completion: Completion?) {
    guard let first = actions.first else {
      completion?(.success(()))
      return
    }
    let rest = actions.dropFirst()
    if mode == .sync {
      // A loop, not recursion through completions: long synchronous sequences stay off the stack.
      for action in actions {
        let result = dispatchSynchronously(storeIdentifier: nil, action: action)
        guard case .success = result else { return completion?(result) ?? () }
      }
      completion?(.success(()))
      return
    }
    dispatchOne(first, mode: mode) { [self] result in
      guard case .success = result else { return completion?(result) ?? () }
      dispatchSequence(rest, mode: mode, completion: completion)
    }
  }

  private func dispatchOne<Action: ActionType>(_ action: Action, mode: Mode, then completion: @escaping Completion) {
    dispatch(action: action, mode: mode, then: completion)
  }

  /// Runs the dispatch as `lane`'s next job; the lane moves on once the completion ran.
  private func enqueue(
    on lane: Lane,
    placement: DispatchRun.Placement,
    storeIdentifier: String?,
    action: any ActionType,
    _ completion: Completion?
  ) {
    lane.enqueue { [self] done in
      let failure = run(storeIdentifier: storeIdentifier, action: action, placement: placement) { result in
        completion?(result)
        done()
      }
      if case .failure = failure {
        completion?(failure)
        done()
      }
    }
  }

  private func dispatchSynchronously(storeIdentifier: String?, action: any ActionType) -> Result<Void, DispatchError> {
    guard !ThreadContext.current.runningDispatchers.contains(ObjectIdentifier(self)) else {
      return .failure(.reentrantSynchronousDispatch(actionType: String(reflecting: type(of: action))))
    }
    return run(storeIdentifier: storeIdentifier, action: action, placement: .anyThread, onComplete: nil)
  }

  /// Starts a run.
  ///
  /// With no `onComplete` it waits for the run and returns its result; otherwise it returns `.success` once
  /// started, or the failure that prevented starting (`onComplete` is then not called).
  private func run(
    storeIdentifier: String?,
    action: any ActionType,
    placement: DispatchRun.Placement,
    onComplete: Completion?
  ) -> Result<Void, DispatchError> {
    let prepared: DispatchRun.Prepared
    do {
      prepared = try DispatchRun.prepare(
        dispatcher: self, storeIdentifier: storeIdentifier, action: action, placement: placement,
        onComplete: onComplete)
    } catch {
      return .failure(error)
    }
    let run: DispatchRun
    switch prepared {
    case .single(let store):
      return SingleStoreDispatch.run(
        store: store, action: action, dispatcherID: ObjectIdentifier(self), placement: placement,
        onComplete: onComplete)
    case .run(let prepared):
      run = prepared
    }
    run.start()
    return onComplete == nil ? run.waitForResult() : .success(())
  }
}
