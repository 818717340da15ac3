/// A group of dispatches to cancel together: the `Hashable` and `Sendable` value given as
/// ``DispatchOptions/init(cancellationID:cancelsInFlight:throttle:debounce:)``'s `cancellationID`.
///
/// `@unchecked Sendable`: it holds an `AnyHashable` that is only ever made from a `Sendable` value, and never
/// changes.
struct CancellationID: Hashable, @unchecked Sendable, CustomStringConvertible {
  private let value: AnyHashable

  /// Creates an identifier from `value`; two identifiers are equal when their values are.
  init(_ value: some Hashable & Sendable) {
    self.value = AnyHashable(value)
  }

  var description: String { "\(value)" }
}
