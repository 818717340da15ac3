import Foundation

/// One recorded transaction: which store handled which action in which dispatch, how it ended, and the store's
/// model right after it.
///
/// The model is the value itself (models are value types), not an encoding: recording costs a copy. It is the
/// model the transaction's own change produced, taken in the same critical section as that change.
public struct Record: Sendable, CustomStringConvertible {
  /// The fields, in one object: a history holds and copies records often, and one reference copies cheaper than
  /// eight fields with three existentials.
  private let storage: Storage

  /// The record's position in the session's history, counted from the session's first record.
  public var index: Int { storage.index }
  /// The dispatch the transaction belongs to (``Transaction/dispatchID``): records of one dispatch are undone and
  /// redone together.
  public var dispatchID: TransactionID { storage.dispatchID }
  /// The transaction that produced this record.
  public var transactionID: TransactionID { storage.transactionID }
  /// The store that handled the action.
  public var storeIdentifier: String { storage.storeIdentifier }
  /// The action, as the store handled it.
  public var action: any ActionType { storage.action }
  /// The store's model right after the transaction, including the changes of a transaction that failed.
  public var model: any ModelType { storage.model }
  /// The error the transaction failed with; `nil` if it succeeded.
  ///
  /// A record loaded from a file carries a ``RecordedError`` with the original's description.
  public var error: (any Error)? { storage.error }
  /// Whether the dispatch was cancelled while the transaction ran (``ActionOperation/isCancelled``).
  public var wasCancelled: Bool { storage.wasCancelled }
  /// How long an operation's transaction took from its start to its record.
  ///
  /// To the tick of the coarse clock its identifier reads (a few milliseconds on Linux): the wait for a response,
  /// not the cost of a reduction. Zero for reductions in place, which take less than the tick.
  public var duration: Duration { .nanoseconds(Int64(clamping: storage.elapsed)) }

  /// When the transaction began (``TransactionID/date``).
  public var timestamp: Date { transactionID.date }

  /// Whether the transaction succeeded.
  public var succeeded: Bool { error == nil && !wasCancelled }

  /// Creates a record.
  /// - Parameters:
  ///   - index: The position in the session's history.
  ///   - dispatchID: The dispatch the transaction belongs to.
  ///   - transactionID: The transaction that produced it.
  ///   - storeIdentifier: The store that handled the action.
  ///   - action: The action.
  ///   - model: The store's model after the transaction.
  ///   - error: The error the transaction failed with, if it did.
  ///   - wasCancelled: Whether the dispatch was cancelled while the transaction ran.
  ///   - duration: How long the transaction took.
  public init(
    index: Int, dispatchID: TransactionID, transactionID: TransactionID, storeIdentifier: String,
    action: any ActionType, model: any ModelType, error: (any Error)? = nil, wasCancelled: Bool = false,
    duration: Duration = .zero
  ) {
    let (seconds, attoseconds) = duration.components
    let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds) / 1_000_000_000
    self.init(
      index: index, dispatchID: dispatchID, transactionID: transactionID, storeIdentifier: storeIdentifier,
      action: action, model: model, error: error, wasCancelled: wasCancelled, elapsed: UInt64(nanoseconds))
  }

  init(
    index: Int, dispatchID: TransactionID, transactionID: TransactionID, storeIdentifier: String,
    action: any ActionType, model: any ModelType, error: (any Error)?, wasCancelled: Bool, elapsed: UInt64
  ) {
    storage = Storage(
      index: index, dispatchID: dispatchID, transactionID: transactionID, storeIdentifier: storeIdentifier,
      action: action, model: model, error: error, wasCancelled: wasCancelled, elapsed: elapsed)
  }

  /// Nanoseconds from the transaction's start to its record.
  var elapsed: UInt64 { storage.elapsed }

  /// `#index [dispatch/transaction] store <- action`, and how it failed.
  public var description: String {
    var text = "#\(index) [\(dispatchID)/\(transactionID)] \(storeIdentifier) <- \(action)"
    if let error { text += " failed: \(error)" }
    if wasCancelled { text += " (cancelled)" }
    return text
  }

  /// Immutable, and its existentials are `Sendable`.
  private final class Storage: Sendable {
    let index: Int
    let dispatchID: TransactionID
    let transactionID: TransactionID
    let storeIdentifier: String
    let action: any ActionType
    let model: any ModelType
    let error: (any Error)?
    let wasCancelled: Bool
    let elapsed: UInt64

    init(
      index: Int, dispatchID: TransactionID, transactionID: TransactionID, storeIdentifier: String,
      action: any ActionType, model: any ModelType, error: (any Error)?, wasCancelled: Bool, elapsed: UInt64
    ) {
      self.index = index
      self.dispatchID = dispatchID
      self.transactionID = transactionID
      self.storeIdentifier = storeIdentifier
      self.action = action
      self.model = model
      self.error = error
      self.wasCancelled = wasCancelled
      self.elapsed = elapsed
    }
  }
}

/// The error of a recorded transaction, as a session file keeps it: its description.
public struct RecordedError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The original error's description.
  public let description: String

  /// Creates a recorded error.
  /// - Parameter description: The original error's description.
  public init(description: String) {
    self.description = description
  }
}
