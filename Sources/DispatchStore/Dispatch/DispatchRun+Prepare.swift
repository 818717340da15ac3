/// Preparing a dispatch: the stores that handle the action (its own type's and those that map it), each store's
/// action, the wait graph, and the middleware the dispatch calls; or the error that forbids running anything.
///
/// Everything here runs before the first store starts, on the dispatching thread. Reducers' wait lists and action
/// mappings are user code: they are asked outside the registry's lock.
extension DispatchRun {
  /// How a started dispatch ended, as far as the thread that started it knows.
  enum Outcome {
    /// Finished with this result; no completion was called.
    case finished(Result<Void, DispatchError>)
    /// Finishes later; the completion `run` was given reports it.
    case later
  }

  /// Where every dispatch path, once placed, hands its action over: prepares the dispatch, then starts it.
  ///
  /// A dispatch that finishes before its start returns (or fails to start) reports `.finished`; nothing else
  /// hears about it. Otherwise `completion` is asked for what will: `nil` makes this wait and return `.finished`,
  /// which `.sync` does. A completion is only made (allocated) when it is needed.
  /// - Parameters:
  ///   - context: The calling thread's context.
  ///   - handle: The dispatch's handle, if it has one.
  @inline(__always)
  static func run(
    dispatcher: Dispatcher,
    storeIdentifier: String?,
    action: any ActionType,
    placement: Placement,
    context: ThreadContext,
    handle: DispatchHandle? = nil,
    completion: () -> Dispatcher.Completion?
  ) -> Outcome {
    do {
      let (run, graph) = try prepare(
        dispatcher: dispatcher, storeIdentifier: storeIdentifier, action: action, placement: placement, handle: handle)
      return run.start(graph: graph, context: context, completion: completion)
    } catch {
      return .finished(.failure(error))
    }
  }

  /// Prepares a dispatch, or returns the error that forbids running any operation: the run, and its wait graph if
  /// any store waits, apart so that the run's state can own it (``start(graph:context:completion:)``).
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
    handle: DispatchHandle?
  ) throws(DispatchError) -> (run: DispatchRun, graph: WaitGraph?) {
    let actionType = action.routingType
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
    // The common case: one store of the action's own type, given `action` itself (no copy of the existential),
    // which waits for nobody: no graph to make. Consumed, so that the store is moved out rather than retained again.
    switch consume lookup {
    case .one(let store):
      var firstWaits: [String]?
      if store.actionType == actionType {
        let waits = store.withKind { $0.waitList(of: $1, for: action) }
        if waits.isEmpty {
          return (
            alone(
              store, action: action, dispatcher: dispatcher, unregistrations: unregistrations,
              middleware: middleware, placement: placement, handle: handle),
            nil
          )
        }
        firstWaits = waits
      }
      return try prepare(
        .one(store), firstWaits: firstWaits, dispatcher: dispatcher, storeIdentifier: storeIdentifier, action: action,
        placement: placement, handle: handle, middleware: middleware, lookupGeneration: lookupGeneration,
        unregistrations: unregistrations)
    case .several(let stores, let graph, let generation):
      return try prepare(
        .several(stores, waitGraph: graph, generation: generation), firstWaits: nil, dispatcher: dispatcher,
        storeIdentifier: storeIdentifier, action: action, placement: placement, handle: handle, middleware: middleware,
        lookupGeneration: lookupGeneration, unregistrations: unregistrations)
    case .none:
      if let storeIdentifier { throw .unknownStore(identifier: storeIdentifier) }
      throw .noRespondingStore(actionType: String(reflecting: type(of: action)))
    }
  }

  /// The run of one store that waits for nobody, given the action it handles: it needs no graph.
  @inline(__always)
  private static func alone(
    _ store: consuming StoreEntry, action: any ActionType, dispatcher: Dispatcher, unregistrations: UInt64,
    middleware: MiddlewareList, placement: Placement, handle: DispatchHandle?
  ) -> DispatchRun {
    DispatchRun(
      dispatcher: Unmanaged.passUnretained(dispatcher), unregistrations: unregistrations, action: action,
      actions: nil, middleware: middleware, placement: placement, targets: .one(store), handle: handle,
      dispatchID: handle?.id)
  }

  /// Prepares every dispatch but the common one: stores that map the action, several stores, or stores that wait.
  ///
  /// Out of line, so that ``prepare(dispatcher:storeIdentifier:action:placement:handle:)`` stays small.
  /// - Parameter firstWaits: The wait list of the one store in `lookup`, if it was asked already.
  @inline(never)
  private static func prepare(
    _ lookup: consuming StoreLookup, firstWaits: [String]?, dispatcher: Dispatcher, storeIdentifier: String?,
    action: any ActionType, placement: Placement, handle: DispatchHandle?, middleware: MiddlewareList,
    lookupGeneration: UInt64, unregistrations: UInt64
  ) throws(DispatchError) -> (run: DispatchRun, graph: WaitGraph?) {
    let actionType = action.routingType
    let targets: Targets
    var firstWaits = firstWaits
    // The route's cached wait graph, valid while the registry stays at `generation`.
    var cached: (graph: CachedWaitGraph?, generation: UInt64)?
    // Each store's action, where a store maps the dispatched action to one of its own (app-wide actions).
    var actions: [any ActionType]?
    switch consume lookup {
    case .one(let store):
      // A store of the action's own type had its wait list asked above.
      if store.actionType != actionType {
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
        // The same as the common case, given the store's own action: a hook is also told the dispatched one
        // (``TransactionHook/noteDispatchedAction(_:of:)``), which `actions` keeps beside it.
        if waits.isEmpty, middleware.borrowed.hook == nil {
          return (
            alone(
              store, action: mapped, dispatcher: dispatcher, unregistrations: unregistrations,
              middleware: middleware, placement: placement, handle: handle),
            nil
          )
        }
        firstWaits = waits
        actions = [mapped]
      }
      targets = .one(store)
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
        targets = .several(stores)
        cached = (graph, generation)
      } else {
        // Stores whose mapping declined the action take no part: without them the route's kept graph does not
        // apply, and the graph is made for this dispatch.
        let kept = stores.indices.filter { !declined.contains($0) }
        guard !kept.isEmpty else { throw .noRespondingStore(actionType: String(reflecting: type(of: action))) }
        targets = kept.count == 1 ? .one(stores[kept[0]]) : .several(kept.map { stores[$0] })
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
      let identifiers = targets.identifiers
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
          handle: handle)
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
    let run = DispatchRun(
      dispatcher: Unmanaged.passUnretained(dispatcher), unregistrations: unregistrations, action: action,
      actions: actions, middleware: middleware, placement: placement, targets: targets, handle: handle,
      dispatchID: middleware.isEmpty || targets.count == 1 ? handle?.id : handle?.id ?? TransactionID.next())
    return (run, graph)
  }
}
