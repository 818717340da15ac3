import Dispatch

/// One dispatch of one action to its responding stores: starts each store's operation once the stores it waits
/// for finished, tells middleware, and reports one result when every operation finished.
///
/// All mutable state is in `state`; user code (middleware, reducers, operations, observers, the completion) is
/// only called after the lock was released. While the thread that made the run is the only one that can reach it,
/// that thread keeps the state out of the lock instead (``startAlone(context:)``). The run is not generic: the
/// library is not specialised for the app's types, and generic state here would make every dispatch look its
/// metadata up at run time.
final class DispatchRun: OperationCompletionHandler {
  /// Where operations start.
  enum Placement: Sendable {
    /// On whichever thread makes them ready: the caller, or the thread that finished a store waited for.
    case anyThread
    /// On the main queue's thread.
    case main(MainQueue)
  }

  /// What middleware needs to know about one store's transaction.
  ///
  /// The stores themselves are in `targets`, readable without the lock; how many stores each waits for is counted
  /// down in `graph`.
  struct Node: Sendable {
    /// Assigned when the operation starts if middleware will see the transaction, otherwise only if it fails:
    /// with nobody watching, a dispatch reads no clock.
    var transactionID: TransactionID?
    /// `MonotonicClock` nanoseconds when the operation started, if a middleware needs the duration.
    var started: UInt64?
  }

  struct State: Sendable {
    /// One per store when there is middleware; otherwise empty.
    var nodes: [Node]
    /// Who waits for whom, counted down as stores finish; `nil` when nobody waits.
    var graph: WaitGraph?
    var unfinished: Int
    var failures: [(node: Int, failure: OperationFailure)] = []
    /// Nodes ready to start, taken by the thread in `isStarting`; this keeps long wait chains off the stack.
    var ready = ReadyQueue()
    var isStarting = false
    /// The thread in `isStarting`, by its ``ThreadContext``.
    var starter: ObjectIdentifier?
    var result: Result<Void, DispatchError>?
    var waiter: DispatchSemaphore?

    /// Counts node `index` as finished, with its failure if it failed; sets the result once every node finished.
    ///
    /// With `takeFirstReady`, the first node it makes ready is returned rather than queued, if no other node is
    /// ready (nodes start in the order they became ready); `madeReady` says whether any was queued.
    @inline(__always)
    mutating func finish(
      _ index: Int, failure: OperationFailure?, takeFirstReady: Bool
    ) -> (handedOff: Int?, madeReady: Bool, completed: Bool) {
      if let failure { failures.append((index, failure)) }
      let (handedOff, madeReady) = graph?.nodeFinished(index, into: &ready, takeFirst: takeFirstReady) ?? (nil, false)
      unfinished -= 1
      guard unfinished == 0 else { return (handedOff, madeReady, false) }
      result =
        failures.isEmpty
        ? .success(()) : .failure(.operationsFailed(failures.sorted { $0.node < $1.node }.map(\.failure)))
      return (handedOff, madeReady, true)
    }
  }

  /// The stores (one per node), action, middleware and placement; immutable, so read without the lock.
  ///
  /// Kept whole, as it was prepared, so that starting a run copies (and later releases) none of its parts.
  private let plan: Plan
  let onComplete: (@Sendable (Result<Void, DispatchError>) -> Void)?
  private let state: LockedValue<State>
  /// A node made ready by an operation that finished on the starting thread, inside its start: the starting thread
  /// takes it next without taking the lock again.
  ///
  /// `nonisolated(unsafe)`: only the thread in `State.isStarting` reads or writes it (a finishing thread writes it
  /// only when it is that thread, checked under the lock).
  nonisolated(unsafe) private var handoff: Int?

  /// What a prepared dispatch runs.
  enum Prepared {
    /// One store that waits for nobody: run by ``SingleStoreDispatch``, without a run object.
    /// The dispatch calls its middleware through a borrowed view of `middleware`, which the caller keeps until the
    /// dispatch returned (what outlives it takes an owned copy).
    case single(SingleStoreDispatch, middleware: MiddlewareList)
    /// Everything else: a run, once given its completion.
    case run(Plan)
  }

  /// A run's stores, wait graph and middleware, checked and ready to start.
  struct Plan {
    /// Asked, when a store is about to start, whether it is still registered; retained by the plan (``owner``),
    /// read without retaining it again.
    fileprivate let dispatcher: Unmanaged<Dispatcher>
    /// Keeps `dispatcher` alive while the run lasts.
    fileprivate let owner: Dispatcher
    /// ``Dispatcher/unregistrations`` when the stores were looked up: while it is unchanged, every store is.
    fileprivate let unregistrations: UInt64
    fileprivate let dispatcherID: ObjectIdentifier
    fileprivate let action: any ActionType
    /// Each store's action, where one maps the dispatched action to an action of its own; `nil` when none does.
    fileprivate let actions: [any ActionType]?
    fileprivate let middleware: MiddlewareList
    fileprivate let placement: Placement
    /// The responding stores, one per node: the registry's own array when the action's route is used whole.
    fileprivate let targets: [StoreEntry]
    /// Moved into the run's state when it starts, so that counting down does not copy it.
    fileprivate var graph: WaitGraph?

    /// Calls `body` with the action as the store of node `index` handles it, borrowed: returning the existential
    /// would copy it, and destroy the copy, once per store and use.
    @inline(__always)
    fileprivate func withAction<Result>(of index: Int, _ body: (any ActionType) -> Result) -> Result {
      guard let actions else { return body(action) }
      return actions.withUnsafeBufferPointer { body($0[index]) }
    }
  }

  /// Prepares a dispatch, or returns the error that forbids running any operation.
  ///
  /// The stores and their wait targets are decided against one state of the registry. If a store is registered or
  /// removed while the reducers' wait lists are being asked (user code, outside the lock), and a wait target is
  /// not among the responding stores, the dispatch is prepared again: a store registered meanwhile either takes
  /// part or is known not to handle the action.
  static func prepare(
    dispatcher: Dispatcher,
    storeIdentifier: String?,
    action: any ActionType,
    placement: Placement,
    context: ThreadContext
  ) throws(DispatchError) -> Prepared {
    let actionType = action.routingType
    // The registry's list as it is now, retained for this dispatch only: once `unregister(middleware:)` returned,
    // only dispatches already running hold a middleware it removed.
    var middleware = MiddlewareList()
    var lookupGeneration: UInt64 = 0
    var unregistrations: UInt64 = 0
    // The store named, or the only store handling the action; or every store handling it.
    let lookup = dispatcher.registry.withLock { registry -> StoreLookup in
      middleware = registry.middleware
      lookupGeneration = registry.generation
      unregistrations = registry.unregistrations
      guard let storeIdentifier else { return registry.routes.lookup(actionType, generation: registry.generation) }
      return StoreLookup(registry.stores[storeIdentifier])
    }
    let targets: [StoreEntry]
    // The wait list of the first store, once asked.
    var firstWaits: [String]?
    // The route's cached wait graph, valid while the registry stays at `generation`.
    var cached: (graph: CachedWaitGraph?, generation: UInt64)?
    // Each store's action, where a store maps the dispatched action to one of its own (app-wide actions).
    var actions: [any ActionType]?
    // Consumed, so that the stores are moved out rather than retained again.
    switch consume lookup {
    case .one(let store):
      if store.actionType == actionType {
        // The common case: one store of the action's own type, given `action` itself (no copy of the existential).
        let waits = store.withKind { $0.waitList(of: $1, for: action) }
        if waits.isEmpty {
          return .single(
            SingleStoreDispatch(
              store: store, action: action, dispatcherID: ObjectIdentifier(dispatcher),
              middleware: middleware.borrowed, placement: placement),
            middleware: middleware)
        }
        firstWaits = waits
      } else {
        guard let mapped = store.withKind({ $0.storeAction(for: action, in: $1) }) else {
          throw .actionTypeMismatch(
            storeIdentifier: storeIdentifier ?? store.identifier,
            expected: String(reflecting: store.anyStore.actionType), dispatched: String(reflecting: type(of: action)))
        }
        let waits = store.withKind { $0.waitList(of: $1, for: mapped) }
        if waits.isEmpty {
          return .single(
            SingleStoreDispatch(
              store: store, action: mapped, dispatcherID: ObjectIdentifier(dispatcher),
              middleware: middleware.borrowed, placement: placement),
            middleware: middleware)
        }
        firstWaits = waits
        actions = [mapped]
      }
      targets = [store]
    case .several(let stores, let graph, let generation):
      targets = stores
      cached = (graph, generation)
      // User code (the stores' mappings), outside the lock; nothing is made unless a store maps the action.
      stores.withUnsafeBufferPointer { stores in
        for index in stores.indices where stores[index].actionType != actionType {
          let mapped = stores.withEntry(at: index) { $0.storeAction(for: action, in: $1) }
          if actions == nil { actions = Array(repeating: action, count: stores.count) }
          actions?[index] = mapped ?? action
        }
      }
    case .none:
      if let storeIdentifier { throw .unknownStore(identifier: storeIdentifier) }
      throw .noRespondingStore(actionType: String(reflecting: type(of: action)))
    }
    // The graph kept from an earlier dispatch, while the registry is unchanged.
    let kept = cached.flatMap { cached in cached.graph.flatMap { $0.generation == cached.generation ? $0 : nil } }
    // Reducers' wait lists are user code: asked outside the registry lock. Each list is compared with the kept
    // graph's as it comes; arrays are only made when the lists differ from it and someone waits.
    var matchesKept = kept != nil
    var waitLists: [[String]]?
    // The stores are borrowed from one buffer for the whole loop: per store, the buffer or the store would be
    // retained and released.
    targets.withUnsafeBufferPointer { targets in
      for index in targets.indices {
        // User code: each reducer is asked once.
        let waits: [String]
        if index == 0, let firstWaits {
          waits = firstWaits
        } else if let actions {
          waits = actions.withUnsafeBufferPointer { actions in
            targets.withEntry(at: index) { $0.waitList(of: $1, for: actions[index]) }
          }
        } else {
          // `action` itself: `actions?[index] ?? action` would copy the existential for every store.
          waits = targets.withEntry(at: index) { $0.waitList(of: $1, for: action) }
        }
        if matchesKept, let kept {
          if kept.waitLists[index] == waits { continue }
          // The lists so far were the kept graph's.
          matchesKept = false
          waitLists = Array(kept.waitLists[..<index]) + Array(repeating: [], count: targets.count - index)
        }
        guard !waits.isEmpty else { continue }
        if waitLists == nil { waitLists = Array(repeating: [], count: targets.count) }
        waitLists?[index] = waits
      }
    }
    let graph: WaitGraph?
    if matchesKept, let kept {
      // The same stores gave the same wait lists with the registry unchanged: the same graph.
      graph = kept.graph
    } else if let waitLists {
      let identifiers = targets.map(\.identifier)
      // Asked only about identifiers that no responding store has: about the registry the stores came from.
      var registryChanged = false
      let isRegistered = { (identifier: String) -> Bool in
        dispatcher.registry.withLock { registry in
          guard registry.generation == lookupGeneration else {
            registryChanged = true
            return true
          }
          return registry.stores[identifier] != nil
        }
      }
      let outcome = WaitGraph.make(identifiers: identifiers, waitLists: waitLists, isRegistered: isRegistered)
      if registryChanged {
        return try prepare(
          dispatcher: dispatcher, storeIdentifier: storeIdentifier, action: action, placement: placement,
          context: context)
      }
      let made: WaitGraph
      switch outcome {
      case .failure(let error):
        throw error
      case .success(let graph):
        made = graph
      }
      if let cached {
        let entry = CachedWaitGraph(generation: cached.generation, waitLists: waitLists, graph: made)
        let replaced = dispatcher.registry.withLock { registry in
          registry.generation == cached.generation ? registry.routes.cache(entry, for: actionType) : nil
        }
        withExtendedLifetime(replaced) {}  // Released here, after the lock.
      }
      graph = made
    } else {
      graph = nil
    }
    return .run(
      Plan(
        dispatcher: Unmanaged.passUnretained(dispatcher), owner: dispatcher, unregistrations: unregistrations,
        dispatcherID: ObjectIdentifier(dispatcher),
        action: action, actions: actions, middleware: middleware,
        placement: placement, targets: targets, graph: graph))
  }

  /// Makes the run of `plan`; `onComplete` hears its result (with none, call ``waitForResult()``).
  init(plan: consuming Plan, onComplete: (@Sendable (Result<Void, DispatchError>) -> Void)?) {
    var graph: WaitGraph?
    swap(&graph, &plan.graph)
    self.onComplete = onComplete
    let nodes = plan.middleware.isEmpty ? [] : Array(repeating: Node(), count: plan.targets.count)
    self.state = LockedValue(State(nodes: nodes, graph: graph, unfinished: plan.targets.count))
    self.plan = plan
  }

  /// Starts every store that waits for nobody.
  func start() {
    if case .main(let mainQueue) = plan.placement, !mainQueue.isCurrent {
      state.withLock { state in
        for index in 0..<plan.targets.count where (state.graph?.waitCount(of: index) ?? 0) == 0 {
          state.ready.append(index)
        }
      }
      mainQueue.schedule { [self] in startReady() }
      return
    }
    ThreadContext.withCurrent { context in startAlone(context: context) }
  }

  /// Blocks the calling thread until the run completed; returns at once if it already has.
  func waitForResult() -> Result<Void, DispatchError> {
    let semaphore = state.withLock { state -> DispatchSemaphore? in
      guard state.result == nil else { return nil }
      let semaphore = DispatchSemaphore(value: 0)
      state.waiter = semaphore
      return semaphore
    }
    semaphore?.wait()
    return state.withLock { $0.result! }
  }

  // MARK: - Starting operations

  private func startReadyWhenPlaced() {
    if case .main(let mainQueue) = plan.placement, !mainQueue.isCurrent {
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
    let first = state.withLock { state -> Int? in
      guard !state.isStarting, let first = state.ready.popFirst() else { return nil }
      state.isStarting = true
      state.starter = me
      return first
    }
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
    return state.withLock { state -> Int? in
      if let next = state.ready.popFirst() { return next }
      state.isStarting = false
      state.starter = nil
      return nil
    }
  }

  /// Starts the run on the thread that made it, which nobody else knows of yet: until an operation is still
  /// running when its start returns, this thread keeps the run's state to itself and takes no lock.
  ///
  /// Most runs end here, every operation having finished on this thread. If one has not, the state is put back
  /// behind the lock before the run is registered with that operation, and the run goes on as usual.
  private func startAlone(context: ThreadContext) {
    var alone = state.withLock { state in
      var taken = State(nodes: [], graph: nil, unfinished: 0)
      swap(&taken, &state)
      return taken
    }
    for index in 0..<plan.targets.count where (alone.graph?.waitCount(of: index) ?? 0) == 0 {
      alone.ready.append(index)
    }
    var next = alone.ready.popFirst()
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
        next = handedOff ?? alone.ready.popFirst()
      }
    }
    if shared {
      if let next = nextToStart() { keepStarting(from: next, context: context) }
      return
    }
    // Every operation finished on this thread. `waitForResult()` reads the result under the lock.
    guard let result = alone.result else { preconditionFailure("DispatchStore: a run ended with nodes unfinished") }
    state.withLock { $0.result = result }
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
    _ index: Int, of store: AnyObject, kind: StoreKind, context: ThreadContext, state alone: inout State
  ) -> AloneStep {
    if wasUnregistered(store, kind: kind) {
      return .finished(handedOff: alone.finish(index, failure: nil, takeFirstReady: true).handedOff)
    }
    if !plan.middleware.isEmpty {
      alone.nodes[index] = tellMiddlewareStarting(index, of: store, kind: kind, context: context)
    }
    let me = ObjectIdentifier(context)
    let outcome = handle(index, of: store, kind: kind, context: context) {
      // Back behind the lock before anyone else can reach the run: its completion may come at once.
      alone.isStarting = true
      alone.starter = me
      let published = alone
      state.withLock { $0 = published }
    }
    let error: (any Error)?
    switch outcome {
    case .unfinished: return .shared
    case .succeeded: error = nil
    case .failed(let failed): error = failed
    }
    let watch = alone.nodes.isEmpty ? nil : alone.nodes[index]
    let assignedID = announce(
      index, of: store, kind: kind, error: error, watch: watch, hidingRunningDispatchers: true)
    let failure = error.map {
      OperationFailure(
        storeIdentifier: kind.identifier(of: store), transactionID: assignedID ?? TransactionID.next(), error: $0)
    }
    return .finished(handedOff: alone.finish(index, failure: failure, takeFirstReady: true).handedOff)
  }

  private func startOperation(_ index: Int, of store: AnyObject, kind: StoreKind, context: ThreadContext) {
    if wasUnregistered(store, kind: kind) {
      return afterOperationFinished(index, of: store, kind: kind, error: nil, onStartingThread: true, skipped: true)
    }
    if !plan.middleware.isEmpty {
      let node = tellMiddlewareStarting(index, of: store, kind: kind, context: context)
      state.withLock { $0.nodes[index] = node }
    }
    let outcome = handle(index, of: store, kind: kind, context: context) {}
    switch outcome {
    case .unfinished: break
    case .succeeded: afterOperationFinished(index, of: store, kind: kind, error: nil, onStartingThread: true)
    case .failed(let error):
      afterOperationFinished(index, of: store, kind: kind, error: error, onStartingThread: true)
    }
  }

  /// Whether `store` was removed from the dispatcher after this dispatch was prepared.
  ///
  /// Such a store does not start, as Flux skips a callback removed during a dispatch. While no store was removed
  /// since the dispatch was prepared, this is one atomic load.
  @inline(__always)
  private func wasUnregistered(_ store: AnyObject, kind: StoreKind) -> Bool {
    let unchanged = plan.dispatcher._withUnsafeGuaranteedRef {
      $0.unregistrations.load(ordering: .relaxed) == plan.unregistrations
    }
    guard !unchanged else { return false }
    let identifier = kind.identifier(of: store)
    return plan.dispatcher._withUnsafeGuaranteedRef { $0.registry.withLock { $0.stores[identifier]?.store !== store } }
  }

  /// Takes a transaction identifier (and start time, if a middleware needs durations) for a store about to handle
  /// the action, and tells middleware; returns what the node keeps of it.
  private func tellMiddlewareStarting(
    _ index: Int, of store: AnyObject, kind: StoreKind, context: ThreadContext
  ) -> Node {
    let id = context.nextTransactionID()
    let node = Node(transactionID: id, started: plan.middleware.needsDuration ? MonotonicClock.nanoseconds() : nil)
    let transaction = plan.withAction(of: index) { action in
      Transaction(id: id, storeIdentifier: kind.identifier(of: store), action: action)
    }
    kind.tell(plan.middleware.borrowed, about: transaction, in: store)
    return node
  }

  /// Has the store handle the action, with this dispatcher marked as running on this thread.
  ///
  /// An operation is started with nobody to tell: one that finished by the time its start returned (most do) is
  /// reported here, and the run is registered only with one still running, after `beforeRegistering`. The operation
  /// is released inside, so that one dropped without finishing fails from its `deinit` there.
  private func handle(
    _ index: Int, of store: AnyObject, kind: StoreKind, context: ThreadContext, beforeRegistering: () -> Void
  ) -> OperationOutcome {
    context.withRunning(plan.dispatcherID) { () -> OperationOutcome in
      let operation: any OperationStarting
      switch plan.withAction(of: index, { kind.handle($0, in: store) }) {
      case .reduced(let error): return error.map { .failed($0) } ?? .succeeded
      case .operation(let made): operation = made
      }
      let outcome = operation.startUnobserved()
      if case .unfinished = outcome {
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
    skipped: Bool = false
  ) {
    let watch = plan.middleware.isEmpty || skipped ? nil : state.withLock { $0.nodes[index] }
    let assignedID =
      skipped
      ? nil
      : announce(
        index, of: store, kind: kind, error: error, watch: watch, hidingRunningDispatchers: onStartingThread)
    let failure = error.map {
      OperationFailure(
        storeIdentifier: kind.identifier(of: store), transactionID: assignedID ?? TransactionID.next(), error: $0)
    }
    let me = onStartingThread ? nil : ThreadContext.withCurrent { ObjectIdentifier($0) }
    let (startReady, completed) = state.withLock { state -> (Bool, Bool) in
      // A thread already starting nodes picks the new ones up: it pops them under this lock after this section,
      // or, if it is this thread (this operation finished inside or right after its start), takes the first from
      // `handoff`.
      let isStarter = onStartingThread || (me != nil && state.starter == me)
      let finished = state.finish(index, failure: failure, takeFirstReady: isStarter && handoff == nil)
      if let handedOff = finished.handedOff { handoff = handedOff }
      return (finished.madeReady && !state.isStarting, finished.completed)
    }
    if startReady { startReadyWhenPlaced() }
    guard completed else { return }
    // Once per run: the result is final, and whoever waits for it registered under the lock.
    let (result, waiter) = state.withLock { ($0.result!, $0.waiter) }
    if onStartingThread {
      ThreadContext.withoutRunning { complete(with: result, waking: waiter) }
    } else {
      complete(with: result, waking: waiter)
    }
  }

  /// Announces the store's change and tells middleware that its operation finished; returns the transaction's
  /// identifier, if middleware saw it.
  ///
  /// `hidingRunningDispatchers`: hide the dispatchers running on this thread from the user code called here;
  /// skipped when there is none to call.
  private func announce(
    _ index: Int, of store: AnyObject, kind: StoreKind, error: (any Error)?, watch: Node?,
    hidingRunningDispatchers: Bool
  ) -> TransactionID? {
    let isObserved = kind.isObserved(store)
    guard watch != nil || isObserved else { return nil }
    guard !hidingRunningDispatchers else {
      return ThreadContext.withoutRunning {
        announce(index, of: store, kind: kind, error: error, watch: watch, hidingRunningDispatchers: false)
      }
    }
    var duration: Duration?
    if let started = watch?.started {
      duration = .nanoseconds(Int64(bitPattern: MonotonicClock.nanoseconds() &- started))
    }
    if isObserved { plan.withAction(of: index) { kind.announceChange(of: store, for: $0) } }
    let assignedID = watch?.transactionID
    if let id = assignedID {
      let transaction = plan.withAction(of: index) { action in
        Transaction(
          id: id, storeIdentifier: kind.identifier(of: store), action: action, finished: true, duration: duration,
          error: error)
      }
      kind.tell(plan.middleware.borrowed, about: transaction, in: store)
    }
    return assignedID
  }

  private func complete(with result: Result<Void, DispatchError>, waking waiter: DispatchSemaphore?) {
    waiter?.signal()
    guard let onComplete else { return }
    if case .main(let mainQueue) = plan.placement, !mainQueue.isCurrent {
      mainQueue.schedule { onComplete(result) }
    } else {
      onComplete(result)
    }
  }
}
