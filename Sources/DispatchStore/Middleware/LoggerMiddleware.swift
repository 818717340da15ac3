import Foundation

/// Middleware that writes one line per transaction: id, store, action, duration, and, for `Codable` models, the
/// fields that changed as flattened key paths (`user/name: "A" -> "B"`).
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
  private let before = LockedValue<[TransactionID: [String: String]]>([:])

  /// Creates a logger.
  /// - Parameter sink: Receives each line, without a trailing newline; writes it to standard error by default.
  public init(sink: @escaping @Sendable (String) -> Void = LoggerMiddleware.standardError) {
    self.sink = sink
  }

  /// Writes `line` and a newline to standard error.
  @usableFromInline static let standardError: @Sendable (String) -> Void = { line in
    FileHandle.standardError.write(Data((line + "\n").utf8))
  }

  /// Keeps the store's model as it was before the transaction, flattened, to compare afterwards.
  public func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    guard let fields = Self.flatten(store.anyModel) else { return }
    before.withLock { $0[transaction.id] = fields }
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
    if let old, let new = Self.flatten(store.anyModel) {
      let changes = Self.changes(from: old, to: new)
      line += changes.isEmpty ? " no change" : ""
      for change in changes { line += "\n  \(change)" }
    }
    sink(line)
  }

  /// The model's fields as `key/path: JSON value`, or `nil` if the model is not `Encodable`.
  static func flatten(_ model: any ModelType) -> [String: String]? {
    guard let encodable = model as? any Encodable else { return nil }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    guard let data = try? encoder.encode(encodable),
      let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
    else { return nil }
    var fields: [String: String] = [:]
    flatten(object, path: "", into: &fields)
    return fields
  }

  private static func flatten(_ value: Any, path: String, into fields: inout [String: String]) {
    func child(_ key: String) -> String { path.isEmpty ? key : "\(path)/\(key)" }
    if let dictionary = value as? [String: Any], !dictionary.isEmpty {
      for (key, element) in dictionary { flatten(element, path: child(key), into: &fields) }
    } else if let array = value as? [Any], !array.isEmpty {
      for (index, element) in array.enumerated() { flatten(element, path: child(String(index)), into: &fields) }
    } else {
      fields[path.isEmpty ? "/" : path] = render(value)
    }
  }

  private static func render(_ value: Any) -> String {
    guard JSONSerialization.isValidJSONObject([value]),
      let data = try? JSONSerialization.data(withJSONObject: [value], options: [.withoutEscapingSlashes]),
      let text = String(data: data, encoding: .utf8)
    else { return "\(value)" }
    return String(text.dropFirst().dropLast())  // Unwrap the array used to encode a fragment.
  }

  /// `path: old -> new` for each field that changed, appeared (`(none) -> new`) or disappeared, sorted by path.
  static func changes(from old: [String: String], to new: [String: String]) -> [String] {
    Set(old.keys).union(new.keys).sorted().compactMap { path in
      let before = old[path]
      let after = new[path]
      guard before != after else { return nil }
      return "\(path): \(before ?? "(none)") -> \(after ?? "(none)")"
    }
  }
}
