/// What the task of an operation with an `async` body runs inside.
///
/// The dispatchers whose dispatch started it, and the all-or-nothing dispatch it is part of, if any. Tasks it makes
/// (other than detached ones) inherit it.
///
/// Read by ``ThreadContext/admission()`` (dispatches made in the task pass the stores its all-or-nothing dispatch
/// holds) and by ``Dispatcher/drain()`` (awaited in the task, it would wait for the dispatch the task is part of).
enum OperationTaskScope {
  struct Scope: Sendable {
    /// The dispatcher whose dispatch started the operation.
    let dispatcher: ObjectIdentifier
    /// The dispatchers of the operations whose tasks this one was started in, if any (empty: no allocation).
    let enclosing: [ObjectIdentifier]
    /// The all-or-nothing dispatch the operation is part of, if any.
    let reserving: Reservation?
    /// The operation, and those whose tasks this one was started in (empty: no allocation): an all-or-nothing
    /// dispatch made here does not wait for them (``Reservation/insideOperations``).
    let operation: (any RunningOperation)?
    let enclosingOperations: [any RunningOperation]

    /// Every operation the task runs inside, innermost first.
    var operations: [any RunningOperation] {
      guard let operation else { return enclosingOperations }
      return [operation] + enclosingOperations
    }

    /// Whether the task runs inside a dispatch of `dispatcher`.
    func isInside(_ dispatcher: ObjectIdentifier) -> Bool {
      self.dispatcher == dispatcher || enclosing.contains(dispatcher)
    }
  }

  @TaskLocal static var current: Scope?

  /// The scope for the task of `operation`, which `dispatcher` starts now, on this thread: inside the current task's
  /// scope, if any.
  static func entering(
    _ dispatcher: ObjectIdentifier, operation: any RunningOperation, reserving: Reservation?
  ) -> Scope {
    guard let outer = current else {
      return Scope(
        dispatcher: dispatcher, enclosing: [], reserving: reserving, operation: operation, enclosingOperations: [])
    }
    return Scope(
      dispatcher: dispatcher, enclosing: [outer.dispatcher] + outer.enclosing, reserving: reserving,
      operation: operation, enclosingOperations: outer.operations)
  }
}

/// An operation whose task dispatches are made in (``OperationTaskScope``), as an all-or-nothing dispatch made there
/// sees it.
protocol RunningOperation: AnyObject, Sendable {
  /// The store whose model the operation changes.
  var storeID: ObjectIdentifier { get }
  var isFinished: Bool { get }
}

extension ActionOperation: RunningOperation {
  var storeID: ObjectIdentifier { ObjectIdentifier(store) }
}
