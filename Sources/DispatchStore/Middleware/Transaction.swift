/// One store's handling of one dispatched action, as middleware sees it.
///
/// `willDispatch` receives a transaction whose ``duration`` and ``error`` are `nil`; `didDispatch` receives the
/// same transaction, finished, with its duration, and its error if the operation failed.
public struct Transaction: Sendable, Identifiable, CustomStringConvertible {
  /// The unique, time-sortable identifier of this transaction.
  public let id: TransactionID
  /// The dispatch this transaction belongs to: every store one dispatch reaches shares it.
  ///
  /// The ``DispatchHandle/id`` of a dispatch made with ``Dispatcher/start(action:to:mode:options:)``; otherwise the
  /// first transaction's identifier, or, for a dispatch reaching several stores, one taken for it.
  public let dispatchID: TransactionID
  /// The identifier of the store handling the action.
  public let storeIdentifier: String
  /// The dispatched action.
  public let action: any ActionType
  /// How long the operation took from start to finish; `nil` until it finished.
  public internal(set) var duration: Duration?
  /// The error the operation failed with; `nil` while running and when it succeeded.
  public internal(set) var error: (any Error)?
  /// Whether the operation finished: `false` in `willDispatch`, `true` in `didDispatch`.
  var isFinished: Bool
  /// Whether the dispatch was cancelled (``DispatchHandle/cancel()``) by the time the store finished: its result
  /// was no longer the dispatch's.
  public internal(set) var wasCancelled = false

  /// A transaction about to run, or, with `finished`, one that ran.
  init(
    id: TransactionID, dispatchID: TransactionID, storeIdentifier: String, action: any ActionType,
    finished: Bool = false, duration: Duration? = nil, error: (any Error)? = nil
  ) {
    self.id = id
    self.dispatchID = dispatchID
    self.storeIdentifier = storeIdentifier
    self.action = action
    self.isFinished = finished
    self.duration = duration
    self.error = error
  }

  /// Whether the operation finished without an error.
  var succeeded: Bool { isFinished && error == nil }

  /// A one-line summary: identifier, store, action, and duration or error where known.
  public var description: String {
    var text = "[\(id)] \(storeIdentifier) <- \(action)"
    if let duration { text += " (\(duration))" }
    if let error { text += " failed: \(error)" }
    if wasCancelled { text += " (cancelled)" }
    return text
  }
}
