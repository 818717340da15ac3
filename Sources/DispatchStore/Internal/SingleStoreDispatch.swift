import Dispatch
import Synchronization

/// Runs a dispatch that reaches one store that waits for nobody, with no middleware: the common case, without a
/// ``DispatchRun``.
///
/// The operation is started with nobody to notify. If it finished before `start` returned (most do), what follows
/// runs on the calling thread with no further allocation or lock beyond the operation's own. Otherwise a
/// ``SingleStoreCompletion`` is registered with the operation and takes over, exactly as a run's node would.
enum SingleStoreDispatch {
  /// Runs the dispatch.
  ///
  /// Reports `.finished` if the operation finished before its start returned; otherwise asks `completion` for the
  /// completion to call later (`nil`: wait here, and report `.finished`).
  static func run(
    store: any DispatchTarget,
    action: any ActionType,
    dispatcherID: ObjectIdentifier,
    placement: DispatchRun.Placement,
    completion makeCompletion: () -> Dispatcher.Completion?
  ) -> Dispatcher.RunOutcome {
    if case .main(let mainQueue) = placement, !mainQueue.isCurrent {
      let onComplete = makeCompletion()
      mainQueue.schedule {
        let outcome = run(
          store: store, action: action, dispatcherID: dispatcherID, placement: placement, completion: { onComplete })
        if case .finished(let result) = outcome { onComplete?(result) }
      }
      return .later
    }
    let completion: SingleStoreCompletion
    do {
      // Released at the end of this scope, before any wait: an operation dropped without finishing fails from
      // its `deinit`, which must not wait for the thread that holds it.
      let operation = ThreadContext.current.withRunning(dispatcherID) { store.startOperation(for: action) }
      if case .finished(let error) = operation.outcome {
        // Finished during `start`: the rest runs here, with nothing allocated.
        return .finished(finish(store: store, action: action, error: error))
      }
      let onComplete = makeCompletion()
      completion = SingleStoreCompletion(
        store: store, action: action, placement: placement, onComplete: onComplete, waits: onComplete == nil)
      // Registers the completion, or calls it at once if the operation finished since `outcome` was read.
      operation.start(notifying: completion, token: 0)
    }
    return completion.waitIfNeeded().map { .finished($0) } ?? .later
  }

  /// Announces the change and turns the operation's error into the dispatch's result.
  static func finish(store: any DispatchTarget, action: any ActionType, error: (any Error)?) -> Result<
    Void, DispatchError
  > {
    ThreadContext.current.withoutRunningDispatchers { store.announceChange(for: action) }
    guard let error else { return .success(()) }
    let failure = OperationFailure(storeIdentifier: store.identifier, transactionID: TransactionID.next(), error: error)
    return .failure(.operationsFailed([failure]))
  }
}

/// Receives the late finish of a single-store dispatch's operation: announces the change on the finishing thread,
/// then delivers the result to the completion or to the waiting `.sync` caller.
final class SingleStoreCompletion: OperationCompletionHandler {
  let store: any DispatchTarget
  let action: any ActionType
  let placement: DispatchRun.Placement
  let onComplete: (@Sendable (Result<Void, DispatchError>) -> Void)?
  private let waiter: DispatchSemaphore?
  private let result = Mutex<Result<Void, DispatchError>?>(nil)

  init(
    store: any DispatchTarget,
    action: any ActionType,
    placement: DispatchRun.Placement,
    onComplete: (@Sendable (Result<Void, DispatchError>) -> Void)?,
    waits: Bool
  ) {
    self.store = store
    self.action = action
    self.placement = placement
    self.onComplete = onComplete
    self.waiter = waits ? DispatchSemaphore(value: 0) : nil
  }

  func operationFinished(token: Int, error: (any Error)?) {
    let result = ThreadContext.current.withoutRunningDispatchers {
      SingleStoreDispatch.finish(store: store, action: action, error: error)
    }
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
