/// A run's stores, wait graph and middleware, checked and ready to start.
struct DispatchPlan {
  /// Asked, when a store is about to start, whether it is still registered; retained by the plan (``owner``),
  /// read without retaining it again.
  let dispatcher: Unmanaged<Dispatcher>
  /// Keeps `dispatcher` alive while the run lasts.
  let owner: Dispatcher
  /// ``Dispatcher/unregistrations`` when the stores were looked up: while it is unchanged, every store is.
  let unregistrations: UInt64
  let dispatcherID: ObjectIdentifier
  let action: any ActionType
  /// Each store's action, where one maps the dispatched action to an action of its own; `nil` when none does.
  let actions: [any ActionType]?
  let middleware: MiddlewareList
  let placement: DispatchRun.Placement
  /// The responding stores, one per node: the registry's own array when the action's route is used whole.
  let targets: [StoreEntry]
  /// Moved into the run's state when it starts, so that counting down does not copy it.
  var graph: WaitGraph?
  /// The dispatch's handle, if it has one: a cancelled one starts no more stores.
  let handle: DispatchHandle?

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
}

/// Preparing a dispatch: the stores that handle the action (its own type's and those that map it), each store's
/// action, the wait graph, and the middleware the dispatch calls; or the error that forbids running anything.
///
/// Everything here runs before the first store starts, on the dispatching thread. Reducers' wait lists and action
/// mappings are user code: they are asked outside the registry's lock.
extension DispatchRun {
  /// What a prepared dispatch runs.
  enum Prepared {
    /// One store that waits for nobody: run by ``SingleStoreDispatch``, without a run object.
    /// The dispatch calls its middleware through a borrowed view of `middleware`, which the caller keeps until the
    /// dispatch returned (what outlives it takes an owned copy).
    case single(SingleStoreDispatch, middleware: MiddlewareList)
    /// Everything else: a run, once given its completion.
    case run(DispatchPlan)
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
    context: ThreadContext,
    handle: DispatchHandle?
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
      unregistrations = dispatcher.unregistrations.load(ordering: .relaxed)
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
        // The same as above with the store's own action. Written twice on purpose: a local function taking the
        // action made the common case above slower.
        guard let mapped = store.withKind({ $0.storeAction(for: action, in: $1) }) else {
          // The store maps the action's type, and its mapping declined this action: no store handles it.
          if store.withKind({ $0.mappedActionTypes(of: $1) }).contains(actionType) {
            throw .noRespondingStore(actionType: String(reflecting: type(of: action)))
          }
          throw .actionTypeMismatch(
            storeIdentifier: storeIdentifier ?? store.identifier,
            expected: (store.anyStore as? any TypedStore).map { String(reflecting: $0.actionType) } ?? "?",
            dispatched: String(reflecting: type(of: action)))
        }
        let waits = store.withKind { $0.waitList(of: $1, for: mapped) }
        // A recorded one runs as a plan, which keeps the dispatched action for the record.
        if waits.isEmpty, middleware.borrowed.recorder == nil {
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
      // User code (the stores' mappings), outside the lock; nothing is made unless a store maps the action.
      var declined: [Int] = []
      stores.withUnsafeBufferPointer { stores in
        for index in stores.indices where stores[index].actionType != actionType {
          let mapped = stores.withEntry(at: index) { $0.storeAction(for: action, in: $1) }
          if actions == nil { actions = Array(repeating: action, count: stores.count) }
          if let mapped { actions?[index] = mapped } else { declined.append(index) }
        }
      }
      if declined.isEmpty {
        targets = stores
        cached = (graph, generation)
      } else {
        // Stores whose mapping declined the action take no part: without them the route's kept graph does not
        // apply, and the graph is made for this dispatch.
        let kept = stores.indices.filter { !declined.contains($0) }
        guard !kept.isEmpty else { throw .noRespondingStore(actionType: String(reflecting: type(of: action))) }
        targets = kept.map { stores[$0] }
        actions = actions.map { actions in kept.map { actions[$0] } }
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
          context: context, handle: handle)
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
      DispatchPlan(
        dispatcher: Unmanaged.passUnretained(dispatcher), owner: dispatcher, unregistrations: unregistrations,
        dispatcherID: ObjectIdentifier(dispatcher),
        action: action, actions: actions, middleware: middleware,
        placement: placement, targets: targets, graph: graph, handle: handle))
  }
}
