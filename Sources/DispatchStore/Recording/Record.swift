import Foundation

/// One recorded transaction: which store handled which action, and the store's model after it.
///
/// The model is the value itself (models are value types), not an encoding: recording costs a copy.
public struct Record: Sendable, CustomStringConvertible {
  /// The record's position in the session's history, counted from the session's first record.
  public let index: Int
  /// The transaction that produced this record.
  public let transactionID: TransactionID
  /// When the transaction finished.
  public let timestamp: Date
  /// The store that handled the action.
  public let storeIdentifier: String
  /// The action.
  public let action: any ActionType
  /// The store's model after the transaction.
  public let model: any ModelType

  /// Creates a record.
  /// - Parameters:
  ///   - index: The position in the session's history.
  ///   - transactionID: The transaction that produced it.
  ///   - timestamp: When the transaction finished.
  ///   - storeIdentifier: The store that handled the action.
  ///   - action: The action.
  ///   - model: The store's model after the transaction.
  public init(
    index: Int, transactionID: TransactionID, timestamp: Date, storeIdentifier: String, action: any ActionType,
    model: any ModelType
  ) {
    self.index = index
    self.transactionID = transactionID
    self.timestamp = timestamp
    self.storeIdentifier = storeIdentifier
    self.action = action
    self.model = model
  }

  /// `#index [id] store <- action`.
  public var description: String {
    "#\(index) [\(transactionID)] \(storeIdentifier) <- \(action)"
  }
}
