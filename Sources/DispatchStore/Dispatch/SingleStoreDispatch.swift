import Dispatch

/// A dispatch that reaches one store that waits for nobody: the common case, run without a ``DispatchRun`` and,
/// when the operation finishes before its start returns (most do), without allocating anything of its own.
///
/// The operation is started with nobody registered to hear it finish. If it finished by the time its start
/// returned, the dispatching thread announces the change, tells middleware and takes the result. Otherwise it
/// makes a ``LateCompletion``, which knows where the result goes (a completion, or a semaphore `.sync` waits on),
/// and registers it with the operation: whichever thread finishes the operation then announces and delivers, and
/// if the operation finished in between, registering calls it at once.
struct SingleStoreDispatch: Sendable {
  let store: StoreEntry
  let action: any ActionType
  let dispatcherID: ObjectIdentifier
  /// The registry's list when the dispatch was prepared, borrowed: valid while the dispatch runs on its thread
  /// (``Dispatcher`` keeps the list meanwhile); what outlives that keeps an owned copy (``MiddlewareList/Borrowed/owned()``).
  let middleware: MiddlewareList.Borrowed
  let placement: DispatchRun.Placement

  /// How the operation's start ended.
  private enum Started {
    /// It finished, with this error if it failed.
    case finished((any Error)?)
    /// It is still running; the late completion hears when it finishes.
    case late(LateCompletion)
  }

  /// Runs the dispatch.
  ///
  /// Reports `.finished` if the operation finished before its start returned; otherwise asks `completion` for the
  /// completion to call later (`nil`: wait here, and report `.finished`). `context` is the calling thread's
  /// context, if the caller has it at hand.
  func run(context: ThreadContext? = nil, completion makeCompletion: () -> Dispatcher.Completion?)
    -> Dispatcher.RunOutcome
  {
    if let mainQueue = placement.queueToHopTo {
      let onComplete = makeCompletion()
      // The hop outlives this call, and so the dispatch's loan of the middleware list: it keeps a copy of its own.
      let middlewareOwner = middleware.owned()
      mainQueue.schedule { [self] in
        let outcome = withExtendedLifetime(middlewareOwner) { run(completion: { onComplete }) }
        if case .finished(let result) = outcome { onComplete?(result) }
      }
      return .later
    }
    guard middleware.isEmpty else { return runWatched(context: context, makeCompletion: makeCompletion) }
    // Unwatched: no identifier is taken and no clock read. A path of its own, so that it carries no watch around.
    let started =
      if let context {
        context.withRunning(dispatcherID) { start(watch: nil, makeCompletion: makeCompletion) }
      } else {
        ThreadContext.withRunning(dispatcherID) { start(watch: nil, makeCompletion: makeCompletion) }
      }
    switch started {
    case .finished(let error):
      return .finished(finish(error: error, watch: nil))
    case .late(let late):
      return late.waitIfSynchronous()
    }
  }

  /// ``run(context:completion:)`` with middleware: the transaction is begun, shown to `willDispatch`, and ended in
  /// place for `didDispatch` (unless the operation finishes later, elsewhere).
  private func runWatched(context: ThreadContext?, makeCompletion: () -> Dispatcher.Completion?)
    -> Dispatcher.RunOutcome
  {
    let watch = store.withKind { kind, store in
      StoreTransaction.begin(action, of: store, kind: kind, middleware: middleware, context: context)
    }
    let started =
      if let context {
        context.withRunning(dispatcherID) { start(watch: watch, makeCompletion: makeCompletion) }
      } else {
        ThreadContext.withRunning(dispatcherID) { start(watch: watch, makeCompletion: makeCompletion) }
      }
    switch started {
    case .finished(let error):
      return .finished(finish(error: error, watch: watch))
    case .late(let late):
      return late.waitIfSynchronous()
    }
  }

  /// Asks the reducer for the operation and starts it; registers a late completion if it did not finish.
  ///
  /// The operation is a local of this function: it is released before the function returns, so that one dropped
  /// without finishing fails from its `deinit`, here, rather than while the dispatching thread waits for it.
  private func start(watch: StoreTransaction.Watch?, makeCompletion: () -> Dispatcher.Completion?) -> Started {
    let operation: any OperationStarting
    switch store.withKind({ $0.handle(action, in: $1) }) {
    case .reduced(let error): return .finished(error)
    case .operation(let made): operation = made
    }
    switch operation.startUnobserved() {
    case .succeeded: return .finished(nil)
    case .failed(let error): return .finished(error)
    case .unfinished: break
    }
    let onComplete = makeCompletion()
    let late = LateCompletion(
      dispatch: self, watch: watch, onComplete: onComplete,
      waiter: onComplete == nil ? DispatchSemaphore(value: 0) : nil)
    operation.start(notifying: late, token: 0)
    return .late(late)
  }

  /// Ends the store's transaction (``StoreTransaction/end(_:of:kind:middleware:watch:error:hidingRunningDispatchers:)``)
  /// and returns the dispatch's result.
  @inline(__always)
  fileprivate func finish(error: (any Error)?, watch: StoreTransaction.Watch?) -> Result<Void, DispatchError> {
    // The common case, nobody to tell and nothing failed, checked here so that it passes nothing on.
    if watch == nil, error == nil, !store.withKind({ $0.announcesWhenFinished($1) }) { return .success(()) }
    let failure = store.withKind { kind, store in
      StoreTransaction.end(
        action, of: store, kind: kind, middleware: middleware, watch: watch, error: error,
        hidingRunningDispatchers: true)
    }
    guard let failure else { return .success(()) }
    return .failure(.operationsFailed([failure]))
  }
}

/// Hears about an operation of a ``SingleStoreDispatch`` that did not finish before its start returned, and
/// delivers its result: to the completion, or to the `.sync` caller waiting on `waiter`.
final class LateCompletion: OperationCompletionHandler {
  private let dispatch: SingleStoreDispatch
  /// Keeps the list `dispatch.middleware` views: the completion outlives the dispatch's loan of it.
  private let middlewareOwner: MiddlewareList
  private let watch: StoreTransaction.Watch?
  private let onComplete: Dispatcher.Completion?
  /// What a `.sync` dispatch waits on, when there is no completion.
  let waiter: DispatchSemaphore?
  /// The result, for the waiting thread.
  private let result = LockedValue<Result<Void, DispatchError>?>(nil)

  init(
    dispatch: SingleStoreDispatch, watch: StoreTransaction.Watch?, onComplete: Dispatcher.Completion?,
    waiter: DispatchSemaphore?
  ) {
    self.dispatch = dispatch
    self.middlewareOwner = dispatch.middleware.owned()
    self.watch = watch
    self.onComplete = onComplete
    self.waiter = waiter
  }

  func operationFinished(token: Int, error: (any Error)?) {
    let result = dispatch.finish(error: error, watch: watch)
    if let waiter {
      self.result.withLock { $0 = result }
      waiter.signal()
    }
    guard let onComplete else { return }
    if let mainQueue = dispatch.placement.queueToHopTo {
      mainQueue.schedule { onComplete(result) }
    } else {
      ThreadContext.withoutRunning { onComplete(result) }
    }
  }

  /// For a `.sync` dispatch (there is a waiter), waits for the result; otherwise the completion reports it.
  func waitIfSynchronous() -> Dispatcher.RunOutcome {
    guard let waiter else { return .later }
    waiter.wait()
    return .finished(takeResult())
  }

  /// The result, once `waiter` was signalled.
  func takeResult() -> Result<Void, DispatchError> {
    guard let result = result.withLock({ $0 }) else {
      preconditionFailure("DispatchStore: a dispatch was woken before its operation finished")
    }
    return result
  }
}
