/// Sees every transaction a ``Dispatcher`` runs: before the reducer is asked for an operation, and after the
/// operation finished.
///
/// ```swift
/// final class Tracer: Middleware {
///   func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
///   func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
///     print(transaction)  // with its duration, and its error if it failed
///   }
/// }
/// dispatcher.register(middleware: Tracer())
/// ```
///
/// > Important: Middleware is called on the thread running the transaction, possibly several at once, and never
/// > under a library lock. Both methods run once per transaction.
public protocol Middleware: AnyObject, Sendable {
  /// Called before the store's reducer is asked for an operation.
  /// - Parameters:
  ///   - transaction: The transaction about to run; its duration and error are `nil`.
  ///   - action: The action the store handles: the dispatched one, or what the store's action mapping made of it
  ///     (an app-wide action for a store of another action type).
  ///   - store: The store about to handle it.
  func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore)

  /// Called after the store's operation finished, successfully or not.
  /// - Parameters:
  ///   - transaction: The finished transaction, with its duration and its error if it failed.
  ///   - action: The action the store handled, as in ``willDispatch(transaction:action:in:)``.
  ///   - store: The store that handled it; its model is the one the operation left.
  func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore)
}
