/// One store's handling of one dispatched action, as a dispatch runs it: the step every dispatch path takes for
/// each store, written once.
///
/// `begin` gives the transaction its identifier and tells `willDispatch`; the caller then has the store handle the
/// action (``StoreKind/handle(_:in:hooked:)``: reduce in place, or start the operation); `end`, once that finished,
/// announces the change to the store's observers, tells `didDispatch`, and turns an error into the dispatch's
/// ``OperationFailure``. With no middleware and nobody to announce to, `end` calls no user code and reads no clock.
enum StoreTransaction {
  /// What a transaction that middleware watches keeps between `begin` and `end`: its identifier, and when it
  /// started (`MonotonicClock` nanoseconds) if a middleware needs the duration.
  ///
  /// Cheaper to keep than the ``Transaction`` itself, which `end` builds again.
  struct Watch: Sendable {
    let id: TransactionID
    /// The dispatch the transaction belongs to (``Transaction/dispatchID``).
    let dispatchID: TransactionID
    let started: UInt64?

    /// Where the store files the transaction's entry, if a hook is among `middleware` (``TransactionHook``).
    /// - Parameter dispatched: The dispatched action, where the store handles an action it mapped that one to.
    @inline(__always)
    func hooked(
      _ middleware: MiddlewareList.Borrowed, dispatched: @autoclosure () -> (any ActionType)? = nil
    ) -> HookedTransaction? {
      guard let hook = middleware.hook else { return nil }
      if let dispatched = dispatched() { hook.noteDispatchedAction(dispatched, of: id) }
      return HookedTransaction(hook: hook, dispatchID: dispatchID, transactionID: id)
    }
  }

  /// Takes the transaction's identifier (and start time, if a middleware needs durations) and tells every
  /// middleware's `willDispatch`.
  /// - Parameters:
  ///   - context: The calling thread's context, if the caller has it at hand.
  ///   - dispatchID: The dispatch's identifier; `nil` for a dispatch of one transaction, which takes the
  ///     transaction's.
  @inline(__always)
  static func begin(
    _ action: any ActionType, of store: AnyObject, kind: StoreKind, middleware: MiddlewareList.Borrowed,
    context: ThreadContext?, dispatchID: TransactionID?
  ) -> Watch {
    let id = context?.nextTransactionID() ?? TransactionID.next()
    let dispatchID = dispatchID ?? id
    let watch = Watch(
      id: id, dispatchID: dispatchID, started: middleware.needsDuration ? MonotonicClock.nanoseconds() : nil)
    if middleware.onlyHook, let hook = middleware.hook {
      hook.willHandle(store, kind: kind)
      return watch
    }
    kind.tell(
      middleware,
      about: Transaction(
        id: id, dispatchID: dispatchID, storeIdentifier: kind.identifier(of: store), action: action),
      in: store)
    return watch
  }

  /// Announces the change to the store's observers, tells every middleware's `didDispatch` (if `begin` watched the
  /// transaction), and returns the failure the dispatch reports, if the store's handling failed.
  ///
  /// Observers first, then middleware: a middleware's `didDispatch` sees the store's model after the change
  /// observers heard.
  /// - Parameters:
  ///   - ranOperation: Whether the store ran an operation, whose change is announced here; a reduction in place
  ///     announced its own.
  ///   - hidingRunningDispatchers: Hide the dispatchers running on this thread from the user code called here
  ///     (observers and middleware may dispatch `.sync`); `false` where the caller already did.
  @inline(__always)
  static func end(
    _ action: any ActionType, of store: AnyObject, kind: StoreKind, middleware: MiddlewareList.Borrowed,
    watch: Watch?, error: (any Error)?, ranOperation: Bool, hidingRunningDispatchers: Bool,
    handle: DispatchHandle? = nil
  ) -> OperationFailure? {
    if let watch {
      tellWatched(
        action, of: store, kind: kind, middleware: middleware, watch: watch, error: error, ranOperation: ranOperation,
        hidingRunningDispatchers: hidingRunningDispatchers, handle: handle)
    } else if ranOperation {
      // A reduction in place announced its change where it made it; the store asks whether anyone observes it.
      kind.announceFinishedOperation(of: store, for: action, hidingRunningDispatchers: hidingRunningDispatchers)
    }
    guard let error else { return nil }
    return OperationFailure(
      storeIdentifier: kind.identifier(of: store), transactionID: watch?.id ?? TransactionID.next(), error: error)
  }

  /// Announces an operation's change, then tells every middleware's `didDispatch`.
  private static func tellWatched(
    _ action: any ActionType, of store: AnyObject, kind: StoreKind, middleware: MiddlewareList.Borrowed,
    watch: Watch, error: (any Error)?, ranOperation: Bool, hidingRunningDispatchers: Bool, handle: DispatchHandle?
  ) {
    // Measured before observers run, so that the duration is the store's handling alone.
    let duration = watch.started.map { Duration.nanoseconds(Int64(bitPattern: MonotonicClock.nanoseconds() &- $0)) }
    if ranOperation {
      kind.announceFinishedOperation(of: store, for: action, hidingRunningDispatchers: hidingRunningDispatchers)
    }
    if hidingRunningDispatchers {
      ThreadContext.withoutRunning {
        tell(
          action, of: store, kind: kind, middleware: middleware, watch: watch, duration: duration, error: error,
          handle: handle)
      }
    } else {
      tell(
        action, of: store, kind: kind, middleware: middleware, watch: watch, duration: duration, error: error,
        handle: handle)
    }
  }

  /// Tells every middleware's `didDispatch`.
  private static func tell(
    _ action: any ActionType, of store: AnyObject, kind: StoreKind, middleware: MiddlewareList.Borrowed,
    watch: Watch, duration: Duration?, error: (any Error)?, handle: DispatchHandle?
  ) {
    if middleware.onlyHook, let hook = middleware.hook {
      hook.didHandle()
      return
    }
    var transaction = Transaction(
      id: watch.id, dispatchID: watch.dispatchID, storeIdentifier: kind.identifier(of: store), action: action,
      finished: true, duration: duration, error: error)
    if let handle { transaction.wasCancelled = handle.isCancelled }
    kind.tell(middleware, about: transaction, in: store)
  }
}
