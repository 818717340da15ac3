/// The reasons a dispatch, or a change to a dispatcher's registry, can fail.
///
/// Every failure reaches the dispatch's handle (and is thrown by the `async` forms); a fire-and-forget dispatch's goes
/// to the dispatcher's `onUnheardFailure` (``Dispatcher/init(mainQueue:clock:onUnheardFailure:)``). Two errors are
/// equal when they are the same case with the same values; the errors inside ``operationsFailed(_:)`` compare by
/// their descriptions.
public enum DispatchError: Error, Sendable, Equatable, CustomStringConvertible {
  /// No registered store has the given identifier.
  case unknownStore(identifier: String)
  /// A store is already registered under the given identifier.
  case duplicateStoreIdentifier(String)
  /// The store with the given identifier is registered with another dispatcher: unregister it there first.
  case registeredElsewhere(storeIdentifier: String)
  /// The store with the given identifier handles a different action type than the one dispatched.
  case actionTypeMismatch(storeIdentifier: String, expected: String, dispatched: String)
  /// No registered store handles actions of the given type.
  case noRespondingStore(actionType: String)
  /// The stores' wait lists form a cycle; the identifiers list the cycle, first store repeated at the end.
  case waitCycle([String])
  /// A store's wait list names an identifier no registered store has.
  case unknownWaitTarget(storeIdentifier: String, waitsFor: String)
  /// A store did not start: a store it waits for failed in the same dispatch (or did not start itself, for this
  /// reason). Reported among ``operationsFailed(_:)``, with the failure of the store waited for.
  case waitTargetFailed(storeIdentifier: String, waitsFor: String)
  /// A `.sync` dispatch was issued from inside an operation running on the same dispatcher.
  case reentrantSynchronousDispatch(actionType: String)
  /// One or more operations failed; every other store of the dispatch still completed.
  case operationsFailed([OperationFailure])
  /// An all-or-nothing dispatch failed: the stores it changed were put back to their models from before it, named
  /// in `storeIdentifiers`; `failures` are the operations that failed.
  case rolledBack(storeIdentifiers: [String], failures: [OperationFailure])
  /// A store's ``ActionOperation`` was released before it finished; its transaction fails with this error instead of
  /// hanging the dispatch.
  case releasedWithoutFinishing(storeIdentifier: String)
  /// A store's ``Reducer`` does not override `operation(for:in:)`, or its ``SynchronousReducer`` does not override
  /// `reduce(_:into:)`.
  case reducerNotImplemented(storeIdentifier: String)
  /// An ``Interceptor`` stopped the action before any store saw it.
  ///
  /// `interceptor` is the interceptor's type, `reason` what it gave.
  case blocked(interceptor: String, reason: String?)

  /// The dispatch was cancelled (``DispatchHandle/cancel()``, ``Dispatcher/cancelAll()``,
  /// ``Dispatcher/cancelPending(in:)``) before it finished.
  case cancelled

  /// A throttled dispatch (``DispatchOptions``) came within the interval after the last one that ran, and
  /// did not run.
  case throttled

  /// A debounced dispatch (``DispatchOptions``) was replaced by a later one before its quiet interval
  /// ended, and did not run.
  case superseded

  /// A dispatch this one depended on (``DispatchHandle/depend(on:)``) failed or was cancelled; this one did not run.
  /// The identifier is the dependency's.
  case dependencyFailed(TransactionID)

  /// The dispatch would wait for a dispatch that waits for it; the identifiers go around the cycle.
  ///
  /// A dependency (``DispatchHandle/depend(on:)``) that closes a cycle, or an all-or-nothing dispatch
  /// (``DispatchOptions``) made inside another that holds a store it needs: its identifier, the other's, and its own
  /// again. No store started.
  case dependencyCycle([TransactionID])

  /// A dependency was added to the dispatch with this identifier after it was started.
  case dependencyAfterStart(TransactionID)

  /// A ``ChildStore``'s part of its parent's model no longer exists (the element it presents was removed); the
  /// action was not dispatched.
  case scopeUnavailable(storeIdentifier: String, scope: String)

  /// A readable explanation of the failure.
  public var description: String {
    switch self {
    case .unknownStore(let identifier):
      return "No store is registered with identifier \"\(identifier)\"."
    case .duplicateStoreIdentifier(let identifier):
      return "A store is already registered with identifier \"\(identifier)\"."
    case .registeredElsewhere(let identifier):
      return "The store \"\(identifier)\" is registered with another dispatcher: unregister it there first."
    case .actionTypeMismatch(let storeIdentifier, let expected, let dispatched):
      return "Store \"\(storeIdentifier)\" handles \(expected), not \(dispatched)."
    case .noRespondingStore(let actionType):
      return "No registered store handles actions of type \(actionType)."
    case .waitCycle(let cycle):
      return "The stores wait for each other in a cycle: \(cycle.joined(separator: " -> "))."
    case .unknownWaitTarget(let storeIdentifier, let waitsFor):
      return "Store \"\(storeIdentifier)\" waits for \"\(waitsFor)\", but no store has that identifier."
    case .waitTargetFailed(let storeIdentifier, let waitsFor):
      return "Store \"\(storeIdentifier)\" did not start: store \"\(waitsFor)\", which it waits for, failed."
    case .reentrantSynchronousDispatch(let actionType):
      return "A .sync dispatch of \(actionType) was issued from inside a running operation of the same dispatcher; "
        + "use .async, .serial or .mainThread to dispatch from an operation."
    case .cancelled:
      return "The dispatch was cancelled."
    case .throttled:
      return "The dispatch was throttled: another one ran less than the interval before."
    case .superseded:
      return "The dispatch was debounced: a later one replaced it before its quiet interval ended."
    case .dependencyFailed(let id):
      return "The dispatch \(id) it depended on did not complete, so it did not run."
    case .dependencyCycle(let ids):
      return "The dispatches would wait for each other: "
        + ids.map(\.description).joined(separator: " -> ") + "."
    case .dependencyAfterStart(let id):
      return "A dependency was added to the dispatch \(id) after it was started."
    case .scopeUnavailable(let storeIdentifier, let scope):
      return "The part \(scope) of store \"\(storeIdentifier)\" no longer exists; the action was not dispatched."
    case .blocked(let interceptor, let reason):
      return "The interceptor \(interceptor) blocked the action" + (reason.map { ": \($0)." } ?? ".")
    case .releasedWithoutFinishing(let storeIdentifier):
      return "The operation for store \"\(storeIdentifier)\" was released without calling finish()."
    case .reducerNotImplemented(let storeIdentifier):
      return "The reducer of store \"\(storeIdentifier)\" does not override operation(for:in:) or reduce(_:into:)."
    case .operationsFailed(let failures):
      return "\(failures.count) operation(s) failed: "
        + failures.map { "\"\($0.storeIdentifier)\": \($0.error)" }.joined(separator: "; ")
    case .rolledBack(let identifiers, let failures):
      let putBack = identifiers.isEmpty ? "no store had changed" : "the stores \(identifiers) were put back"
      return "\(failures.count) operation(s) failed, and \(putBack): "
        + failures.map { "\"\($0.storeIdentifier)\": \($0.error)" }.joined(separator: "; ")
    }
  }
}

/// One store's failed operation within a dispatch.
public struct OperationFailure: Sendable, Equatable, CustomStringConvertible {
  /// The identifier of the store whose operation failed.
  public let storeIdentifier: String
  /// The transaction in which the operation ran.
  public let transactionID: TransactionID
  /// The error the operation finished with.
  public let error: any Error

  /// Creates a failure.
  /// - Parameters:
  ///   - storeIdentifier: The identifier of the store whose operation failed.
  ///   - transactionID: The transaction in which the operation ran.
  ///   - error: The error the operation finished with.
  init(storeIdentifier: String, transactionID: TransactionID, error: any Error) {
    self.storeIdentifier = storeIdentifier
    self.transactionID = transactionID
    self.error = error
  }

  /// A readable summary of the failure.
  public var description: String { "\(storeIdentifier) [\(transactionID)]: \(error)" }

  /// Whether two failures are of the same store and transaction, with errors of the same type and description.
  /// - Parameters:
  ///   - lhs: A failure.
  ///   - rhs: Another failure.
  /// - Returns: Whether they report the same.
  public static func == (lhs: OperationFailure, rhs: OperationFailure) -> Bool {
    lhs.storeIdentifier == rhs.storeIdentifier && lhs.transactionID == rhs.transactionID
      && type(of: lhs.error) == type(of: rhs.error) && "\(lhs.error)" == "\(rhs.error)"
  }
}
