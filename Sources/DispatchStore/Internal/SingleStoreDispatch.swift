import Dispatch
import Synchronization

/// A dispatch that reaches one store that waits for nobody: the common case, run without a ``DispatchRun``.
///
/// The operation is started with nobody to notify. If it finished before `start` returned (most do), what follows
/// runs on the calling thread with no further allocation or lock beyond the operation's own. Otherwise a
/// ``SingleStoreCompletion`` is registered with the operation and takes over, exactly as a run's node would.
struct SingleStoreDispatch: Sendable {
  let store: any DispatchTarget
  let action: any ActionType
  let dispatcherID: ObjectIdentifier
  let middleware: [any Middleware]

  /// The identifier of the transaction middleware sees, and when its operation started.
  ///
  /// Not the ``Transaction`` itself: each middleware call gets a freshly built one, which costs less than copying
  /// one (it holds the action as an existential).
  struct Watch: Sendable {
    let id: TransactionID
    let started: UInt64
  }

  init(store: any DispatchTarget, action: any ActionType, dispatcherID: ObjectIdentifier, middleware: [any Middleware])
  {
    self.store = store
    self.action = action
    self.dispatcherID = dispatcherID
    self.middleware = middleware
  }

  /// Runs the dispatch.
  ///
  /// Reports `.finished` if the operation finished before its start returned; otherwise asks `completion` for the
  /// completion to call later (`nil`: wait here, and report `.finished`).
  @inline(__always)
  func run(
    placement: DispatchRun.Placement,
    completion makeCompletion: () -> Dispatcher.Completion?
  ) -> Dispatcher.RunOutcome {
    if case .main(let mainQueue) = placement, !mainQueue.isCurrent {
      let onComplete = makeCompletion()
      let dispatch = self
      mainQueue.schedule {
        let outcome = dispatch.run(placement: placement, completion: { onComplete })
        if case .finished(let result) = outcome { onComplete?(result) }
      }
      return .later
    }
    let watch = begin()
    let completion: SingleStoreCompletion
    do {
      // Released at the end of this scope, before any wait: an operation dropped without finishing fails from
      // its `deinit`, which must not wait for the thread that holds it.
      let operation = ThreadContext.current.withRunning(dispatcherID) { [store, action] in
        store.startOperation(for: action)
      }
      if case .finished(let error) = operation.outcome {
        // Finished during `start`: the rest runs here, with nothing allocated.
        return .finished(finish(error: error, watch: watch))
      }
      let onComplete = makeCompletion()
      completion = SingleStoreCompletion(
        dispatch: self, watch: watch, placement: placement, onComplete: onComplete, waits: onComplete == nil)
      // Registers the completion, or calls it at once if the operation finished since `outcome` was read.
      operation.start(notifying: completion, token: 0)
    }
    return completion.waitIfNeeded().map { .finished($0) } ?? .later
  }

  /// Tells middleware that the operation is about to start.
  ///
  /// With no middleware it reads no clock and returns `nil`.
  @inline(__always)
  private func begin() -> Watch? {
    guard !middleware.isEmpty else { return nil }
    let watch = Watch(id: TransactionID.next(), started: MonotonicClock.nanoseconds())
    let transaction = Transaction(id: watch.id, storeIdentifier: store.identifier, action: action)
    for middleware in middleware {
      middleware.willDispatch(transaction: transaction, action: action, in: store)
    }
    return watch
  }

  /// Announces the change, tells middleware, and turns the operation's error into the dispatch's result.
  func finish(error: (any Error)?, watch: Watch?) -> Result<Void, DispatchError> {
    ThreadContext.current.withoutRunningDispatchers {
      store.announceChange(for: action)
      guard let watch else { return }
      let transaction = Transaction(
        id: watch.id, storeIdentifier: store.identifier, action: action,
        duration: .nanoseconds(Int64(bitPattern: MonotonicClock.nanoseconds() &- watch.started)), error: error)
      for middleware in middleware {
        middleware.didDispatch(transaction: transaction, action: action, in: store)
      }
    }
    guard let error else { return .success(()) }
    let failure = OperationFailure(
      storeIdentifier: store.identifier, transactionID: watch?.id ?? TransactionID.next(), error: error)
    return .failure(.operationsFailed([failure]))
  }
}

/// Receives the late finish of a single-store dispatch's operation: announces the change on the finishing thread,
/// then delivers the result to the completion or to the waiting `.sync` caller.
final class SingleStoreCompletion: OperationCompletionHandler {
  let dispatch: SingleStoreDispatch
  let watch: SingleStoreDispatch.Watch?
  let placement: DispatchRun.Placement
  let onComplete: (@Sendable (Result<Void, DispatchError>) -> Void)?
  private let waiter: DispatchSemaphore?
  private let result = Mutex<Result<Void, DispatchError>?>(nil)

  init(
    dispatch: SingleStoreDispatch,
    watch: SingleStoreDispatch.Watch?,
    placement: DispatchRun.Placement,
    onComplete: (@Sendable (Result<Void, DispatchError>) -> Void)?,
    waits: Bool
  ) {
    self.dispatch = dispatch
    self.watch = watch
    self.placement = placement
    self.onComplete = onComplete
    self.waiter = waits ? DispatchSemaphore(value: 0) : nil
  }

  func operationFinished(token: Int, error: (any Error)?) {
    let result = dispatch.finish(error: error, watch: watch)
    self.result.withLock(owner: self) { $0 = result }
    waiter?.signal()
    guard let onComplete else { return }
    if case .main(let mainQueue) = placement, !mainQueue.isCurrent {
      mainQueue.schedule { onComplete(result) }
    } else {
      ThreadContext.current.withoutRunningDispatchers { onComplete(result) }
    }
  }

  /// For `.sync`, blocks until the operation finished and returns the result; otherwise returns `nil` at once.
  func waitIfNeeded() -> Result<Void, DispatchError>? {
    guard let waiter else { return nil }
    waiter.wait()
    return result.withLock(owner: self) { $0 }
  }
}
