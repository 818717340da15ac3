/// Names a group of dispatches to cancel together (``DispatchOptions/cancellationID``): any `Hashable` and
/// `Sendable` value, or a string literal.
///
/// `@unchecked Sendable`: it holds an `AnyHashable` that is only ever made from a `Sendable` value, and never
/// changes.
public struct CancellationID: Hashable, @unchecked Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
  private let value: AnyHashable

  /// Creates an identifier from `value`; two identifiers are equal when their values are.
  /// - Parameter value: Any hashable, sendable value: a string, an enum case, a type's `ObjectIdentifier`.
  public init(_ value: some Hashable & Sendable) {
    self.value = AnyHashable(value)
  }

  /// Creates an identifier from a string literal.
  /// - Parameter value: The string.
  public init(stringLiteral value: String) {
    self.init(value)
  }

  /// The value's description.
  public var description: String { "\(value)" }
}
