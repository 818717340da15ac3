extension Dispatcher {
  /// Cancels every dispatch made with ``start(action:to:mode:options:)`` that has not finished, and every dispatch
  /// still waiting in the `.serial` and `.mainThread` lanes.
  ///
  /// Dispatches made with a completion and already running have no handle and go on.
  public func cancelAll() {
    cancelPending(in: .serial)
    cancelPending(in: .mainThread)
    let live = handles.withLock { Array($0.values) }
    for handle in live { handle.cancel() }
  }

  /// Cancels the dispatches waiting in the lane of `mode` (`.serial` or `.mainThread`); the one running goes on.
  ///
  /// Each completes with ``DispatchError/cancelled``: its handle is cancelled, or its completion called, on this
  /// thread. Other modes have no lane: nothing happens.
  /// - Parameter mode: The lane's mode.
  public func cancelPending(in mode: Mode) {
    let jobs: [Lane.Job]
    switch mode {
    case .serial: jobs = serialLane.takePending()
    case .mainThread: jobs = mainLane.takePending()
    case .sync, .async: return
    }
    for job in jobs {
      if let handle = job.handle {
        handle.cancel()
      } else if let intercepted = job.intercepted {
        intercepted.report(DispatchReport(result: .failure(.cancelled), actions: []))
      } else {
        job.completion?(.failure(.cancelled))
      }
    }
  }
}
