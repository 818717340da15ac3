/// How a dispatch made with ``Dispatcher/start(action:to:mode:options:)`` is admitted: cancelling the one in flight
/// with the same id, throttled, or debounced; and whether it is all or nothing.
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
  /// Whether the dispatch holds its stores while it runs, and puts back each store it changed if any of them fails.
  ///
  /// See ``init(cancellationID:cancelsInFlight:throttle:debounce:allOrNothing:)``.
  let allOrNothing: Bool

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
  ///   - allOrNothing: Whether every store the dispatch changed is put back if any of them fails, or the dispatch is
  ///     cancelled; `false` by default. A failed dispatch then fails with
  ///     ``DispatchError/rolledBack(storeIdentifiers:failures:)``, observers hear each
  ///     store put back (``ModelChange/isRestore``), and a recorder files it so that verify and undo see it. From
  ///     its start to its end, the dispatch holds its stores: other dispatches reaching them wait (without a thread)
  ///     and run after it, so nothing they change is ever put back, and undo, redo, jump and restores fail with
  ///     ``SessionError/storeBusy(storeIdentifier:)``. Dispatches made inside it (by its observers, middleware or
  ///     operations) run inside it and are put back with it; the DocC article "Transactions and cancellation" lists
  ///     the known limits.
  ///
  /// > Important: A `.sync` dispatch on the main thread that reaches a store held by a `.mainThread` all-or-nothing
  /// > dispatch fails at once with ``DispatchError/reentrantSynchronousDispatch(actionType:)``: waiting would block
  /// > the thread that dispatch needs. An operation of an all-or-nothing dispatch must not wait for work that a
  /// > thread of its own makes outside its body (a completion handler on another queue that dispatches to one of its
  /// > stores): that dispatch waits for it.
  public init(
    cancellationID: (any Hashable & Sendable)? = nil, cancelsInFlight: Bool = true, throttle: Duration? = nil,
    debounce: Duration? = nil, allOrNothing: Bool = false
  ) {
    self.cancellationID = cancellationID.map { CancellationID($0) }
    self.cancelsInFlight = cancelsInFlight
    self.throttle = throttle
    self.debounce = debounce
    self.allOrNothing = allOrNothing
  }
}
