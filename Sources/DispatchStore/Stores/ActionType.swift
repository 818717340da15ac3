/// A value that describes something that happened, routed by a ``Dispatcher`` to the stores that handle it.
///
/// Actions are usually enums. They must be `Sendable` because a dispatch can run its operations on any thread.
///
/// ```swift
/// enum CounterAction: ActionType {
///   case increase(by: Int)
///   case reset
/// }
/// ```
public protocol ActionType: Sendable {}
