extension Dispatcher {
  /// Admits `handle` as `options` say, then calls `submit`, which routes it; a dispatch that is not admitted ends
  /// with its error instead.
  func admit(_ handle: DispatchHandle, options: DispatchOptions, submit: @escaping @Sendable () -> Void) {
    guard options.throttle != nil || options.debounce != nil else {
      return proceed(handle, options: options, submit: submit)
    }
    // What throttling and debouncing count by. Made only here: a key from a type costs a dynamic cast into
    // `AnyHashable`.
    let key = options.cancellationID ?? CancellationID(ObjectIdentifier(type(of: handle.action)))
    if let interval = options.throttle {
      let now = clock.now
      // The keys forgotten go with `throttled`, after the lock.
      let throttled = admission.withLock { $0.throttle(key, interval: interval, now: now) }
      guard throttled.admitted else { return handle.finish(.failure(.throttled)) }
    }
    guard let interval = options.debounce else { return proceed(handle, options: options, submit: submit) }
    let (generation, replaced) = admission.withLock { $0.debounce(key, handle) }
    replaced?.finish(.failure(.superseded))
    // Made inside an all-or-nothing dispatch, it passes that one's stores when it runs, on the clock's thread.
    let admitted = ThreadContext.admission()
    clock.schedule(after: interval) { [weak self] in
      // A dispatcher gone meanwhile runs nothing: the dispatch ends as cancelled rather than waiting for ever.
      guard let self else { return handle.cancel() }
      guard admission.withLock({ $0.debounceEnded(key, generation: generation) }) else { return }
      ThreadContext.withReserving(admitted) { proceed(handle, options: options, submit: submit) }
    }
  }

  /// Cancels the unfinished dispatches made before `handle` with its cancellation id, if its options say so, and
  /// submits it; nothing, if it was cancelled while it waited (it neither runs nor cancels others).
  private func proceed(_ handle: DispatchHandle, options: DispatchOptions, submit: @Sendable () -> Void) {
    guard !handle.currentState.isFinished else { return }
    if let id = options.cancellationID, options.cancelsInFlight {
      let older = admission.withLock { $0.started(handle, id: id) }
      for previous in older { previous.cancel() }
    }
    submit()
  }

  /// A dispatch made with ``start(action:to:mode:options:)`` reached its final state: forget it.
  func handleFinished(_ handle: DispatchHandle) {
    let removed = handles.withLock { $0.removeValue(forKey: ObjectIdentifier(handle)) }
    withExtendedLifetime(removed) {}
    if let id = handle.cancellationID { admission.withLock { $0.finished(handle, id: id) } }
    if hasDispatchFinishedObserver.load(ordering: .acquiring), let observer = dispatchFinishedObserver.withLock({ $0 })
    {
      observer()
    }
  }

  /// Cancels every unfinished dispatch made with the cancellation id `id` (``DispatchOptions``),
  /// those still waiting for their quiet interval, their dependencies or their start included.
  ///
  /// When it returns, none of them is still waiting: each ended as ``DispatchState/cancelled`` without running a
  /// reducer, or had started (a running operation is told, ``ActionOperation/isCancelled``).
  /// - Parameter id: The cancellation id, as given to ``DispatchOptions``; equal values name one group.
  public func cancel(id: some Hashable & Sendable) {
    let running = admission.withLock { $0.inFlight(CancellationID(id)) }
    for handle in running { handle.cancel() }
  }
}
