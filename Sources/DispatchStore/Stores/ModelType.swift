/// The value-type state held by a ``Store``.
///
/// Models must be `Sendable`: a store hands out snapshots to any thread. A store is given its first model.
///
/// ```swift
/// struct Counter: ModelType {
///   var count = 0
/// }
/// ```
public protocol ModelType: Sendable {}
