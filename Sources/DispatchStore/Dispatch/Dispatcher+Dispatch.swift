import Dispatch

extension Dispatcher {
  /// A dispatch made inside this thread's `onUnheardFailure`: its own failure goes to standard error, so that a
  /// handler whose dispatches fail, in any mode, is not called for ever.
  static var isInsideUnheardHandler: Bool {
    ThreadContext.withCurrent { $0.reportingUnheard }
  }

  /// The completion of a dispatch: success, or the typed error that made it fail.
  typealias Completion = @Sendable (Result<Void, DispatchError>) -> Void

  /// Dispatches `action` to every registered store that handles its type, or to one store, and returns without
  /// waiting: fire and forget, from synchronous code such as a button's action.
  ///
  /// ```swift
  /// dispatcher.dispatch(action: CounterAction.increase(by: 1))
  /// dispatcher.dispatch(action: CounterAction.reset, mode: .serial)
  /// ```
  /// A failure reaches middleware (if a store's transaction began) and the dispatcher's `onUnheardFailure`
  /// (``init(mainQueue:clock:onUnheardFailure:)``), which writes it to standard error unless you gave your own. To
  /// hear it where you dispatch, `try await` the dispatch from `async` code, or ``start(action:to:mode:options:)`` it
  /// and observe its handle.
  /// - Parameters:
  ///   - action: The action to dispatch.
  ///   - storeIdentifier: The one store to send the action to; `nil` (the default) sends it to every store that
  ///     handles `Action`.
  ///   - mode: How the dispatch runs; `.async` by default. With `.sync` it returns once every store finished.
  ///
  /// > Important: Synchronous code only. In `async` code the same call is the awaited form and needs `try await`.
  /// > Top-level code that awaits would pick this form and not wait, so the compiler refuses it there: write
  /// > `try await dispatcher.start(action: action).value` to wait, or `dispatcher.start(action: action)` to fire
  /// > and forget.
  @available(
    *, noasync,
    message: "it does not wait, and top-level code picks it even under 'await': use 'try await start(action:).value'"
  )
  public func dispatch<Action: ActionType>(action: Action, to storeIdentifier: String? = nil, mode: Mode = .async) {
    if isReplaying.load(ordering: .relaxed), absorbedByReplay(action, storeIdentifier: storeIdentifier) { return }
    routeIntercepted(storeIdentifier: storeIdentifier, action: action, mode: mode, then: Self.unheardCompletion(action))
  }

  /// `nil`, so that a failure goes to ``onUnheardFailure``; inside that handler, a completion that writes it to
  /// standard error instead.
  @inline(__always)
  static func unheardCompletion(_ action: any ActionType) -> Completion? {
    guard isInsideUnheardHandler else { return nil }
    return { result in if case .failure(let error) = result, isReported(error) { writeUnheard(error, of: action) } }
  }

  /// Dispatches `action` to every registered store that handles its type, or to one store; what the public forms
  /// run.
  ///
  /// `completion` runs once, after every operation finished: on the calling thread for `.sync`, on the main queue for
  /// `.mainThread`, otherwise on the thread that finished last.
  func dispatch<Action: ActionType>(
    action: Action, to storeIdentifier: String? = nil, mode: Mode = .async, then completion: Completion?
  ) {
    if isReplaying.load(ordering: .relaxed), absorbedByReplay(action, storeIdentifier: storeIdentifier) {
      return completion?(.success(())) ?? ()
    }
    routeIntercepted(storeIdentifier: storeIdentifier, action: action, mode: mode, then: completion)
  }

  /// Dispatches `action` and reports what ran: the result, and the actions that reached the stores.
  ///
  /// The same as ``dispatch(action:to:mode:then:)``, for callers that need to know what interceptors made of the
  /// action: passed on, replaced (the report names the replacement), or blocked (no action).
  func dispatchReporting<Action: ActionType>(
    action: Action, to storeIdentifier: String? = nil, mode: Mode = .async,
    report: @escaping @Sendable (DispatchReport) -> Void
  ) {
    if isReplaying.load(ordering: .relaxed), absorbedByReplay(action, storeIdentifier: storeIdentifier) {
      return report(DispatchReport(result: .success(()), actions: []))
    }
    if let chain = interceptorChain() {
      return route(
        storeIdentifier: storeIdentifier, action: action, mode: mode,
        intercepted: Lane.InterceptedJob(chain: chain, dispatchID: nil, report: report), then: nil)
    }
    route(storeIdentifier: storeIdentifier, action: action, mode: mode) { result in
      report(DispatchReport(result: result, actions: [action]))
    }
  }

  /// Dispatches `action`, returns once every responding store finished, and reports what ran.
  func dispatchReporting<Action: ActionType>(
    action: Action, to storeIdentifier: String? = nil, mode: Mode = .async
  ) async -> DispatchReport {
    await withCheckedContinuation { continuation in
      dispatchReporting(action: action, to: storeIdentifier, mode: mode) { report in
        continuation.resume(returning: report)
      }
    }
  }

  /// Dispatches `action` and returns a handle to follow, await or cancel it.
  ///
  /// The dispatch runs as `dispatch(action:to:mode:)` runs it, once `options` admit it
  /// (throttled, debounced, cancelling the dispatches in flight with its id). Ignore the handle to fire and
  /// forget: a failure then goes to the dispatcher's `onUnheardFailure` once the handle is released unread.
  /// - Parameters:
  ///   - action: The action to dispatch.
  ///   - storeIdentifier: The one store to send the action to; `nil` (the default) sends it to every store that
  ///     handles it.
  ///   - mode: How the dispatch runs; `.async` by default. With `.sync` (and no debounce) this returns once the
  ///     dispatch finished.
  ///   - options: Cancellation id, throttle, debounce; none by default.
  /// - Returns: The dispatch's handle, ``DispatchState/pending`` until it runs.
  @discardableResult
  public func start<Action: ActionType>(
    action: Action, to storeIdentifier: String? = nil, mode: Mode = .async,
    options: DispatchOptions = DispatchOptions()
  ) -> DispatchHandle {
    let handle = prepare(action: action, to: storeIdentifier, mode: mode, options: options)
    handle.start()
    return handle
  }

  /// Makes the handle of a dispatch of `action` without starting it: add dependencies with
  /// ``DispatchHandle/depend(on:)``, then call ``DispatchHandle/start()``.
  ///
  /// ```swift
  /// let load = dispatcher.prepare(action: ProfileAction.load)
  /// let show = dispatcher.prepare(action: FeedAction.show)
  /// try show.depend(on: load)   // show runs once load completed; if load fails, show fails
  /// show.start()
  /// load.start()
  /// ```
  /// - Parameters:
  ///   - action: The action to dispatch.
  ///   - storeIdentifier: The one store to send the action to; `nil` (the default) sends it to every store that
  ///     handles it.
  ///   - mode: How the dispatch runs once started; `.async` by default.
  ///   - options: Cancellation id, throttle, debounce; none by default.
  /// - Returns: The dispatch's handle, ``DispatchState/pending`` until it runs. Until it is started, only
  ///   ``DispatchHandle/cancel()``, ``cancelAll()``, and, for one with a cancellation id, ``cancel(id:)`` and a newer
  ///   dispatch with the id end it.
  public func prepare<Action: ActionType>(
    action: Action, to storeIdentifier: String? = nil, mode: Mode = .async,
    options: DispatchOptions = DispatchOptions()
  ) -> DispatchHandle {
    let admits = options.cancellationID != nil || options.throttle != nil || options.debounce != nil
    let handle = DispatchHandle(
      action: action, storeIdentifier: storeIdentifier, mode: mode, options: admits ? options : nil,
      allOrNothing: options.allOrNothing, dispatcher: self, writesUnheard: Self.isInsideUnheardHandler)
    // Known before it can finish, so that `cancelAll()` reaches it and its end forgets it; and, from now on, to its
    // cancellation id.
    handles.withLock { $0[ObjectIdentifier(handle)] = handle }
    if let id = options.cancellationID {
      admission.withLock { $0.made(handle, id: id) }
      // Cancelled between the two (a `cancelAll()` on another thread): its end found it in neither yet.
      if handle.currentState.isFinished { admission.withLock { $0.finished(handle, id: id) } }
    }
    return handle
  }

  /// Admits the started dispatch of `handle` as its options say, then routes it (through the interceptors, if any).
  func submit(_ handle: DispatchHandle) {
    // Cancelled before it started (by its handle, `cancelAll()`, its id): it neither runs nor throttles, debounces
    // or cancels others.
    if handle.options != nil, handle.currentState.isFinished { return }
    if isReplaying.load(ordering: .relaxed),
      absorbedByReplay(handle.action, storeIdentifier: handle.storeIdentifier, checked: handle.options == nil)
    {
      guard handle.markStarted() else { return }
      return handle.finish(.success(()))
    }
    guard let options = handle.options?.value else { return route(handle) }
    admit(handle, options: options) { [self] in route(handle) }
  }

  /// Routes the dispatch of `handle`, which was admitted.
  private func route(_ handle: DispatchHandle) {
    routeIntercepted(
      storeIdentifier: handle.storeIdentifier, action: handle.action, mode: handle.mode, handle: handle
    ) { handle.finish($0) }
  }

  /// Dispatches `action` on the calling thread and returns once every responding store finished, as `.sync`
  /// does.
  /// - Parameters:
  ///   - action: The action to dispatch.
  ///   - storeIdentifier: The one store to send the action to; `nil` (the default) sends it to every store that
  ///     handles it.
  /// - Throws: The ``DispatchError`` that made the dispatch fail.
  ///
  /// > Important: See ``Mode/sync``: issued from inside a running operation of this dispatcher, it fails with
  /// > ``DispatchError/reentrantSynchronousDispatch(actionType:)``.
  public func dispatchSync<Action: ActionType>(action: Action, to storeIdentifier: String? = nil) throws(DispatchError)
  {
    if isReplaying.load(ordering: .relaxed), absorbedByReplay(action, storeIdentifier: storeIdentifier) { return }
    try dispatchSynchronouslyIntercepted(storeIdentifier: storeIdentifier, action: action).get()
  }

  /// Whether the replay running here absorbs the dispatch of `action`
  /// (``ReplayHook/absorbs(_:storeIdentifier:checked:)``): it then completes at once, successfully, without running.
  ///
  /// `checked`: whether the replay checks it against what it replays; not for one made with options (throttled,
  /// debounced or cancelled, it may have left nothing to check against).
  private func absorbedByReplay(_ action: any ActionType, storeIdentifier: String?, checked: Bool = true) -> Bool {
    guard let replay = replay.withLock({ $0 }) else { return false }
    return replay.absorbs(action, storeIdentifier: storeIdentifier, checked: checked)
  }

  /// Dispatches an action the replay running here re-runs (``ReplayHook``), as ``dispatch(action:to:mode:then:)``
  /// does, but never absorbed by it.
  func dispatchReplayed(
    storeIdentifier: String, action: any ActionType, mode: Mode, then completion: @escaping Completion
  ) {
    routeIntercepted(storeIdentifier: storeIdentifier, action: action, mode: mode, then: completion)
  }

  /// ``dispatchSync(action:to:)`` for an action the replay running here re-runs: never absorbed by it.
  func dispatchReplayedSync(storeIdentifier: String, action: any ActionType) -> Result<Void, DispatchError> {
    dispatchSynchronouslyIntercepted(storeIdentifier: storeIdentifier, action: action)
  }

  /// Dispatches `actions` one after another and returns without waiting: fire and forget, from synchronous code.
  ///
  /// ```swift
  /// dispatcher.dispatch(actions: [SessionAction.signOut, CartAction.clear])
  /// ```
  /// Each action starts after the previous one's stores all finished; the sequence stops at the first action that
  /// fails, and the later ones are not dispatched. It is not one transaction: other dispatches, in the same lane
  /// too, may run between two of its actions.
  /// - Parameters:
  ///   - actions: The actions, of any action types, in order.
  ///   - mode: How each dispatch runs; `.async` by default. With `.sync` it returns once the last finished.
  ///
  /// > Important: Synchronous code only. In `async` code the same call is the awaited form and needs `try await`.
  /// > Top-level code that awaits would pick this form and not wait, so the compiler refuses it there: dispatch the
  /// > actions from an `async` function to wait for them.
  @available(
    *, noasync,
    message: "it does not wait, and top-level code picks it even under 'await': dispatch from an async function"
  )
  public func dispatch(actions: [any ActionType], mode: Mode = .async) {
    // Inside `onUnheardFailure`, a failure is written to standard error (naming the sequence's first action).
    let unheard = actions.first.flatMap { Self.unheardCompletion($0) }
    dispatchSequence(actions[...], mode: mode, completion: unheard)
  }

  /// Dispatches `actions` one after another, and calls `completion` once, after the last action finished or the
  /// first one failed.
  func dispatch(actions: [any ActionType], mode: Mode = .async, then completion: Completion?) {
    dispatchSequence(actions[...], mode: mode, completion: completion)
  }

  /// Dispatches `action` and returns once every responding store finished.
  /// - Parameters:
  ///   - action: The action to dispatch.
  ///   - storeIdentifier: The one store to send the action to; `nil` (the default) sends it to every store that
  ///     handles `Action`.
  ///   - mode: How the dispatch runs; `.async` by default.
  /// - Throws: The ``DispatchError`` that made the dispatch fail.
  ///
  /// > Important: `.sync` blocks the calling thread, a cooperative-pool thread here; prefer the other modes.
  public func dispatch<Action: ActionType>(
    action: Action, to storeIdentifier: String? = nil, mode: Mode = .async
  ) async throws(DispatchError) {
    let result = await withCheckedContinuation { continuation in
      dispatch(action: action, to: storeIdentifier, mode: mode) { result in
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
        if isReplaying.load(ordering: .relaxed), absorbedByReplay(action, storeIdentifier: nil) { continue }
        let result = dispatchSynchronouslyIntercepted(storeIdentifier: nil, action: action)
        guard case .success = result else { return complete(completion, result, action) }
      }
      completion?(.success(()))
      return
    }
    dispatchOne(first, mode: mode) { [self] result in
      guard case .success = result else { return complete(completion, result, first) }
      dispatchSequence(rest, mode: mode, completion: completion)
    }
  }

  private func dispatchOne<Action: ActionType>(_ action: Action, mode: Mode, then completion: @escaping Completion) {
    dispatch(action: action, mode: mode, then: completion)
  }

  /// Routes `action` in `mode`, through the interceptors if any is registered (one relaxed load while none is).
  @inline(__always)
  private func routeIntercepted(
    storeIdentifier: String?, action: any ActionType, mode: Mode, handle: DispatchHandle? = nil,
    then completion: Completion?
  ) {
    if interceptorCount.load(ordering: .relaxed) > 0, let chain = interceptorChain() {
      let intercepted = Lane.InterceptedJob(chain: chain, dispatchID: handle?.id) { [self] report in
        handle?.interceptorsDispatched(report.actions)
        complete(completion, report.result, action)
      }
      return route(
        storeIdentifier: storeIdentifier, action: action, mode: mode, handle: handle, intercepted: intercepted,
        then: nil)
    }
    route(storeIdentifier: storeIdentifier, action: action, mode: mode, handle: handle, then: completion)
  }

  /// Routes `action` in `mode`: the one place that decides where a dispatch runs.
  ///
  /// With `intercepted`, its interceptors run first, where the dispatch runs, and its report hears what they made of
  /// the action (`completion` is not used); without, `completion` hears the result. `handle`: the dispatch's handle,
  /// if it has one; a cancelled one is not run when its turn comes.
  @inline(__always)
  private func route(
    storeIdentifier: String?, action: any ActionType, mode: Mode, handle: DispatchHandle? = nil,
    intercepted: Lane.InterceptedJob? = nil, then completion: Completion?
  ) {
    switch mode {
    case .sync:
      if let handle, !handle.markStarted() { return }
      if let intercepted {
        return intercepted.report(
          dispatchSynchronously(storeIdentifier: storeIdentifier, action: action, through: intercepted, handle: handle))
      }
      complete(
        completion, dispatchSynchronously(storeIdentifier: storeIdentifier, action: action, handle: handle), action)
    case .async:
      // It runs apart from its caller: counted in flight until it ends.
      let (completion, intercepted) = counted(completion, intercepted, action, handle: handle)
      // Made inside an all-or-nothing dispatch, it passes the stores that one holds, on whichever thread it runs.
      let admitted = ThreadContext.admission()
      DispatchQueue.global().async { [self] in
        ThreadContext.withReserving(admitted) {
          runAsynchronously(storeIdentifier, action, handle, intercepted, admitted: admitted, completion)
        }
      }
    case .serial, .mainThread:
      let (completion, intercepted) = counted(completion, intercepted, action, handle: handle)
      let job = Lane.Job(
        storeIdentifier: storeIdentifier, action: action, completion: intercepted == nil ? completion : nil,
        intercepted: intercepted, handle: handle, admitted: ThreadContext.admission())
      (mode == .serial ? serialLane : mainLane).enqueue(job, dispatcher: self)
    }
  }

  /// Counts a dispatch that runs apart from its caller in ``inFlight``, for ``drain()``.
  ///
  /// Its completion, or its interceptors' report, ends the count once it ran (so that the follow-ups it started are
  /// counted before it ends). A dispatch with a handle is not counted here: its handle counts it
  /// (``DispatchHandle/start()``).
  private func counted(
    _ completion: Completion?, _ intercepted: Lane.InterceptedJob?, _ action: any ActionType, handle: DispatchHandle?
  ) -> (Completion?, Lane.InterceptedJob?) {
    guard handle == nil else { return (completion, intercepted) }
    inFlight.begin()
    if let intercepted { return (nil, intercepted.counted(in: inFlight)) }
    return (
      { [self] result in
        complete(completion, result, action)
        inFlight.end()
      }, nil
    )
  }

  /// Runs an `.async` dispatch on this thread, a background one: its interceptors first, if any.
  ///
  /// `admitted`: the all-or-nothing dispatch it was made inside, if any, whose stores it still passes when its
  /// interceptors decide later, on another thread.
  private func runAsynchronously(
    _ storeIdentifier: String?, _ action: any ActionType, _ handle: DispatchHandle?,
    _ intercepted: Lane.InterceptedJob?, admitted: Reservation?, _ completion: Completion?
  ) {
    if let handle, !handle.markStarted() { return }
    guard let intercepted else {
      return runHere(storeIdentifier: storeIdentifier, action: action, handle: handle, then: completion)
    }
    let progress = intercepted.chain.start(action, dispatcher: self, followed: intercepted.followed) {
      [self] outcome in
      DispatchQueue.global().async {
        ThreadContext.withReserving(admitted) {
          self.finishAsynchronously(outcome, storeIdentifier: storeIdentifier, handle: handle, intercepted.report)
        }
      }
    }
    if case .decided(let outcome) = progress {
      finishAsynchronously(outcome, storeIdentifier: storeIdentifier, handle: handle, intercepted.report)
    }
  }

  /// Runs an `.async` dispatch on the calling thread, a background one.
  private func runHere(
    storeIdentifier: String?, action: any ActionType, handle: DispatchHandle? = nil, then completion: Completion?
  ) {
    // Never `nil`: that would make this thread wait for an operation that finishes later.
    let outcome = ThreadContext.withCurrent { context in
      DispatchRun.run(
        dispatcher: self, storeIdentifier: storeIdentifier, action: action, placement: .anyThread, context: context,
        handle: handle
      ) {
        completion ?? { [self] result in complete(nil, result, action) }
      }
    }
    if case .finished(let result) = outcome { complete(completion, result, action) }
  }

  private func finishAsynchronously(
    _ outcome: InterceptorChain.Outcome, storeIdentifier: String?, handle: DispatchHandle?,
    _ report: @escaping @Sendable (DispatchReport) -> Void
  ) {
    switch outcome {
    case .blocked(let error):
      report(DispatchReport(result: .failure(error), actions: []))
    case .proceed(let action):
      runHere(storeIdentifier: storeIdentifier, action: action, handle: handle) { result in
        report(DispatchReport(result: result, actions: [action]))
      }
    }
  }

  /// Whether the calling thread, whose context is `context`, runs `mainQueue`'s work: for a run-loop thread, one
  /// comparison.
  @inline(__always)
  func isMainQueueCurrent(in context: ThreadContext) -> Bool {
    guard let mainRunLoopCore else { return mainQueue.isCurrent }
    guard let thread = context.mainRunLoopThread else { return false }
    return ObjectIdentifier(thread) == mainRunLoopCore
  }

  /// A `.sync` dispatch through the interceptors, if any.
  private func dispatchSynchronouslyIntercepted(
    storeIdentifier: String?, action: any ActionType
  ) -> Result<Void, DispatchError> {
    guard let chain = interceptorChain() else {
      return dispatchSynchronously(storeIdentifier: storeIdentifier, action: action)
    }
    let intercepted = Lane.InterceptedJob(chain: chain, dispatchID: nil) { _ in }
    let report = dispatchSynchronously(storeIdentifier: storeIdentifier, action: action, through: intercepted)
    intercepted.report(report)  // For the interceptors that follow the dispatch.
    return report.result
  }

  /// Runs the interceptors on the calling thread, waiting for a decision made later, then the dispatch.
  private func dispatchSynchronously(
    storeIdentifier: String?, action: any ActionType, through intercepted: Lane.InterceptedJob,
    handle: DispatchHandle? = nil
  ) -> DispatchReport {
    if let refused = refusedAsReentrant(action) { return DispatchReport(result: .failure(refused), actions: []) }
    let later = LaterDecision()
    let outcome: InterceptorChain.Outcome
    switch intercepted.chain.start(
      action, dispatcher: self, followed: intercepted.followed, whenDecidedLater: later.deliver)
    {
    case .decided(let decided): outcome = decided
    case .pending: outcome = later.wait()
    }
    switch outcome {
    case .blocked(let error):
      return DispatchReport(result: .failure(error), actions: [])
    case .proceed(let passed):
      return DispatchReport(
        result: dispatchSynchronously(storeIdentifier: storeIdentifier, action: passed, handle: handle),
        actions: [passed])
    }
  }

  /// Runs `job` for `lane`; returns whether it finished (and its completion ran) before returning.
  ///
  /// Otherwise its completion tells the lane when it finished. A job whose interceptors decide later waits for them
  /// in the lane, so that the jobs after it keep their order; what they passed on then runs on the lane's executor.
  func runLaneJob(_ job: Lane.Job, on lane: Lane) -> Bool {
    // Made inside an all-or-nothing dispatch: it passes the stores that one holds.
    if job.admitted != nil { return ThreadContext.withReserving(job.admitted) { runAdmittedLaneJob(job, on: lane) } }
    return runAdmittedLaneJob(job, on: lane)
  }

  /// ``runLaneJob(_:on:)``, with this thread's admission set.
  @inline(__always)
  private func runAdmittedLaneJob(_ job: Lane.Job, on lane: Lane) -> Bool {
    // Cancelled while it waited: its handle already reported it.
    if let handle = job.handle, !handle.markStarted() { return true }
    guard let intercepted = job.intercepted else {
      return runRouted(
        storeIdentifier: job.storeIdentifier, action: job.action, on: lane, handle: job.handle, then: job.completion)
    }
    let progress = intercepted.chain.start(job.action, dispatcher: self, followed: intercepted.followed) {
      [self] outcome in
      lane.executor.schedule { [self] in
        let finished = ThreadContext.withReserving(job.admitted) {
          finish(intercepted, outcome, storeIdentifier: job.storeIdentifier, handle: job.handle, on: lane)
        }
        if finished { lane.jobDone(dispatcher: self) }
      }
    }
    guard case .decided(let outcome) = progress else { return false }
    return finish(intercepted, outcome, storeIdentifier: job.storeIdentifier, handle: job.handle, on: lane)
  }

  /// Routes what a lane job's interceptors passed on; returns whether it finished before returning.
  private func finish(
    _ intercepted: Lane.InterceptedJob, _ outcome: InterceptorChain.Outcome, storeIdentifier: String?,
    handle: DispatchHandle?, on lane: Lane
  ) -> Bool {
    switch outcome {
    case .blocked(let error):
      intercepted.report(DispatchReport(result: .failure(error), actions: []))
      return true
    case .proceed(let action):
      return runRouted(storeIdentifier: storeIdentifier, action: action, on: lane, handle: handle) { result in
        intercepted.report(DispatchReport(result: result, actions: [action]))
      }
    }
  }

  /// Runs one routed dispatch of `lane`; returns whether it finished (and `completion` ran) before returning.
  private func runRouted(
    storeIdentifier: String?, action: any ActionType, on lane: Lane, handle: DispatchHandle?,
    then completion: Completion?
  ) -> Bool {
    let outcome = ThreadContext.withCurrent { context in
      let outer = context.runningLane
      context.runningLane = lane
      defer { context.runningLane = outer }
      return DispatchRun.run(
        dispatcher: self, storeIdentifier: storeIdentifier, action: action, placement: lane.placement,
        context: context, handle: handle
      ) {
        { [self] result in
          complete(completion, result, action)
          lane.jobDone(dispatcher: self)
        }
      }
    }
    guard case .finished(let result) = outcome else { return false }
    complete(completion, result, action)
    return true
  }

  /// Tells `completion` the result of the dispatch of `action`; without one, nobody hears it, and a failure goes to
  /// ``onUnheardFailure`` (``reportUnheard(_:of:)``).
  @inline(__always)
  func complete(_ completion: Completion?, _ result: Result<Void, DispatchError>, _ action: any ActionType) {
    if let completion { return completion(result) }
    if case .failure(let error) = result { reportUnheard(error, of: action) }
  }

  /// The error a `.sync` dispatch of `action` fails with at once on this thread, if it would be re-entrant.
  private func refusedAsReentrant(_ action: any ActionType) -> DispatchError? {
    let running = ThreadContext.withCurrent { $0.isRunning(ObjectIdentifier(self)) }
    return running ? .reentrantSynchronousDispatch(actionType: String(reflecting: type(of: action))) : nil
  }

  private func dispatchSynchronously(
    storeIdentifier: String?, action: any ActionType, handle: DispatchHandle? = nil
  ) -> Result<Void, DispatchError> {
    // The thread's context is looked up once for the whole dispatch.
    ThreadContext.withCurrent { context in
      guard !context.isRunning(ObjectIdentifier(self)) else {
        return .failure(.reentrantSynchronousDispatch(actionType: String(reflecting: type(of: action))))
      }
      guard
        case .finished(let result) = DispatchRun.run(
          dispatcher: self, storeIdentifier: storeIdentifier, action: action,
          placement: isMainQueueCurrent(in: context) ? .waitingMainQueue : .waitingCaller, context: context,
          handle: handle, completion: { nil })
      else { preconditionFailure("DispatchStore: a dispatch without completion must finish before returning") }
      return result
    }
  }
}
