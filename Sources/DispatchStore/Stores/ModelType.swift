/// The value-type state held by a ``Store``.
///
/// Models must be `Sendable` (a store hands out snapshots to any thread) and provide an empty initial value.
///
/// ```swift
/// struct Counter: ModelType {
///   var count = 0
/// }
/// ```
public protocol ModelType: Sendable {
  /// Creates the model's initial value.
  init()
}
