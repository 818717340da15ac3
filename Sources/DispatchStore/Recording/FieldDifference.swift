import Foundation

/// One field that differs between two models: its key path, and its value in each (as JSON).
///
/// ```swift
/// // items[2].done: expected true, actual false
/// ```
public struct FieldDifference: Sendable, Hashable, CustomStringConvertible {
  /// The field's key path in the model's JSON, such as `items[2].title`; empty for the whole model.
  public let path: String
  /// The value the recording has, as compact JSON; `nil` if the field is absent there.
  public let expected: String?
  /// The value found, as compact JSON; `nil` if the field is absent there.
  public let actual: String?

  /// Creates a difference.
  /// - Parameters:
  ///   - path: The field's key path.
  ///   - expected: The recorded value, as JSON, or `nil` if absent.
  ///   - actual: The value found, as JSON, or `nil` if absent.
  init(path: String, expected: String?, actual: String?) {
    self.path = path
    self.expected = expected
    self.actual = actual
  }

  /// `path: expected X, actual Y`.
  public var description: String {
    "\(path.isEmpty ? "(model)" : path): expected \(expected ?? "(absent)"), actual \(actual ?? "(absent)")"
  }
}
