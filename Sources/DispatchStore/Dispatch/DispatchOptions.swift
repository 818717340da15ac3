/// How a dispatch made with ``Dispatcher/start(action:to:mode:options:)`` is admitted: cancelling the one in flight with
/// the same id, throttled, or debounced.
///
/// ```swift
/// // Each keystroke: wait for a quiet 300 ms, then search, cancelling the search still running.
/// dispatcher.start(action: SearchAction.query(text), options: DispatchOptions(cancellationID: "search", debounce: .milliseconds(300)))
/// ```
///
/// Throttling and debouncing are counted per cancellation id when there is one, otherwise per action type, on
/// the dispatcher's ``DispatchClock``.
public struct DispatchOptions: Sendable {
  /// Groups dispatches: ``Dispatcher/cancel(id:)`` cancels the unfinished ones (those still waiting to start
  /// included), and with `cancelsInFlight` a new one cancels those made before it when it starts ("the latest
  /// search wins").
  let cancellationID: CancellationID?
  /// Whether a dispatch with a cancellation id cancels the unfinished dispatches made before it with the same id
  /// when it starts.
  let cancelsInFlight: Bool
  /// Runs at most one dispatch per interval: the first runs at once, and the others within the interval after it
  /// fail at once with ``DispatchError/throttled``.
  let throttle: Duration?
  /// Runs a dispatch only after a quiet interval: each one waits (``DispatchState/pending``), and one made
  /// meanwhile replaces it, which then fails with ``DispatchError/superseded``.
  let debounce: Duration?
  /// Whether the dispatch holds its stores, and puts them back if any fails.
  ///
  /// It holds every store it reaches while it runs, and puts back each store it changed if any of them fails
  /// (``Reservation``). Internal until its rollback is recorded (proposal 0016, section 3).
  var allOrNothing = false

  /// Creates options; the defaults admit a dispatch at once, as ``Dispatcher/start(action:to:mode:options:)`` without
  /// options does.
  /// - Parameters:
  ///   - cancellationID: Groups dispatches for cancelling (``Dispatcher/cancel(id:)``) and for counting throttle
  ///     and debounce intervals: any `Hashable` and `Sendable` value (`"search"`, an enum case); equal values are
  ///     one group.
  ///   - cancelsInFlight: Whether a dispatch cancels the unfinished ones with its `cancellationID` when it starts
  ///     ("the latest search wins"); `true` by default.
  ///   - throttle: At most one dispatch per this interval: the first runs at once, the others within the interval
  ///     after it fail at once with ``DispatchError/throttled``.
  ///   - debounce: Wait for this quiet interval (``DispatchState/pending``); a dispatch made meanwhile replaces the
  ///     waiting one, which fails with ``DispatchError/superseded``.
  public init(
    cancellationID: (any Hashable & Sendable)? = nil, cancelsInFlight: Bool = true, throttle: Duration? = nil,
    debounce: Duration? = nil
  ) {
    self.cancellationID = cancellationID.map { CancellationID($0) }
    self.cancelsInFlight = cancelsInFlight
    self.throttle = throttle
    self.debounce = debounce
  }
}
