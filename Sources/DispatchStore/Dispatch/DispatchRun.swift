import Dispatch
import Synchronization

// Running a prepared dispatch: `SingleStoreDispatch` for one store that waits for nobody (most dispatches), and
// `DispatchRun` for the rest. Both take the same per-store step (`StoreTransaction`).

// MARK: - One store

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
  /// context, if the caller has it at hand; `handle` the dispatch's handle, if it has one (a parameter, not a
  /// property: each copy of the dispatch would retain and release it, `nil` or not).
  @inline(__always)
  func run(
    context: ThreadContext? = nil, handle: DispatchHandle? = nil,
    completion makeCompletion: () -> Dispatcher.Completion?
  ) -> Dispatcher.RunOutcome {
    if let mainQueue = placement.queueToHopTo {
      let onComplete = makeCompletion()
      // The hop outlives this call, and so the dispatch's loan of the middleware list: it keeps a copy of its own.
      let middlewareOwner = middleware.owned()
      mainQueue.schedule { [self] in
        let outcome = withExtendedLifetime(middlewareOwner) { run(handle: handle, completion: { onComplete }) }
        if case .finished(let result) = outcome { onComplete?(result) }
      }
      return .later
    }
    // Cancelled since it left its queue: its handle already reported it.
    if let handle, handle.isCancelled { return .finished(.failure(.cancelled)) }
    guard middleware.isEmpty else {
      return runWatched(context: context, handle: handle, makeCompletion: makeCompletion)
    }
    // Unwatched: no identifier is taken and no clock read. A path of its own, so that it carries no watch around.
    let started =
      if let context {
        context.withRunning(dispatcherID) { start(watch: nil, handle: handle, makeCompletion: makeCompletion) }
      } else {
        ThreadContext.withRunning(dispatcherID) { start(watch: nil, handle: handle, makeCompletion: makeCompletion) }
      }
    switch started {
    case .finished(let error):
      return .finished(finish(error: error, watch: nil, handle: handle))
    case .late(let late):
      return late.waitIfSynchronous()
    }
  }

  /// ``run(context:completion:)`` with middleware: the transaction is begun, shown to `willDispatch`, and ended in
  /// place for `didDispatch` (unless the operation finishes later, elsewhere).
  private func runWatched(
    context: ThreadContext?, handle: DispatchHandle?, makeCompletion: () -> Dispatcher.Completion?
  ) -> Dispatcher.RunOutcome {
    let watch = store.withKind { kind, store in
      StoreTransaction.begin(
        action, of: store, kind: kind, middleware: middleware, context: context, dispatchID: handle?.id)
    }
    let started =
      if let context {
        context.withRunning(dispatcherID) { start(watch: watch, handle: handle, makeCompletion: makeCompletion) }
      } else {
        ThreadContext.withRunning(dispatcherID) { start(watch: watch, handle: handle, makeCompletion: makeCompletion) }
      }
    switch started {
    case .finished(let error):
      return .finished(finish(error: error, watch: watch, handle: handle))
    case .late(let late):
      return late.waitIfSynchronous()
    }
  }

  /// Asks the reducer for the operation and starts it; registers a late completion if it did not finish.
  ///
  /// The operation is a local of this function: it is released before the function returns, so that one dropped
  /// without finishing fails from its `deinit`, here, rather than while the dispatching thread waits for it.
  private func start(
    watch: StoreTransaction.Watch?, handle: DispatchHandle?, makeCompletion: () -> Dispatcher.Completion?
  ) -> Started {
    let operation: any OperationStarting
    let recording = watch?.recording(middleware)
    switch store.withKind({ $0.handle(action, in: $1, recording: recording) }) {
    case .reduced(let error): return .finished(error)
    case .operation(let made): operation = made
    }
    switch operation.startUnobserved() {
    case .succeeded: return .finished(nil)
    case .failed(let error): return .finished(error)
    case .unfinished: handle?.operationRunning(operation)
    }
    let onComplete = makeCompletion()
    let late = LateCompletion(
      dispatch: self, watch: watch, handle: handle, onComplete: onComplete,
      waiter: onComplete == nil ? DispatchSemaphore(value: 0) : nil)
    operation.start(notifying: late, token: 0)
    return .late(late)
  }

  /// Ends the store's transaction (``StoreTransaction/end(_:of:kind:middleware:watch:error:hidingRunningDispatchers:)``)
  /// and returns the dispatch's result.
  @inline(__always)
  fileprivate func finish(
    error: (any Error)?, watch: StoreTransaction.Watch?, handle: DispatchHandle?
  ) -> Result<Void, DispatchError> {
    // The common case, nobody to tell and nothing failed, checked here so that it passes nothing on.
    if watch == nil, error == nil, !store.withKind({ $0.announcesWhenFinished($1) }) { return .success(()) }
    let failure = store.withKind { kind, store in
      StoreTransaction.end(
        action, of: store, kind: kind, middleware: middleware, watch: watch, error: error,
        hidingRunningDispatchers: true, handle: handle)
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
  private let handle: DispatchHandle?
  private let onComplete: Dispatcher.Completion?
  /// What a `.sync` dispatch waits on, when there is no completion.
  let waiter: DispatchSemaphore?
  /// The result, for the waiting thread.
  private let result = LockedValue<Result<Void, DispatchError>?>(nil)

  init(
    dispatch: SingleStoreDispatch, watch: StoreTransaction.Watch?, handle: DispatchHandle?,
    onComplete: Dispatcher.Completion?, waiter: DispatchSemaphore?
  ) {
    self.dispatch = dispatch
    self.middlewareOwner = dispatch.middleware.owned()
    self.watch = watch
    self.handle = handle
    self.onComplete = onComplete
    self.waiter = waiter
  }

  func operationFinished(token: Int, error: (any Error)?) {
    let result = dispatch.finish(error: error, watch: watch, handle: handle)
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

// MARK: - Several stores, or waits

/// One dispatch of one action to its responding stores: starts each store's operation once the stores it waits
/// for finished, tells middleware, and reports one result when every operation finished.
///
/// All mutable state is in `state`, a ``DispatchStateMachine`` whose events decide under the lock what the run then
/// does; user code (middleware, reducers, operations, observers, the completion) is only called after the lock was
/// released. While the thread that made the run is the only one that can reach it,
/// that thread keeps the state out of the lock instead (``startAlone(context:)``). The run is not generic: the
/// library is not specialised for the app's types, and generic state here would make every dispatch look its
/// metadata up at run time.
final class DispatchRun: OperationCompletionHandler {
  /// The stores (one per node), action, middleware and placement; immutable, so read without the lock.
  ///
  /// Kept whole, as it was prepared, so that starting a run copies (and later releases) none of its parts.
  private let plan: DispatchPlan
  let onComplete: (@Sendable (Result<Void, DispatchError>) -> Void)?
  private let state: LockedValue<DispatchStateMachine>
  /// A node made ready by an operation that finished on the starting thread, inside its start: the starting thread
  /// takes it next without taking the lock again.
  ///
  /// `nonisolated(unsafe)`: only the thread in `State.isStarting` reads or writes it (a finishing thread writes it
  /// only when it is that thread, checked under the lock).
  nonisolated(unsafe) private var handoff: Int?
  /// The identifier every transaction of the run shares (``Transaction/dispatchID``), when middleware watches it.
  private let dispatchID: TransactionID?
  /// Set, under the state's lock, once a store failed: from then on a node is checked for a failed wait target
  /// before it starts (``DispatchStateMachine/failedTarget(of:)``).
  private let storeFailed = Atomic<Bool>(false)

  /// Makes the run of `plan`; `onComplete` hears its result (with none, call ``waitForResult()``).
  init(plan: consuming DispatchPlan, onComplete: (@Sendable (Result<Void, DispatchError>) -> Void)?) {
    var graph: WaitGraph?
    swap(&graph, &plan.graph)
    self.onComplete = onComplete
    let nodes: [StoreTransaction.Watch?] =
      plan.middleware.isEmpty ? [] : Array(repeating: nil, count: plan.targets.count)
    self.state = LockedValue(DispatchStateMachine(nodes: nodes, graph: graph, unfinished: plan.targets.count))
    self.dispatchID = plan.middleware.isEmpty ? nil : plan.handle?.id ?? TransactionID.next()
    self.plan = plan
  }

  /// Starts every store that waits for nobody.
  func start() {
    if let mainQueue = plan.placement.queueToHopTo {
      state.withLock { $0.runStarted(count: plan.targets.count) }
      mainQueue.schedule { [self] in startReady() }
      return
    }
    ThreadContext.withCurrent { context in startAlone(context: context) }
  }

  /// Blocks the calling thread until the run completed; returns at once if it already has.
  func waitForResult() -> Result<Void, DispatchError> {
    switch state.withLock({ $0.resultAwaited() }) {
    case .done(let result):
      return result
    case .wait(let semaphore):
      semaphore.wait()
      guard let result = state.withLock({ $0.result }) else {
        preconditionFailure("DispatchStore: a run was woken before it completed")
      }
      return result
    }
  }

  // MARK: - Starting operations

  private func startReadyWhenPlaced() {
    if let mainQueue = plan.placement.queueToHopTo {
      mainQueue.schedule { [self] in startReady() }
    } else {
      startReady()
    }
  }

  /// Starts the ready nodes, and any that become ready meanwhile, on this thread, unless another thread is
  /// already doing so (it then starts them too, in order).
  private func startReady() {
    // The thread's context is looked up once, for every node this thread starts.
    ThreadContext.withCurrent { context in startReady(context: context) }
  }

  private func startReady(context: ThreadContext) {
    let me = ObjectIdentifier(context)
    let first = state.withLock { $0.startRequested(by: me) }
    guard let first else { return }
    keepStarting(from: first, context: context)
  }

  /// Starts `first`, then every node that becomes ready, until none is; the calling thread is the starter.
  private func keepStarting(from first: Int, context: ThreadContext) {
    var next: Int? = first
    // The stores are borrowed from one buffer while this thread starts nodes: per node, the buffer or the store
    // would be retained and released.
    plan.targets.withUnsafeBufferPointer { targets in
      while let node = next {
        targets.withEntry(at: node) { kind, store in startOperation(node, of: store, kind: kind, context: context) }
        next = nextToStart()
      }
    }
  }

  /// The node the starter starts next: the one handed off to it, or the first ready; `nil` ends its turn.
  private func nextToStart() -> Int? {
    if let handedOff = handoff {
      handoff = nil
      return handedOff
    }
    return state.withLock { $0.starterNeedsNext() }
  }

  /// Starts the run on the thread that made it, which nobody else knows of yet: until an operation is still
  /// running when its start returns, this thread keeps the run's state to itself and takes no lock.
  ///
  /// Most runs end here, every operation having finished on this thread. If one has not, the state is put back
  /// behind the lock before the run is registered with that operation, and the run goes on as usual.
  private func startAlone(context: ThreadContext) {
    var alone = state.withLock { state in
      var taken = DispatchStateMachine.empty
      swap(&taken, &state)
      return taken
    }
    alone.runStarted(count: plan.targets.count)
    var next = alone.nextReadyAlone()
    var shared = false
    plan.targets.withUnsafeBufferPointer { targets in
      while let node = next {
        let step = targets.withEntry(at: node) { kind, store in
          startAlone(node, of: store, kind: kind, context: context, state: &alone)
        }
        guard case .finished(let handedOff) = step else {
          shared = true
          return
        }
        next = handedOff ?? alone.nextReadyAlone()
      }
    }
    if shared {
      if let next = nextToStart() { keepStarting(from: next, context: context) }
      return
    }
    // Every operation finished on this thread. `waitForResult()` reads the result under the lock.
    guard let result = alone.result else { preconditionFailure("DispatchStore: a run ended with nodes unfinished") }
    state.withLock { $0.completedAlone(with: result) }
    context.withoutRunningDispatchers { complete(with: result, waking: nil) }
  }

  /// How starting one node alone ended.
  private enum AloneStep {
    /// Its operation finished; the node it made ready first, if it goes next.
    case finished(handedOff: Int?)
    /// Its operation is still running, and the state is behind the lock again.
    case shared
  }

  /// Starts one node for ``startAlone(context:)``.
  private func startAlone(
    _ index: Int, of store: AnyObject, kind: StoreKind, context: ThreadContext,
    state alone: inout DispatchStateMachine
  ) -> AloneStep {
    if skips(store, kind: kind) {
      return .finished(handedOff: alone.storeFinishedAlone(index, failure: nil))
    }
    if let target = alone.failedTarget(of: index) {
      let failure = waitTargetFailure(index, of: store, kind: kind, target: target)
      return .finished(handedOff: alone.storeFinishedAlone(index, failure: failure))
    }
    var recording: RecordingContext?
    if !plan.middleware.isEmpty {
      let watch = begin(index, of: store, kind: kind, context: context)
      alone.storeBegan(index, watch: watch)
      recording = watch.recording(plan.middleware.borrowed, dispatched: plan.dispatchedAction(ifMappedAt: index))
    }
    let me = ObjectIdentifier(context)
    let outcome = handle(index, of: store, kind: kind, context: context, recording: recording) {
      // Back behind the lock before anyone else can reach the run: its completion may come at once.
      alone.sharedByStarter(me)
      if !alone.failures.isEmpty { storeFailed.store(true, ordering: .relaxed) }
      let published = alone
      state.withLock { $0 = published }
    }
    let error: (any Error)?
    switch outcome {
    case .unfinished: return .shared
    case .succeeded: error = nil
    case .failed(let failed): error = failed
    }
    let failure = end(
      index, of: store, kind: kind, watch: alone.watch(of: index), error: error,
      hidingRunningDispatchers: true)
    return .finished(handedOff: alone.storeFinishedAlone(index, failure: failure))
  }

  private func startOperation(_ index: Int, of store: AnyObject, kind: StoreKind, context: ThreadContext) {
    if skips(store, kind: kind) {
      return afterOperationFinished(index, of: store, kind: kind, error: nil, onStartingThread: true, skipped: true)
    }
    if storeFailed.load(ordering: .relaxed), let target = state.withLock({ $0.failedTarget(of: index) }) {
      return afterOperationFinished(
        index, of: store, kind: kind, error: nil, onStartingThread: true, skipped: true,
        failure: waitTargetFailure(index, of: store, kind: kind, target: target))
    }
    var recording: RecordingContext?
    if !plan.middleware.isEmpty {
      let watch = begin(index, of: store, kind: kind, context: context)
      state.withLock { $0.storeBegan(index, watch: watch) }
      recording = watch.recording(plan.middleware.borrowed, dispatched: plan.dispatchedAction(ifMappedAt: index))
    }
    let outcome = handle(index, of: store, kind: kind, context: context, recording: recording) {}
    switch outcome {
    case .unfinished: break
    case .succeeded: afterOperationFinished(index, of: store, kind: kind, error: nil, onStartingThread: true)
    case .failed(let error):
      afterOperationFinished(index, of: store, kind: kind, error: error, onStartingThread: true)
    }
  }

  /// The failure of the store of node `index`, which does not start: node `target`, which it waits for, failed.
  ///
  /// It has no transaction: middleware never saw it begin. Out of line, off the path where nothing fails.
  @inline(never)
  private func waitTargetFailure(_ index: Int, of store: AnyObject, kind: StoreKind, target: Int) -> OperationFailure {
    let identifier = kind.identifier(of: store)
    let waitsFor = plan.targets.withEntry(at: target) { kind, store in kind.identifier(of: store) }
    return OperationFailure(
      storeIdentifier: identifier, transactionID: dispatchID ?? plan.handle?.id ?? TransactionID.next(),
      error: DispatchError.waitTargetFailed(storeIdentifier: identifier, waitsFor: waitsFor))
  }

  /// Whether `store` does not start in this dispatch: the dispatch was cancelled, or the store was removed from the
  /// dispatcher after the dispatch was prepared.
  ///
  /// A removed store does not start, as Flux skips a callback removed during a dispatch; a cancelled dispatch starts
  /// no more stores (its handle already reported it). While there is no handle and no store was removed since the
  /// dispatch was prepared, this is one atomic load.
  @inline(__always)
  private func skips(_ store: AnyObject, kind: StoreKind) -> Bool {
    if let handle = plan.handle, handle.isCancelled { return true }
    let unchanged = plan.dispatcher._withUnsafeGuaranteedRef {
      $0.unregistrations.load(ordering: .relaxed) == plan.unregistrations
    }
    guard !unchanged else { return false }
    let identifier = kind.identifier(of: store)
    return plan.dispatcher._withUnsafeGuaranteedRef { $0.registry.withLock { $0.stores[identifier]?.store !== store } }
  }

  /// Begins the transaction of the store of node `index` (``StoreTransaction``).
  private func begin(_ index: Int, of store: AnyObject, kind: StoreKind, context: ThreadContext)
    -> StoreTransaction.Watch
  {
    plan.withAction(of: index) { action in
      StoreTransaction.begin(
        action, of: store, kind: kind, middleware: plan.middleware.borrowed, context: context, dispatchID: dispatchID)
    }
  }

  /// Ends the transaction of the store of node `index` (``StoreTransaction``); returns its failure, if any.
  private func end(
    _ index: Int, of store: AnyObject, kind: StoreKind, watch: StoreTransaction.Watch?, error: (any Error)?,
    hidingRunningDispatchers: Bool
  ) -> OperationFailure? {
    plan.withAction(of: index) { action in
      StoreTransaction.end(
        action, of: store, kind: kind, middleware: plan.middleware.borrowed, watch: watch, error: error,
        hidingRunningDispatchers: hidingRunningDispatchers, handle: plan.handle)
    }
  }

  /// Has the store handle the action, with this dispatcher marked as running on this thread.
  ///
  /// An operation is started with nobody to tell: one that finished by the time its start returned (most do) is
  /// reported here, and the run is registered only with one still running, after `beforeRegistering`. The operation
  /// is released inside, so that one dropped without finishing fails from its `deinit` there.
  private func handle(
    _ index: Int, of store: AnyObject, kind: StoreKind, context: ThreadContext, recording: RecordingContext?,
    beforeRegistering: () -> Void
  ) -> OperationOutcome {
    context.withRunning(plan.dispatcherID) { () -> OperationOutcome in
      let operation: any OperationStarting
      switch plan.withAction(of: index, { kind.handle($0, in: store, recording: recording) }) {
      case .reduced(let error): return error.map { .failed($0) } ?? .succeeded
      case .operation(let made): operation = made
      }
      let outcome = operation.startUnobserved()
      if case .unfinished = outcome {
        plan.handle?.operationRunning(operation)
        beforeRegistering()
        operation.start(notifying: self, token: index)
      }
      return outcome
    }
  }

  // MARK: - Finishing

  /// An operation that did not finish while starting finished.
  func operationFinished(token index: Int, error: (any Error)?) {
    // `finish()` is often called from inside the operation's block: what follows (observers, middleware, the
    // completion) is not part of the operation, so `.sync` dispatch is allowed there.
    ThreadContext.withoutRunning {
      plan.targets.withEntry(at: index) { kind, store in
        afterOperationFinished(index, of: store, kind: kind, error: error, onStartingThread: false)
      }
    }
  }

  /// Announces the change, tells middleware, and counts the store as finished.
  ///
  /// `onStartingThread`: called by the thread that is starting nodes, right after this node's start returned.
  private func afterOperationFinished(
    _ index: Int, of store: AnyObject, kind: StoreKind, error: (any Error)?, onStartingThread: Bool,
    skipped: Bool = false, failure skippedFailure: OperationFailure? = nil
  ) {
    var failure = skippedFailure
    if !skipped {
      let watch = plan.middleware.isEmpty ? nil : state.withLock { $0.watch(of: index) }
      failure = end(
        index, of: store, kind: kind, watch: watch, error: error, hidingRunningDispatchers: onStartingThread)
    }
    let me = onStartingThread ? nil : ThreadContext.withCurrent { ObjectIdentifier($0) }
    let after = state.withLock { state in
      if failure != nil { storeFailed.store(true, ordering: .relaxed) }
      // `handoff` is only touched by the starter, and here for it, under this lock.
      let after = state.storeFinished(index, failure: failure, on: me, mayHandOff: handoff == nil)
      if let handedOff = after.handedOff { handoff = handedOff }
      return after
    }
    if after.startsReady { startReadyWhenPlaced() }
    // Once per run: the result is final, and whoever waits for it registered under the lock.
    guard let (result, waiter) = after.completion else { return }
    if onStartingThread {
      ThreadContext.withoutRunning { complete(with: result, waking: waiter) }
    } else {
      complete(with: result, waking: waiter)
    }
  }

  private func complete(with result: Result<Void, DispatchError>, waking waiter: DispatchSemaphore?) {
    waiter?.signal()
    guard let onComplete else { return }
    if let mainQueue = plan.placement.queueToHopTo {
      mainQueue.schedule { onComplete(result) }
    } else {
      onComplete(result)
    }
  }
}

extension DispatchRun {
  /// Where a dispatch's operations start and its completion runs: the one place that decides whether work hops to
  /// the main queue.
  enum Placement: Sendable {
    /// On whichever thread makes them ready: the caller, or the thread that finished a store waited for.
    case anyThread
    /// On the main queue's thread.
    case main(MainQueue)

    /// The main queue that work placed here must be scheduled on first, or `nil` if it runs on the calling thread:
    /// placed anywhere, or on the main queue while this thread runs its work.
    @inline(__always)
    var queueToHopTo: MainQueue? {
      guard case .main(let mainQueue) = self, !mainQueue.isCurrent else { return nil }
      return mainQueue
    }
  }
}
