import Dispatch
import Synchronization

/// One dispatch of one action, as prepared and run: its stores, their actions, the middleware and the placement.
///
/// ``prepare(dispatcher:storeIdentifier:action:placement:handle:)`` makes it; ``start(graph:context:completion:)``
/// starts each store once the stores it waits for finished, tells middleware, and reports one result when every
/// store finished.
///
/// Every store starts through one step, ``startStore(_:of:kind:context:blockedBy:)``: begin the transaction, have
/// the store handle the action, and end the transaction if that finished. The run keeps its state on the
/// dispatching thread, and allocates nothing of its own, while every operation finishes within its start (most
/// do). When one is still running after its start, or the run must hop to the main queue, the state moves into a
/// ``Shared`` run, which the operation tells when it finishes and which other threads reach under a lock.
///
/// Not generic: the library is not specialised for the app's types, and generic state here would make every
/// dispatch look its metadata up at run time.
struct DispatchRun: Sendable {
  /// Asked, when a store is about to start, whether it is still registered; not retained: the dispatching thread's
  /// caller holds the dispatcher, and a run that outlives the call retains it (``Shared``).
  let dispatcher: Unmanaged<Dispatcher>
  /// ``Dispatcher/unregistrations`` when the stores were looked up: while it is unchanged, every store is.
  let unregistrations: UInt64
  /// What every store handles, unless `actions` says otherwise.
  let action: any ActionType
  /// Each store's action, where one maps the dispatched action to an action of its own and the dispatched action is
  /// needed too (several stores, or a hook); otherwise `nil`.
  let actions: [any ActionType]?
  /// The registry's list when the dispatch was prepared, retained for this dispatch only: once
  /// `unregister(middleware:)` returned, only dispatches already running hold a middleware it removed.
  let middleware: MiddlewareList
  let placement: Placement
  /// The responding stores, one per node.
  let targets: Targets
  /// The dispatch's handle, if it has one: a cancelled one starts no more stores.
  let handle: DispatchHandle?
  /// The identifier every transaction of a run of several stores shares (``Transaction/dispatchID``), when middleware
  /// watches it; `nil` otherwise, and a one-store dispatch's transaction identifies its dispatch.
  let dispatchID: TransactionID?

  var dispatcherID: ObjectIdentifier {
    @inline(__always) get { ObjectIdentifier(dispatcher._withUnsafeGuaranteedRef { $0 }) }
  }

  /// Calls `body` with the action as the store of node `index` handles it, borrowed: returning the existential
  /// would copy it, and destroy the copy, once per store and use.
  @inline(__always)
  func withAction<Result>(of index: Int, _ body: (any ActionType) -> Result) -> Result {
    guard let actions else { return body(action) }
    return actions.withUnsafeBufferPointer { body($0[index]) }
  }

  /// The dispatched action, if the store of node `index` handles an action it mapped that one to.
  func dispatchedAction(ifMappedAt index: Int) -> (any ActionType)? {
    guard actions != nil, withAction(of: index, { $0.routingType != action.routingType }) else { return nil }
    return action
  }

  // MARK: - Running

  /// Runs the dispatch from the calling thread.
  ///
  /// Reports `.finished` if every store finished before this returned; otherwise asks `makeCompletion` for the
  /// completion to call later (`nil`: wait here, and report `.finished`).
  /// - Parameters:
  ///   - graph: The run's wait graph, if any store waits.
  ///   - context: The calling thread's context.
  @inline(__always)
  func start(
    graph: consuming WaitGraph?, context: ThreadContext, completion makeCompletion: () -> Dispatcher.Completion?
  ) -> DispatchRun.Outcome {
    if let handle, handle.allOrNothing { return startHolding(graph: graph, completion: makeCompletion) }
    if let mainQueue = placement.queueToHopTo {
      var state = DispatchStateMachine.start(count: targets.count, graph: graph)
      state.runStarted()
      let shared = Shared(run: self, state: state, onComplete: makeCompletion())
      mainQueue.schedule { shared.startReady() }
      return shared.outcome()
    }
    if graph == nil, targets.all == nil {
      return runOne(context: context, makeCompletion: makeCompletion)
    }
    return runSeveral(graph: graph, context: context, makeCompletion: makeCompletion)
  }

  /// Runs an all-or-nothing dispatch: it takes every store first (``Reservation``), then starts them as a shared
  /// run, where its work is placed; if any fails, the run puts back each store it changed before it completes.
  @inline(never)
  private func startHolding(
    graph: consuming WaitGraph?, completion makeCompletion: () -> Dispatcher.Completion?
  ) -> DispatchRun.Outcome {
    // Every all-or-nothing dispatch has a handle, whose identifier its transactions share.
    let reservation = Reservation(
      targets: targets, placement: placement, dispatchID: dispatchID ?? TransactionID.next(),
      dispatcherQueue: dispatcher._withUnsafeGuaranteedRef { $0.mainQueue },
      insideOperations: handle?.insideOperations ?? [])
    var state = DispatchStateMachine.start(count: targets.count, graph: graph)
    state.endsLater = true
    state.runStarted()
    let shared = Shared(run: self, state: state, onComplete: makeCompletion(), reservation: reservation)
    let acquisition = reservation.acquire { refusal in
      if let refusal {
        shared.giveUp(self.failure(refusing: refusal, reservation))
      } else {
        shared.startReadyWhenPlaced()
      }
    }
    switch acquisition {
    case .held: shared.startReadyWhenPlaced()
    case .waiting:
      // A lane's job: the jobs of the holder it queued behind no longer wait behind it on the lane.
      if let lane = runningLane(), let holder = reservation.holderWaitedFor {
        lane.parked(behind: holder, waiter: reservation, dispatcher: dispatcher._withUnsafeGuaranteedRef { $0 })
      }
    case .refused(let refusal): return .finished(.failure(failure(refusing: refusal, reservation)))
    }
    return shared.outcome()
  }

  /// The lane of this run's dispatcher whose job the calling thread runs, if any: not one of another dispatcher, whose
  /// job made this dispatch from user code.
  private func runningLane() -> Lane? {
    guard let lane = ThreadContext.withCurrent({ $0.runningLane }) else { return nil }
    let owns = dispatcher._withUnsafeGuaranteedRef { $0.serialLane === lane || $0.mainLane === lane }
    return owns ? lane : nil
  }

  /// What an all-or-nothing dispatch whose reservation gave up fails with: no store started.
  private func failure(refusing refusal: Reservation.Refusal, _ reservation: Reservation) -> DispatchError {
    switch refusal {
    case .enclosing(let holder):
      // It would wait for the dispatch it was made inside, which may be waiting for it.
      return .dependencyCycle([reservation.dispatchID, holder.dispatchID, reservation.dispatchID])
    case .blocksMainQueue:
      return .reentrantSynchronousDispatch(actionType: withAction(of: 0) { String(reflecting: type(of: $0)) })
    case .cycle(let path):
      return .dependencyCycle(path)
    }
  }

  /// Runs a dispatch of one store that waits for nobody (most dispatches): no state to keep but the result.
  @inline(__always)
  private func runOne(
    context: ThreadContext, makeCompletion: () -> Dispatcher.Completion?
  ) -> DispatchRun.Outcome {
    let started = targets.first.withKind { startStore(0, of: $1, kind: $0, context: context, blockedBy: nil) }
    let shared: Shared
    // Consumed: nothing here holds the operation while this thread waits for it.
    switch consume started {
    case .finished(nil):
      return .finished(.success(()))
    case .finished(let failure?):
      return .finished(.failure(.operationsFailed([failure])))
    case .running(let running):
      shared = share(running, state: DispatchStateMachine.start(count: 1, graph: nil), onComplete: makeCompletion())
    }
    return shared.outcome()
  }

  /// Runs a dispatch of several stores, or of stores that wait: the dispatching thread starts every ready store, in
  /// order, keeping the state to itself until an operation is still running after its start.
  private func runSeveral(
    graph: consuming WaitGraph?, context: ThreadContext, makeCompletion: () -> Dispatcher.Completion?
  ) -> DispatchRun.Outcome {
    var state = DispatchStateMachine.start(count: targets.count, graph: graph)
    state.runStarted()
    var next = state.nextReadyAlone()
    var shared: Shared?
    while let node = next {
      let started = targets.withEntry(at: node) { kind, store in
        startStore(node, of: store, kind: kind, context: context, blockedBy: state.failedTarget(of: node))
      }
      // Consumed: nothing here holds the operation while this thread waits for it.
      switch consume started {
      case .finished(let failure):
        next = state.storeFinishedAlone(node, failure: failure) ?? state.nextReadyAlone()
      case .running(let running):
        // This thread stays the starter.
        state.sharedByStarter(ObjectIdentifier(context))
        shared = share(running, state: state, onComplete: makeCompletion())
        next = nil
      }
    }
    if let shared {
      // It starts what is ready, now under the lock.
      shared.keepStarting(context: context)
      return shared.outcome()
    }
    guard let result = state.result else { preconditionFailure("DispatchStore: a run ended with stores unfinished") }
    return .finished(result)
  }

  /// Moves `state`, which this thread held alone, into a shared run, and registers that run with the operation
  /// still running.
  ///
  /// The operation is consumed here: released before the caller waits, so that one dropped without finishing fails
  /// from its `deinit` rather than leaving the caller waiting.
  private func share(
    _ running: consuming RunningStore, state: consuming DispatchStateMachine, onComplete: Dispatcher.Completion?
  ) -> Shared {
    if let watch = running.watch { state.storeRunning(running.index, watch: watch) }
    let shared = Shared(run: self, state: state, onComplete: onComplete)
    running.operation.start(notifying: shared, token: running.index)
    return shared
  }

  // MARK: - One store

  /// How starting one store ended.
  enum StoreStart {
    /// It finished, or did not start, with its failure if it failed.
    case finished(OperationFailure?)
    /// Its operation is still running, and nobody is registered to hear it finish yet.
    case running(RunningStore)
  }

  /// A store whose operation is still running after its start.
  struct RunningStore {
    let index: Int
    let operation: any OperationStarting
    /// Its transaction, if middleware watches it.
    let watch: StoreTransaction.Watch?
  }

  /// Starts the store of node `index`: begins its transaction, has the store handle the action with this
  /// dispatcher marked as running on this thread, and, if that finished, ends the transaction.
  ///
  /// The operation is started with nobody to tell; one still running when its start returns is returned, for the
  /// caller to register the run with it (``DispatchRun/Shared``).
  /// - Parameter target: The node the store waits for that failed, if one did: the store then does not start.
  @inline(__always)
  func startStore(
    _ index: Int, of store: AnyObject, kind: StoreKind, context: ThreadContext, blockedBy target: Int?
  ) -> StoreStart {
    if skips(store, kind: kind) { return .finished(nil) }
    if let target { return .finished(waitTargetFailure(index, of: store, kind: kind, target: target)) }
    var watch: StoreTransaction.Watch?
    var hooked: HookedTransaction?
    if !middleware.isEmpty {
      let began = withAction(of: index) { action in
        StoreTransaction.begin(
          action, of: store, kind: kind, middleware: middleware.borrowed, context: context, dispatchID: dispatchID)
      }
      hooked = began.hooked(middleware.borrowed, dispatched: dispatchedAction(ifMappedAt: index))
      watch = began
    }
    switch handleStore(index, of: store, kind: kind, context: context, hooked: hooked) {
    case .done(let error, let ranOperation):
      return .finished(end(index, of: store, kind: kind, watch: watch, error: error, ranOperation: ranOperation))
    case .running(let operation):
      return .running(RunningStore(index: index, operation: operation, watch: watch))
    }
  }

  /// How a store handled its action (``handleStore(_:of:kind:context:hooked:)``).
  enum Handled {
    /// It reduced the action, or its operation finished within its start; with the error, if it failed.
    case done(error: (any Error)?, ranOperation: Bool)
    /// Its operation is still running, or its start waits for an all-or-nothing dispatch holding the store.
    case running(any OperationStarting)
  }

  /// Has the store of node `index` handle its action, with this dispatcher marked as running on this thread: the
  /// store reduces it in place, or its operation starts with nobody to tell.
  @inline(__always)
  func handleStore(
    _ index: Int, of store: AnyObject, kind: StoreKind, context: ThreadContext, hooked: HookedTransaction?
  ) -> Handled {
    context.withRunning(dispatcherID) { () -> Handled in
      switch withAction(of: index, { kind.handle($0, in: store, hooked: hooked) }) {
      case .reduced(let failed):
        if let failed, let parked = failed as? ParkedStart.Parked {
          return park(parked, index, hooked: hooked)
        }
        return .done(error: failed, ranOperation: false)
      case .operation(let operation):
        // Known to the handle before it starts: a `cancel()` from the moment the operation runs tells it.
        guard let handle else {
          switch operation.startUnobserved() {
          case .succeeded: return .done(error: nil, ranOperation: true)
          case .failed(let failed): return .done(error: failed, ranOperation: true)
          case .unfinished: return .running(operation)
          }
        }
        handle.operationRunning(operation, starting: true)
        let outcome = operation.startUnobserved()
        if case .unfinished = outcome {
          handle.operationStarted(operation, finished: false)
          return .running(operation)
        }
        handle.operationStarted(operation, finished: true)
        if case .failed(let failed) = outcome { return .done(error: failed, ranOperation: true) }
        return .done(error: nil, ranOperation: true)
      }
    }
  }

  /// The start of node `index` waits for the all-or-nothing dispatch holding its store.
  ///
  /// It runs as an operation that finishes later (``ParkedStart``). Out of line, off the path where no store is
  /// held.
  ///
  /// The start of a `.sync` dispatch made on the main queue's thread, behind a dispatch placed on that queue, fails
  /// at once with ``DispatchError/reentrantSynchronousDispatch(actionType:)``, on whichever thread it starts: its
  /// caller blocks the thread the holder needs to end. (The parked start is then never set up, so it never runs.)
  @inline(never)
  private func park(_ parked: ParkedStart.Parked, _ index: Int, hooked: HookedTransaction?) -> Handled {
    if case .waitingMainQueue = placement, let holderQueue = parked.holder.mainQueue,
      holderQueue.runsOnThread(of: dispatcher._withUnsafeGuaranteedRef { $0.mainQueue })
    {
      let actionType = withAction(of: index) { String(reflecting: type(of: $0)) }
      return .done(error: DispatchError.reentrantSynchronousDispatch(actionType: actionType), ranOperation: false)
    }
    let start = parked.start
    // The all-or-nothing dispatch this start is part of, if any: it still passes that one's stores when it resumes.
    start.setUp(run: self, index: index, hooked: hooked, admitted: ThreadContext.admission())
    handle?.operationRunning(start, starting: false)
    // A lane's job: the holder's own jobs on that lane no longer wait behind it.
    if let lane = runningLane() {
      lane.parked(behind: parked.holder, waiter: start, dispatcher: dispatcher._withUnsafeGuaranteedRef { $0 })
    }
    return .running(start)
  }

  /// Runs the start of node `index` that waited for an all-or-nothing dispatch (``ParkedStart``), on the thread its
  /// run places work on; `handler` hears it finish, as it hears an operation that finishes later.
  ///
  /// A store removed from the dispatcher while its start waited does not start (``skips(_:kind:)``): its transaction,
  /// which middleware saw begin, fails with ``DispatchError/unknownStore(identifier:)``; a cancelled dispatch's, with
  /// ``DispatchError/cancelled``.
  func resume(_ index: Int, hooked: HookedTransaction?, notifying handler: any OperationCompletionHandler) {
    let handled = ThreadContext.withCurrent { context in
      targets.withEntry(at: index) { kind, store -> Handled in
        if skips(store, kind: kind) {
          let cancelled = handle?.isCancelled == true
          let error = cancelled ? DispatchError.cancelled : .unknownStore(identifier: kind.identifier(of: store))
          return .done(error: error, ranOperation: false)
        }
        return handleStore(index, of: store, kind: kind, context: context, hooked: hooked)
      }
    }
    switch handled {
    case .done(let error, _): handler.operationFinished(token: index, error: error)
    case .running(let operation): operation.start(notifying: handler, token: index)
    }
  }

  /// Ends the transaction of the store of node `index` (``StoreTransaction``); returns its failure, if any.
  /// - Parameter hidingRunningDispatchers: `false` where the caller already hid them from user code.
  @inline(__always)
  func end(
    _ index: Int, of store: AnyObject, kind: StoreKind, watch: StoreTransaction.Watch?, error: (any Error)?,
    ranOperation: Bool, hidingRunningDispatchers: Bool = true
  ) -> OperationFailure? {
    withAction(of: index) { action in
      StoreTransaction.end(
        action, of: store, kind: kind, middleware: middleware.borrowed, watch: watch, error: error,
        ranOperation: ranOperation, hidingRunningDispatchers: hidingRunningDispatchers, handle: handle)
    }
  }

  /// Whether `store` does not start in this dispatch: the dispatch was cancelled, or the store was removed from the
  /// dispatcher after the dispatch was prepared.
  ///
  /// A removed store does not start, as Flux skips a callback removed during a dispatch; a cancelled dispatch starts
  /// no more stores (its handle already reported it). While there is no handle and no store was removed since the
  /// dispatch was prepared, this is one atomic load.
  @inline(__always)
  private func skips(_ store: AnyObject, kind: StoreKind) -> Bool {
    if let handle = handle, handle.isCancelled { return true }
    let unchanged = dispatcher._withUnsafeGuaranteedRef {
      $0.unregistrations.load(ordering: .relaxed) == unregistrations
    }
    guard !unchanged else { return false }
    let identifier = kind.identifier(of: store)
    return dispatcher._withUnsafeGuaranteedRef { $0.registry.withLock { $0.stores[identifier]?.store !== store } }
  }

  /// The failure of the store of node `index`, which does not start: node `target`, which it waits for, failed.
  ///
  /// It has no transaction: middleware never saw it begin. Out of line, off the path where nothing fails.
  @inline(never)
  private func waitTargetFailure(_ index: Int, of store: AnyObject, kind: StoreKind, target: Int) -> OperationFailure {
    let identifier = kind.identifier(of: store)
    let waitsFor = targets.withEntry(at: target) { kind, store in kind.identifier(of: store) }
    return OperationFailure(
      storeIdentifier: identifier, transactionID: dispatchID ?? TransactionID.next(),
      error: DispatchError.waitTargetFailed(storeIdentifier: identifier, waitsFor: waitsFor))
  }
}

// MARK: - Shared

extension DispatchRun {
  /// A run that other threads reach: the operations still running after their start tell it when they finish, and
  /// it starts the stores waiting for them.
  ///
  /// All mutable state is in `state`, a ``DispatchStateMachine`` whose events decide under the lock what the run
  /// then does; user code (middleware, reducers, operations, observers, the completion) is only called after the
  /// lock was released.
  final class Shared: OperationCompletionHandler {
    private let run: DispatchRun
    /// Keeps the dispatcher, which `run` does not retain, while the run lasts.
    private let owner: Dispatcher
    let onComplete: Dispatcher.Completion?
    private let state: LockedValue<DispatchStateMachine>
    /// A node made ready by an operation that finished on the starting thread, inside its start: the starting
    /// thread takes it next without taking the lock again.
    ///
    /// `nonisolated(unsafe)`: only the starter reads or writes it (a finishing thread writes it only when it is
    /// the starter, checked under the lock).
    nonisolated(unsafe) private var handoff: Int?
    /// Set, under the state's lock, once a store failed: from then on a node is checked for a failed wait target
    /// before it starts (``DispatchStateMachine/failedTarget(of:)``).
    private let storeFailed: Atomic<Bool>
    /// The stores an all-or-nothing dispatch holds, released when its last store finished.
    private let reservation: Reservation?
    /// The all-or-nothing dispatch whose held stores this run's starts pass: its own, or the one it was dispatched
    /// from (``ThreadContext/admission()``), taken from the thread that shared the run; `nil` for neither.
    private let reserving: Reservation?

    /// Shares `state`, which the thread that made it held alone until now.
    init(
      run: DispatchRun, state: consuming DispatchStateMachine, onComplete: Dispatcher.Completion?,
      reservation: Reservation? = nil
    ) {
      self.run = run
      self.owner = run.dispatcher.takeUnretainedValue()
      self.onComplete = onComplete
      self.reservation = reservation
      self.reserving = reservation ?? ThreadContext.admission()
      self.storeFailed = Atomic(!state.failures.isEmpty)
      self.state = LockedValue(state)
    }

    /// What the thread that shared the run reports: `.later` if a completion hears the result, otherwise the
    /// result, once every store finished.
    func outcome() -> DispatchRun.Outcome {
      onComplete == nil ? .finished(waitForResult()) : .later
    }

    /// Blocks the calling thread until the run completed; returns at once if it already has.
    private func waitForResult() -> Result<Void, DispatchError> {
      switch state.withLock({ $0.resultAwaited() }) {
      case .done(let result):
        return result
      case .wait(let semaphore):
        ThreadContext.blocking { semaphore.wait() }
        guard let result = state.withLock({ $0.result }) else {
          preconditionFailure("DispatchStore: a run was woken before it completed")
        }
        return result
      }
    }

    // MARK: Starting

    /// Starts the ready stores, and any that become ready meanwhile, on this thread, unless another thread is
    /// already doing so (it then starts them too, in order).
    func startReady() {
      // The thread's context is looked up once, for every store this thread starts.
      ThreadContext.withCurrent { context in
        let me = ObjectIdentifier(context)
        guard let first = state.withLock({ $0.startRequested(by: me) }) else { return }
        keepStarting(from: first, context: context)
      }
    }

    /// Continues as the starter that shared the run: starts the next ready store, if any, and every store that
    /// becomes ready after it.
    func keepStarting(context: ThreadContext) {
      guard let next = nextToStart() else { return }
      keepStarting(from: next, context: context)
    }

    /// Starts `first`, then every store that becomes ready, until none is; the calling thread is the starter.
    private func keepStarting(from first: Int, context: ThreadContext) {
      // The stores an all-or-nothing dispatch holds let the starts of this thread through; this run's only: a run
      // started here by another's operation, which finished on this thread, is not part of that one.
      let outer = context.reserving
      context.reserving = reserving
      defer { context.reserving = outer }
      var next: Int? = first
      run.targets.withUnsafeBufferPointer { targets in
        while let node = next {
          targets.withEntry(at: node) { kind, store in start(node, of: store, kind: kind, context: context) }
          next = nextToStart()
        }
      }
    }

    /// The store the starter starts next: the one handed off to it, or the first ready; `nil` ends its turn.
    private func nextToStart() -> Int? {
      if let handedOff = handoff {
        handoff = nil
        return handedOff
      }
      return state.withLock { $0.starterNeedsNext() }
    }

    /// Starts the store of node `index` (``DispatchRun/startStore(_:of:kind:context:blockedBy:)``).
    private func start(_ index: Int, of store: AnyObject, kind: StoreKind, context: ThreadContext) {
      let target = storeFailed.load(ordering: .relaxed) ? state.withLock { $0.failedTarget(of: index) } : nil
      switch run.startStore(index, of: store, kind: kind, context: context, blockedBy: target) {
      case .finished(let failure):
        storeFinished(index, failure: failure, onStartingThread: true)
      case .running(let running):
        if let watch = running.watch { state.withLock { $0.storeRunning(index, watch: watch) } }
        running.operation.start(notifying: self, token: index)
      }
    }

    func startReadyWhenPlaced() {
      if let mainQueue = run.placement.queueToHopTo {
        mainQueue.schedule { [self] in startReady() }
      } else {
        startReady()
      }
    }

    // MARK: Finishing

    /// An operation that was still running after its start finished.
    func operationFinished(token index: Int, error: (any Error)?) {
      // `finish()` is often called from inside the operation's block: what follows (observers, middleware, the
      // completion) is not part of the operation, so `.sync` dispatch is allowed there.
      ThreadContext.withoutRunning {
        let watch = run.middleware.isEmpty ? nil : state.withLock { $0.watch(of: index) }
        let failure = run.targets.withEntry(at: index) { kind, store in
          run.end(
            index, of: store, kind: kind, watch: watch, error: error, ranOperation: true,
            hidingRunningDispatchers: false)
        }
        storeFinished(index, failure: failure, onStartingThread: false)
      }
    }

    /// Counts the store of node `index` as finished, starts the stores that made ready, and completes the run
    /// after the last.
    ///
    /// `onStartingThread`: called by the starter, right after this store's start returned.
    private func storeFinished(_ index: Int, failure: OperationFailure?, onStartingThread: Bool) {
      let me = onStartingThread ? nil : ThreadContext.withCurrent { ObjectIdentifier($0) }
      let after = state.withLock { state in
        if failure != nil { storeFailed.store(true, ordering: .relaxed) }
        // `handoff` is only touched by the starter, and here for it, under this lock: read only if this thread is
        // the starter (the machine asks then alone).
        let after = state.storeFinished(index, failure: failure, on: me, mayHandOff: handoff == nil)
        if let handedOff = after.handedOff { handoff = handedOff }
        return after
      }
      if after.startsReady { startReadyWhenPlaced() }
      if let ending = after.ending, let reservation {
        // An all-or-nothing dispatch: its stores are put back if it failed, and released, before anyone hears it.
        let result = ThreadContext.withCurrent { context in
          let outer = context.reserving
          context.reserving = nil
          defer { context.reserving = outer }
          return context.withoutRunningDispatchers { reservation.end(with: ending, run: run) }
        }
        let waiter = state.withLock { $0.ended(with: result) }
        return ThreadContext.withoutRunning { complete(with: result, waking: waiter) }
      }
      // Once per run: the result is final, and whoever waits for it registered under the lock.
      guard let (result, waiter) = after.completion else { return }
      if onStartingThread {
        ThreadContext.withoutRunning { complete(with: result, waking: waiter) }
      } else {
        complete(with: result, waking: waiter)
      }
    }

    /// An all-or-nothing dispatch's reservation gave up, on a background thread, before any store started: the run
    /// ends with `error`.
    func giveUp(_ error: DispatchError) {
      let result = Result<Void, DispatchError>.failure(error)
      let waiter = state.withLock { $0.ended(with: result) }
      ThreadContext.withoutRunning { complete(with: result, waking: waiter) }
    }

    private func complete(with result: Result<Void, DispatchError>, waking waiter: DispatchSemaphore?) {
      waiter?.signal()
      guard let onComplete else { return }
      if let mainQueue = run.placement.queueToHopTo {
        mainQueue.schedule { onComplete(result) }
      } else {
        onComplete(result)
      }
    }
  }
}
