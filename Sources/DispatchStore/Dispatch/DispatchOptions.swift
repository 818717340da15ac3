/// How a dispatch made with ``Dispatcher/start(_:to:mode:options:)`` is admitted: cancelling the one in flight with
/// the same id, throttled, or debounced.
///
/// ```swift
/// // Each keystroke: wait for a quiet 300 ms, then search, cancelling the search still running.
/// dispatcher.start(SearchAction.query(text), options: DispatchOptions(cancellationID: "search", debounce: .milliseconds(300)))
/// ```
///
/// Throttling and debouncing are counted per ``cancellationID`` when there is one, otherwise per action type, on
/// the dispatcher's ``DispatchClock``.
public struct DispatchOptions: Sendable {
  /// Groups dispatches: ``Dispatcher/cancel(id:)`` cancels the unfinished ones (those still waiting to start
  /// included), and with ``cancelsInFlight`` a new one cancels those made before it when it starts ("the latest
  /// search wins").
  public var cancellationID: CancellationID?
  /// Whether a dispatch with a ``cancellationID`` cancels the unfinished dispatches made before it with the same id
  /// when it starts; `true` by default.
  public var cancelsInFlight: Bool
  /// Runs at most one dispatch per interval: the first runs at once, and the others within the interval after it
  /// fail at once with ``DispatchError/throttled``.
  public var throttle: Duration?
  /// Runs a dispatch only after a quiet interval: each one waits (``DispatchState/pending``), and one made
  /// meanwhile replaces it, which then fails with ``DispatchError/superseded``.
  public var debounce: Duration?

  /// Creates options; the defaults admit a dispatch at once, as ``Dispatcher/start(_:to:mode:options:)`` without
  /// options does.
  /// - Parameters:
  ///   - cancellationID: Groups dispatches for cancelling and for counting throttle and debounce intervals.
  ///   - cancelsInFlight: Whether a dispatch cancels the unfinished ones with its `cancellationID` when it starts.
  ///   - throttle: At most one dispatch per this interval; the others fail.
  ///   - debounce: Wait for this quiet interval; a later dispatch replaces a waiting one.
  public init(
    cancellationID: CancellationID? = nil, cancelsInFlight: Bool = true, throttle: Duration? = nil,
    debounce: Duration? = nil
  ) {
    self.cancellationID = cancellationID
    self.cancelsInFlight = cancelsInFlight
    self.throttle = throttle
    self.debounce = debounce
  }
}
