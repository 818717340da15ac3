/// Admitting a dispatch made with ``DispatchOptions``: throttling it, debouncing it, and cancelling the dispatches in
/// flight with its cancellation id, before it is routed.
///
/// The state is the dispatcher's (`Dispatcher.admission`); its methods decide under the lock and return what to do
/// after it. The clock is user code: it is read before the lock, and scheduled after it.
struct AdmissionState {
  /// When each throttling key last let a dispatch run, and for how long it holds the next back.
  private var lastAdmitted: [CancellationID: (at: Duration, interval: Duration)] = [:]
  /// The count of `lastAdmitted` past which the keys whose interval ended are forgotten: twice the count kept at the
  /// last sweep, so that sweeping costs little per dispatch and the keys of one screen's rows do not pile up.
  private var sweepAt = 64
  /// The dispatch waiting for a quiet interval, per debouncing key, and its generation.
  private var debounced: [CancellationID: (handle: DispatchHandle, generation: UInt64)] = [:]
  private var generations: UInt64 = 0
  /// The unfinished dispatches per cancellation id, oldest first: from when each was made (waiting for its start, its
  /// dependencies or its quiet interval included) until it finished.
  private var inFlight: [CancellationID: [DispatchHandle]] = [:]

  /// Whether a dispatch with `key` may run at `now`, at most one per `interval`; if so, it counts as the last.
  ///
  /// A dispatch is held back by the interval of the one that last ran with its key. Now and then the keys whose
  /// interval has passed are forgotten; the dictionary they were in is returned, for the caller to release after the
  /// lock: a key is the app's value.
  mutating func throttle(
    _ key: CancellationID, interval: Duration, now: Duration
  ) -> (admitted: Bool, released: [CancellationID: (at: Duration, interval: Duration)]) {
    // Held back by the interval of the dispatch that ran ("the others within the interval after it"), which is also
    // what the sweep forgets a key by: its decisions do not depend on whether a sweep ran (helper-62).
    if let last = lastAdmitted[key], now - last.at < last.interval { return (false, [:]) }
    lastAdmitted[key] = (now, interval)
    guard lastAdmitted.count > sweepAt else { return (true, [:]) }
    let all = lastAdmitted
    lastAdmitted = all.filter { now - $0.value.at < $0.value.interval }
    sweepAt = max(64, 2 * lastAdmitted.count)
    return (true, all)
  }

  /// How many throttling keys are remembered.
  var throttlingKeys: Int { lastAdmitted.count }

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

  /// `handle`, just made, carries `id`: from now on ``inFlight(_:)`` has it, and so a cancel by id, or a newer
  /// dispatch with the id, reaches it.
  mutating func made(_ handle: DispatchHandle, id: CancellationID) {
    inFlight[id, default: []].append(handle)
  }

  /// `handle` starts, cancelling the unfinished dispatches with `id`: returns those made before it, which it cancels;
  /// none if it finished already (it was cancelled while it waited).
  ///
  /// They stay registered until they finish: a ``Dispatcher/cancel(id:)`` made meanwhile reaches them too, so that
  /// none is still waiting when it returns.
  func started(_ handle: DispatchHandle, id: CancellationID) -> [DispatchHandle] {
    guard let unfinished = inFlight[id], let position = unfinished.firstIndex(where: { $0 === handle }) else {
      return []
    }
    return Array(unfinished[..<position])
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
