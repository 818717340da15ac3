import Dispatch
import Synchronization

/// A dispatch that reaches one store that waits for nobody: the common case, run without a ``DispatchRun``.
///
/// The object is both the plan and the operation's completion handler, the one allocation besides the operation.
/// It is registered before the operation starts, so the change is announced (and middleware told) on whichever
/// thread finishes the operation, exactly as in a run. When the operation finished before its start returned (most
/// do), the dispatching thread takes the result directly; otherwise it leaves a completion to call, or for `.sync`
/// a semaphore to wait on, and the finishing thread delivers there. ``Stage`` decides which, by compare-and-swap.
final class SingleStoreDispatch: OperationCompletionHandler {
  let store: any DispatchTarget
  let action: any ActionType
  let dispatcherID: ObjectIdentifier
  let middleware: MiddlewareList

  /// The identifier of the transaction middleware sees, and when its operation started.
  ///
  /// Not the ``Transaction`` itself: each middleware call gets a freshly built one, which costs less than copying
  /// one (it holds the action as an existential).
  struct Watch: Sendable {
    let id: TransactionID
    let started: UInt64
  }

  /// How far the dispatch got, readable without the lock: the common case (finished without error before the
  /// start returned) takes no lock at all.
  enum Stage: UInt8, AtomicRepresentable {
    case starting
    /// The operation finished before its start returned, successfully.
    case succeededWhileStarting
    /// The operation finished before its start returned, with `Progress.error`.
    case failedWhileStarting
    /// The start returned first: whoever finishes the operation delivers to `Progress.onComplete` or `waiter`.
    case startReturned
  }

  /// What the stages do not hold, behind the lock.
  struct Progress {
    var error: (any Error)?
    var onComplete: Dispatcher.Completion?
    var waiter: DispatchSemaphore?
    /// The result, once a late finish delivered it to the `.sync` waiter.
    var lateResult: Result<Void, DispatchError>?
  }

  let placement: DispatchRun.Placement
  private let stage = Atomic(Stage.starting)
  private let progress = Mutex(Progress())
  /// Set before the operation starts, if there is middleware; never changed after.
  ///
  /// Outside the lock: the dispatching thread writes it before it starts the operation, and a finishing thread
  /// reads it only after taking the operation's lock, which the start released after registering this handler.
  nonisolated(unsafe) private var watch: Watch?

  init(
    store: any DispatchTarget, action: any ActionType, dispatcherID: ObjectIdentifier, middleware: MiddlewareList,
    placement: DispatchRun.Placement
  ) {
    self.store = store
    self.action = action
    self.dispatcherID = dispatcherID
    self.middleware = middleware
    self.placement = placement
  }

  /// Runs the dispatch.
  ///
  /// Reports `.finished` if the operation finished before its start returned; otherwise asks `completion` for the
  /// completion to call later (`nil`: wait here, and report `.finished`).
  func run(completion makeCompletion: () -> Dispatcher.Completion?) -> Dispatcher.RunOutcome {
    if case .main(let mainQueue) = placement, !mainQueue.isCurrent {
      let onComplete = makeCompletion()
      mainQueue.schedule { [self] in
        let outcome = run(completion: { onComplete })
        if case .finished(let result) = outcome { onComplete?(result) }
      }
      return .later
    }
    begin()
    // The store releases the operation before returning: one dropped without finishing fails from its `deinit`,
    // here, rather than while this thread waits for it.
    ThreadContext.withRunning(dispatcherID) {
      store.startOperation(for: action, notifying: self, token: 0)
    }
    return startReturned(makeCompletion: makeCompletion)
  }

  /// Tells middleware that the operation is about to start.
  ///
  /// With no middleware it reads no clock.
  private func begin() {
    guard !middleware.isEmpty else { return }
    let watch = Watch(id: TransactionID.next(), started: MonotonicClock.nanoseconds())
    self.watch = watch
    let transaction = Transaction(id: watch.id, storeIdentifier: store.identifier, action: action)
    middleware.forEach { $0.willDispatch(transaction: transaction, action: action, in: store) }
  }

  func operationFinished(token: Int, error: (any Error)?) {
    let watch = self.watch
    ThreadContext.withoutRunning {
      store.announceChange(for: action)
      guard let watch else { return }
      let transaction = Transaction(
        id: watch.id, storeIdentifier: store.identifier, action: action,
        duration: .nanoseconds(Int64(bitPattern: MonotonicClock.nanoseconds() &- watch.started)), error: error)
      middleware.forEach { $0.didDispatch(transaction: transaction, action: action, in: store) }
    }
    if let error { progress.withLock(owner: self) { $0.error = error } }
    let finishedFirst = stage.compareExchange(
      expected: .starting, desired: error == nil ? .succeededWhileStarting : .failedWhileStarting,
      ordering: .acquiringAndReleasing
    ).exchanged
    // Otherwise the start returned first and left where to deliver.
    let late = finishedFirst ? nil : progress.withLock(owner: self) { ($0.onComplete, $0.waiter) }
    guard let (onComplete, waiter) = late else { return }
    let result = result(error: error, watch: watch)
    if let waiter {
      progress.withLock(owner: self) { $0.lateResult = result }
      waiter.signal()
    }
    guard let onComplete else { return }
    if case .main(let mainQueue) = placement, !mainQueue.isCurrent {
      mainQueue.schedule { onComplete(result) }
    } else {
      ThreadContext.withoutRunning { onComplete(result) }
    }
  }

  /// Called once the operation's start returned: takes the result if it finished, or leaves what the finishing
  /// thread delivers to.
  private func startReturned(makeCompletion: () -> Dispatcher.Completion?) -> Dispatcher.RunOutcome {
    switch stage.load(ordering: .acquiring) {
    case .succeededWhileStarting: return .finished(.success(()))
    case .failedWhileStarting: return .finished(failedWhileStarting())
    case .starting, .startReturned: break
    }
    let onComplete = makeCompletion()
    let waiter = onComplete == nil ? DispatchSemaphore(value: 0) : nil
    progress.withLock(owner: self) { progress in
      progress.onComplete = onComplete
      progress.waiter = waiter
    }
    let (exchanged, finished) = stage.compareExchange(
      expected: .starting, desired: .startReturned, ordering: .acquiringAndReleasing)
    if !exchanged {
      // It finished meanwhile, on another thread, which announced the change there.
      return .finished(finished == .succeededWhileStarting ? .success(()) : failedWhileStarting())
    }
    guard let waiter else { return .later }
    waiter.wait()
    guard let result = progress.withLock(owner: self, { $0.lateResult }) else {
      preconditionFailure("DispatchStore: a dispatch was woken before its operation finished")
    }
    return .finished(result)
  }

  private func failedWhileStarting() -> Result<Void, DispatchError> {
    let error = progress.withLock(owner: self) { $0.error }
    return result(error: error, watch: watch)
  }

  /// The operation's error as the dispatch's result.
  private func result(error: (any Error)?, watch: Watch?) -> Result<Void, DispatchError> {
    guard let error else { return .success(()) }
    let failure = OperationFailure(
      storeIdentifier: store.identifier, transactionID: watch?.id ?? TransactionID.next(), error: error)
    return .failure(.operationsFailed([failure]))
  }
}
