import Foundation

/// Middleware that writes one entry per transaction: a line with the id, store, action, duration and outcome, then,
/// for `Codable` models, one indented line per field that changed, as a key path (`user.name: "A" -> "B"`).
///
/// Arrays are aligned before they are compared: an element inserted or removed is one line
/// (`items[0]: (none) -> {"id":7}`), at its index in the model it is in, not a change of every element after it.
///
/// ```swift
/// dispatcher.register(middleware: LoggerMiddleware())                      // standard error
/// dispatcher.register(middleware: LoggerMiddleware { logger.info("\($0)") })  // any logging library
/// ```
///
/// > Important: The sink is called on the thread that finished the transaction, possibly several at once.
public final class LoggerMiddleware: Middleware {
  private let sink: @Sendable (String) -> Void
  /// Encoded models before each running transaction, by transaction id.
  private let before = LockedValue<[TransactionID: JSONValue]>([:])

  /// Creates a logger.
  /// - Parameter sink: Receives each entry (its lines joined by newlines, without a trailing one); writes it to
  ///   standard error by default.
  public init(sink: @escaping @Sendable (String) -> Void = LoggerMiddleware.standardError) {
    self.sink = sink
  }

  /// Writes `line` and a newline to standard error.
  @usableFromInline static let standardError: @Sendable (String) -> Void = { line in
    FileHandle.standardError.write(Data((line + "\n").utf8))
  }

  /// Keeps the store's model as it was before the transaction, flattened, to compare afterwards.
  public func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    guard let encoded = Self.encode(store.anyModel) else { return }
    before.withLock { $0[transaction.id] = encoded }
  }

  /// Writes the transaction's line.
  public func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    let old = before.withLock { $0.removeValue(forKey: transaction.id) }
    var line = "[\(transaction.id)] \(transaction.storeIdentifier) <- \(action)"
    if let duration = transaction.duration {
      let (seconds, attoseconds) = duration.components
      let microseconds = Double(seconds) * 1e6 + Double(attoseconds) / 1e12
      line += " (\(String(format: "%.1f", microseconds)) µs)"
    }
    if transaction.wasCancelled {
      line += " cancelled"
    } else if let error = transaction.error {
      line += " failed: \(error)"
    }
    if let old, let new = Self.encode(store.anyModel) {
      let changes = Self.changes(from: old, to: new)
      line += changes.isEmpty ? " no change" : ""
      for change in changes { line += "\n  \(change)" }
    }
    sink(line)
  }

  /// The model's JSON tree, or `nil` if the model is not `Encodable`.
  static func encode(_ model: any ModelType) -> JSONValue? {
    guard let encodable = model as? any Encodable else { return nil }
    return try? JSONValue(encoding: encodable)
  }

  /// `path: old -> new` for each field that changed, appeared (`(none) -> new`) or disappeared, in key order.
  static func changes(from old: JSONValue, to new: JSONValue) -> [String] {
    JSONValue.differences(expected: old, actual: new, alignsArrays: true).map { difference in
      let path = difference.path.isEmpty ? "(model)" : difference.path
      return "\(path): \(difference.expected ?? "(none)") -> \(difference.actual ?? "(none)")"
    }
  }
}
