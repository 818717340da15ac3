extension DispatchRun {
  /// Where a dispatch's operations start and its completion runs: the one place that decides whether work hops to
  /// the main queue.
  enum Placement: Sendable {
    /// On whichever thread makes them ready: the caller, or the thread that finished a store waited for.
    case anyThread
    /// As `anyThread`, for a caller that waits until the run ended (a `.sync` dispatch).
    case waitingCaller
    /// As `waitingCaller`, for a caller that runs the dispatcher's main queue: a start that would wait for an
    /// all-or-nothing dispatch placed on that queue fails at once instead. (A case of its own, not a payload: the
    /// placement stays one word.)
    case waitingMainQueue
    /// On the main queue's thread.
    case main(MainQueue)

    /// The main queue that work placed here must be scheduled on first, or `nil` if it runs on the calling thread:
    /// placed anywhere, or on the main queue while this thread runs its work.
    @inline(__always)
    var queueToHopTo: MainQueue? {
      guard case .main(let mainQueue) = self, !mainQueue.isCurrent else { return nil }
      return mainQueue
    }
  }
}
