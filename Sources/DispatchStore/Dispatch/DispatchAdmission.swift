/// Admitting a dispatch made with ``DispatchOptions``: throttling it, debouncing it, and cancelling the dispatches in
/// flight with its cancellation id, before it is routed.
///
/// The state is the dispatcher's (`Dispatcher.admission`); its methods decide under the lock and return what to do
/// after it. The clock is user code: it is read before the lock, and scheduled after it.
struct AdmissionState {
  /// When each throttling key last let a dispatch run.
  private var lastAdmitted: [CancellationID: Duration] = [:]
  /// The dispatch waiting for a quiet interval, per debouncing key, and its generation.
  private var debounced: [CancellationID: (handle: DispatchHandle, generation: UInt64)] = [:]
  private var generations: UInt64 = 0
  /// The unfinished dispatches per cancellation id.
  private var inFlight: [CancellationID: [DispatchHandle]] = [:]

  /// Whether a dispatch with `key` may run at `now`, at most one per `interval`; if so, it counts as the last.
  mutating func throttle(_ key: CancellationID, interval: Duration, now: Duration) -> Bool {
    if let last = lastAdmitted[key], now - last < interval { return false }
    lastAdmitted[key] = now
    return true
  }

  /// `handle` waits for a quiet interval in place of the one waiting with `key`, which it returns (to fail it).
  mutating func debounce(_ key: CancellationID, _ handle: DispatchHandle) -> (
    generation: UInt64, replaced: DispatchHandle?
  ) {
    generations &+= 1
    let replaced = debounced.updateValue((handle, generations), forKey: key)?.handle
    return (generations, replaced)
  }

  /// The quiet interval of the dispatch of `generation` ended: whether it is still the one waiting (it runs).
  mutating func debounceEnded(_ key: CancellationID, generation: UInt64) -> Bool {
    guard debounced[key]?.generation == generation else { return false }
    debounced[key] = nil
    return true
  }

  /// `handle` starts with `id`: returns the unfinished dispatches with that id it cancels.
  mutating func started(_ handle: DispatchHandle, id: CancellationID, cancelsInFlight: Bool) -> [DispatchHandle] {
    var running = inFlight[id] ?? []
    let cancelled = cancelsInFlight ? running : []
    if cancelsInFlight { running = [] }
    running.append(handle)
    inFlight[id] = running
    return cancelled
  }

  /// `handle` finished: it is no longer in flight.
  mutating func finished(_ handle: DispatchHandle, id: CancellationID) {
    guard var running = inFlight[id] else { return }
    running.removeAll { $0 === handle }
    inFlight[id] = running.isEmpty ? nil : running
  }

  /// The unfinished dispatches with `id`.
  func inFlight(_ id: CancellationID) -> [DispatchHandle] {
    inFlight[id] ?? []
  }
}

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
      guard admission.withLock({ $0.throttle(key, interval: interval, now: now) }) else {
        return handle.finish(.failure(.throttled))
      }
    }
    guard let interval = options.debounce else { return proceed(handle, options: options, submit: submit) }
    let (generation, replaced) = admission.withLock { $0.debounce(key, handle) }
    replaced?.finish(.failure(.superseded))
    clock.schedule(after: interval) { [weak self] in
      guard let self, admission.withLock({ $0.debounceEnded(key, generation: generation) }) else { return }
      proceed(handle, options: options, submit: submit)
    }
  }

  /// Registers `handle` under its cancellation id, cancelling the dispatches in flight with it, and submits it.
  private func proceed(_ handle: DispatchHandle, options: DispatchOptions, submit: @Sendable () -> Void) {
    if let id = options.cancellationID {
      let cancelled = admission.withLock { $0.started(handle, id: id, cancelsInFlight: options.cancelsInFlight) }
      // Finished before it was registered (cancelled while it waited): its own end could not unregister it.
      if handle.state.isFinished { admission.withLock { $0.finished(handle, id: id) } }
      for previous in cancelled { previous.cancel() }
    }
    submit()
  }

  /// A dispatch made with ``start(_:to:mode:options:)`` reached its final state: forget it.
  func handleFinished(_ handle: DispatchHandle) {
    let removed = handles.withLock { $0.removeValue(forKey: ObjectIdentifier(handle)) }
    withExtendedLifetime(removed) {}
    if let id = handle.cancellationID { admission.withLock { $0.finished(handle, id: id) } }
    if hasDispatchFinishedObserver.load(ordering: .acquiring), let observer = dispatchFinishedObserver.withLock({ $0 })
    {
      observer()
    }
  }

  /// Cancels every unfinished dispatch made with the cancellation id `id` (``DispatchOptions/cancellationID``).
  /// - Parameter id: The cancellation id.
  public func cancel(id: CancellationID) {
    let running = admission.withLock { $0.inFlight(id) }
    for handle in running { handle.cancel() }
  }
}
