import Foundation
import Synchronization

/// Routes actions to the stores registered with it, runs their operations in one of four ``Mode``s, and lets
/// middleware see every transaction.
///
/// ```swift
/// let dispatcher = Dispatcher()
/// try dispatcher.register(store: counter)
/// dispatcher.dispatch(action: CounterAction.increase(by: 1))  // from a button's action: fire and forget
/// try await dispatcher.dispatch(action: CounterAction.reset)  // in async code: waits, throws if it failed
/// ```
///
/// > Important: A dispatcher is safe to use from any thread. It never calls reducers, operations, observers or
/// > middleware while holding one of its locks, so they may all dispatch again (see ``Mode`` for the one rule on
/// > `.sync`).
public final class Dispatcher: Sendable {
  /// How a dispatch runs.
  public enum Mode: Sendable, Hashable, CaseIterable {
    /// Starts at once on a background thread; separate dispatches may run concurrently. The default.
    case async
    /// Runs on the calling thread and returns when every store's operation finished.
    ///
    /// > Important: Issued from inside a running operation of the same dispatcher, it fails at once with
    /// > ``DispatchError/reentrantSynchronousDispatch(actionType:)`` and runs nothing (Flux forbids cascading
    /// > dispatches). From observers, middleware and other threads it is allowed.
    case sync
    /// Joins the dispatcher's single FIFO lane: it starts after every earlier `.serial` dispatch finished.
    case serial
    /// Joins the dispatcher's main-thread FIFO lane: operations start on its ``MainQueue``, one dispatch after
    /// another.
    case mainThread
  }

  /// The thread `.mainThread` dispatches and main-thread observer notifications run on.
  public let mainQueue: MainQueue
  /// `mainQueue`'s run-loop thread, by identity, if it is one (``isMainQueueCurrent(in:)``).
  let mainRunLoopCore: ObjectIdentifier?

  /// Awaits until every dispatch of this dispatcher in flight has ended, and what they scheduled on the main queue
  /// ran: await it before a command-line tool exits.
  ///
  /// It waits for the dispatches running or queued when it is called (`.async`, `.serial`, `.mainThread`, and any
  /// made with ``start(action:to:mode:options:)`` or ``prepare(action:to:mode:options:)`` and started), for those
  /// they start in turn (an operation's follow-ups, an observer's dispatches), including debounced ones waiting for
  /// their quiet interval on the dispatcher's clock, and for the main queue's work (``MainQueue/drain()``): pending
  /// `.mainThread` work and main-thread notifications. A dispatch cancelled after it started is waited for until its
  /// running operations returned. A `.sync` dispatch that another thread makes without a handle is that thread's to
  /// wait for.
  ///
  /// ```swift
  /// dispatcher.start(action: SyncAction.upload)  // its operation dispatches follow-ups
  /// await dispatcher.drain()  // in top-level code too: everything has run
  /// ```
  /// - Returns: `true` once nothing was in flight and the main queue had run everything; `false` at once if awaited
  ///   inside a dispatch of this dispatcher (an operation's `async` body, or a task made in it), which would wait
  ///   for itself; `false` if dispatches or main-queue work kept coming for 1,000 passes.
  ///
  /// > Important: A dispatch that never ends keeps it waiting, as it keeps its awaiters waiting: a handle started
  /// > after a dependency that is never started, a debounced dispatch on a test clock nobody advances, or a
  /// > dispatch whose own work awaits `drain()` where the library cannot tell it belongs to the dispatch (a task
  /// > that a `block` operation or an interceptor deciding later made, a detached task, or an operation of another
  /// > dispatcher started inside this one's). A handle's observers may hear its final state after `drain()`
  /// > returned, when another thread was delivering an earlier state to them.
  @discardableResult
  public func drain() async -> Bool {
    if OperationTaskScope.current?.isInside(ObjectIdentifier(self)) == true { return false }
    for _ in 0..<MainQueue.drainPassLimit {
      await inFlight.idle()
      let ended = inFlight.now.ended
      guard await mainQueue.drain() else { return false }
      // Nothing in flight, and nothing ended during the main queue's drain: what the dispatches scheduled there
      // before they ended ran.
      if inFlight.now == (true, ended) { return true }
    }
    return false
  }

  /// Blocks the calling thread until every dispatch of this dispatcher in flight has ended, and what they scheduled
  /// on the main queue ran, as ``drain()`` waits: for synchronous code, such as a tool whose top-level code never
  /// awaits.
  /// - Returns: `false` at once if called where a dispatch of this dispatcher runs it (a reducer, an operation's
  ///   start or `async` body, an observer hearing a change made there), or from the main queue's own work, which
  ///   cannot wait for itself; `false` if dispatches or main-queue work kept coming for 1,000 passes.
  ///
  /// > Important: Unavailable in `async` code, top-level code that awaits included: there, `await drain()`. As for
  /// > ``drain()``, a dispatch that never ends keeps it waiting. Call it from your own code, not from middleware, an
  /// > interceptor, `onUnheardFailure`, a handle's observer, an observer hearing an operation's change, or a thread
  /// > an operation waits for: there the library cannot tell that it would wait for the dispatch that called it.
  @available(*, noasync, message: "it blocks the thread and can wait for itself on the main actor; use 'await drain()'")
  @discardableResult
  public func waitUntilDrained() -> Bool {
    let id = ObjectIdentifier(self)
    if mainQueue.cannotWaitHere || ThreadContext.withCurrent({ $0.isInside(id) })
      || OperationTaskScope.current?.isInside(id) == true
    {
      return false
    }
    for _ in 0..<MainQueue.drainPassLimit {
      let idle = DispatchSemaphore(value: 0)
      inFlight.add(.thread(idle))
      mainQueue.wait(for: idle)
      let ended = inFlight.now.ended
      guard mainQueue.waitUntilDrained() else { return false }
      if inFlight.now == (true, ended) { return true }
    }
    return false
  }

  /// The dispatches in flight, for ``drain()``.
  let inFlight = InFlightCount()
  let registry = LockedValue(Registry())
  /// How many stores were removed so far, readable without the registry's lock: a store about to start in a
  /// dispatch checks that it is still registered only when this changed since the dispatch was prepared.
  let unregistrations = Atomic<UInt64>(0)
  /// How many interceptors are registered, readable without the registry's lock: a dispatch reads this, and nothing
  /// else, while there are none.
  let interceptorCount = Atomic<Int>(0)
  let serialLane: Lane
  let mainLane: Lane
  /// The handles of dispatches made with ``start(action:to:mode:options:)`` that have not finished, for
  /// ``cancelAll()``.
  let handles = LockedValue<[ObjectIdentifier: DispatchHandle]>([:])
  /// Throttling, debouncing and cancellation ids (``DispatchOptions``).
  let admission = LockedValue(AdmissionState())
  /// The time throttling and debouncing count by.
  let clock: any DispatchClock
  /// What re-runs earlier dispatches here, while it runs (``ReplayHook``); the flag spares the lock while nothing
  /// does.
  let replay = LockedValue<(any ReplayHook)?>(nil)
  let isReplaying = Atomic<Bool>(false)
  /// Called after a dispatch made with ``start(action:to:mode:options:)`` finished, for the test kit
  /// (``onDispatchFinished(_:)``); the flag spares the lock while nobody set one.
  let dispatchFinishedObserver = LockedValue<(@Sendable () -> Void)?>(nil)
  let hasDispatchFinishedObserver = Atomic<Bool>(false)

  /// Hears the failures of dispatches nobody awaits; `nil`: they are written to standard error.
  let onUnheardFailure: (@Sendable (any ActionType, DispatchError) -> Void)?

  /// Creates an independent dispatcher with its own stores, middleware and lanes.
  ///
  /// ```swift
  /// let dispatcher = Dispatcher(onUnheardFailure: { action, error in logger.error("\(action): \(error)") })
  /// ```
  /// - Parameters:
  ///   - mainQueue: Where `.mainThread` work and main-thread notifications run: by default
  ///     ``MainQueue/processMainThread`` on Apple platforms and ``MainQueue/libraryThread`` elsewhere.
  ///   - clock: The time throttled and debounced dispatches count by; the system's unless a test gives its own.
  ///   - onUnheardFailure: Called with the action and the error when a dispatch that nobody awaits fails: a
  ///     fire-and-forget `dispatch(action:to:mode:)` or `dispatch(actions:mode:)`, or a
  ///     ``start(action:to:mode:options:)`` whose handle was released without its outcome being read (such as an
  ///     operation's follow-up), that no store handles, that an interceptor blocked, or whose store failed. Not called
  ///     for ``DispatchError/cancelled``, ``DispatchError/throttled`` or ``DispatchError/superseded``, which someone
  ///     asked for, nor for ``DispatchError/dependencyFailed(_:)`` (the dependency's own failure is reported). `nil`
  ///     (the default) writes one line to standard error; pass `{ _, _ in }` to ignore such failures.
  ///
  /// > Important: `onUnheardFailure` runs with no lock of the library held: on the thread where the dispatch ended,
  /// > or on a background thread (for a released handle, or a dispatch that ended inside a reducer). It may dispatch;
  /// > the failures of the dispatches it makes on its own thread are written to standard error, not handed back to
  /// > it.
  public init(
    mainQueue: MainQueue = .default, clock: any DispatchClock = SystemDispatchClock(),
    onUnheardFailure: (@Sendable (any ActionType, DispatchError) -> Void)? = nil
  ) {
    self.mainQueue = mainQueue
    self.mainRunLoopCore = mainQueue.runLoopCore.map(ObjectIdentifier.init)
    self.clock = clock
    self.onUnheardFailure = onUnheardFailure
    self.serialLane = Lane(executor: .queue(DispatchQueue(label: "DispatchStore.serial")), placement: .anyThread)
    self.mainLane = Lane(executor: .main(mainQueue), placement: .main(mainQueue))
  }

  /// Hands the failure of a dispatch nobody awaits to ``onUnheardFailure``, or writes it to standard error, if it is
  /// reported (``isReported(_:)``).
  @inline(never)
  func reportUnheard(_ error: DispatchError, of action: any ActionType) {
    guard Self.isReported(error) else { return }
    if let onUnheardFailure {
      // Refused as re-entrant inside a reducer, this runs under the store's lock: the handler runs after it.
      if ThreadContext.withCurrent({ $0.isRunning(ObjectIdentifier(self)) }) {
        return DispatchQueue.global().async { self.reportUnheard(error, of: action) }
      }
      // A failure of a dispatch the handler made itself is written, not handed back to it: no recursion.
      let nested = ThreadContext.withCurrent { context in
        defer { context.reportingUnheard = true }
        return context.reportingUnheard
      }
      if !nested {
        defer { ThreadContext.withCurrent { $0.reportingUnheard = false } }
        // User code: it may dispatch, also `.sync`, as an observer may.
        return ThreadContext.withoutRunning { onUnheardFailure(action, error) }
      }
    }
    Self.writeUnheard(error, of: action)
  }

  /// Whether an unheard `error` is reported: not a cancelled, throttled or superseded dispatch, which someone asked
  /// for, nor one whose dependency failed (the dependency's own failure is reported, if nobody heard it).
  static func isReported(_ error: DispatchError) -> Bool {
    switch error {
    case .cancelled, .throttled, .superseded, .dependencyFailed: false
    default: true
    }
  }

  /// What a dispatcher without `onUnheardFailure` does with a failure nobody heard: one line on standard error.
  package static func writeUnheard(_ error: DispatchError, of action: any ActionType) {
    let line =
      "DispatchStore: a dispatch nobody awaited failed: \(String(reflecting: action)): \(error)"
      + " (await it, or give Dispatcher(onUnheardFailure:) to handle such failures)\n"
    FileHandle.standardError.write(Data(line.utf8))
  }

  // MARK: - Stores

  /// Registers `store` so that dispatched actions of its action type, and of the types its reducer maps
  /// (``Reducer/additionalActions``), reach it.
  ///
  /// A store belongs to one dispatcher at a time: to move it, unregister it from the other first.
  /// - Parameter store: The store to add.
  /// - Throws: ``DispatchError/duplicateStoreIdentifier(_:)`` if a store already uses its identifier, and
  ///   ``DispatchError/registeredElsewhere(storeIdentifier:)`` if the store is registered with another dispatcher;
  ///   the registry is left unchanged.
  public func register<Model, Action>(store: Store<Model, Action>) throws(DispatchError) {
    // Claimed first, under the store's lock: of two dispatchers registering it at once, one gets it.
    let claim = store.state.withLock { state -> Bool? in
      guard let owner = state.dispatcher else {
        state.dispatcher = self
        return true
      }
      return owner === self ? false : nil
    }
    guard let claimedNow = claim else { throw .registeredElsewhere(storeIdentifier: store.identifier) }
    let entry = StoreEntry(store)
    let mappedTypes = store.mappedActionTypes
    let added = registry.withLock { registry -> Bool in
      guard registry.stores[store.identifier] == nil else { return false }
      registry.stores[store.identifier] = entry
      registry.generation &+= 1
      // Appended in place: the array is copied only while a dispatch still holds the previous one.
      registry.routes.append(entry, for: ObjectIdentifier(Action.self))
      for type in mappedTypes { registry.routes.append(entry, for: type) }
      return true
    }
    guard added else {
      // Given back, unless the store was already registered here.
      if claimedNow { store.state.withLock { state in if state.dispatcher === self { state.dispatcher = nil } } }
      throw .duplicateStoreIdentifier(store.identifier)
    }
    // Claimed again: a thread unregistering the store here may have let go of it since the claim above. Only if the
    // registry still holds it (the registry's lock inside the store's, as when letting go): if that thread removed it
    // again, this register came before that unregister (helper-62). If another dispatcher took it in between, it is
    // given back to that one.
    let kept = store.state.withLock { state -> Bool in
      if state.dispatcher == nil, holds(store, as: store.identifier) { state.dispatcher = self }
      guard state.dispatcher === self else { return state.dispatcher == nil }
      state.mainQueue = mainQueue
      return true
    }
    guard kept else {
      // It names the other dispatcher: nothing to let go of.
      _ = removeStore(registeredAs: store.identifier) { $0 === store }
      throw .registeredElsewhere(storeIdentifier: store.identifier)
    }
  }

  /// Removes the store registered under `identifier` if `matches` it; returns its entry if it did.
  private func removeStore(registeredAs identifier: String, if matches: (AnyObject) -> Bool) -> StoreEntry? {
    registry.withLock { registry -> StoreEntry? in
      guard let registered = registry.stores[identifier], matches(registered.store) else { return nil }
      registry.stores.removeValue(forKey: identifier)
      registry.generation &+= 1
      // Under the lock, so that a dispatch reading it under the lock sees the registry that goes with it.
      unregistrations.add(1, ordering: .relaxed)
      registry.routes.remove(registered.store, for: registered.actionType)
      for type in registered.mappedActionTypes { registry.routes.remove(registered.store, for: type) }
      return registered
    }
  }

  /// Whether `store` is the store registered under `identifier`.
  func holds(_ store: AnyObject, as identifier: String) -> Bool {
    registry.withLock { $0.stores[identifier]?.store === store }
  }

  /// Removes the store registered under `identifier`, and only that store.
  ///
  /// A dispatch in flight does not start the store if it had not started it yet, as if it had never responded;
  /// stores waiting for it go on without it. If its operation is already running, it finishes normally.
  /// - Parameter identifier: The identifier of the store to remove.
  /// - Returns: The removed store, or `nil` if none was registered under `identifier`.
  @discardableResult
  public func unregister(storeIdentifier identifier: String) -> (any AnyStore)? {
    guard let removed = removeStore(registeredAs: identifier, if: { _ in true }) else { return nil }
    // After the registry's lock: the store's is never taken inside it. The store lets go of this dispatcher only if
    // another thread has not registered it here again meanwhile.
    removed.withKind { $0.detach($1, from: self) }
    return removed.anyStore
  }

  /// The store registered under `identifier`.
  /// - Parameter identifier: A store identifier.
  /// - Returns: The store, or `nil` if none is registered under `identifier`.
  func store(with identifier: String) -> (any AnyStore)? {
    registry.withLock { $0.stores[identifier] }?.anyStore
  }

  /// The store registered under `identifier`, with its model and action types.
  /// - Parameters:
  ///   - identifier: A store identifier.
  ///   - type: The store's type.
  /// - Returns: The store, or `nil` if none is registered under `identifier` or it has other types.
  public func store<Model, Action>(with identifier: String, as type: Store<Model, Action>.Type) -> Store<Model, Action>?
  {
    store(with: identifier) as? Store<Model, Action>
  }

  /// The identifiers of every registered store, sorted.
  var storeIdentifiers: [String] {
    registry.withLock { Array($0.stores.keys) }.sorted()
  }

  // MARK: - Middleware

  /// Adds `middleware` after the middleware already registered; it sees every transaction started from now on.
  /// - Parameter middleware: The middleware to add. Registering the same instance twice has no effect.
  public func register(middleware: any Middleware) {
    // Made before the lock: making the entry asks the middleware whether it needs durations.
    let entry = MiddlewareList.Entry(middleware)
    let released = registry.withLock { registry in
      registry.middleware.append(entry)
    }
    withExtendedLifetime(released) {}  // Released here, after the lock.
  }

  /// Removes `middleware`: transactions that start from now on do not call it.
  ///
  /// Transactions already running finish with the middleware they started with, and may still call it once. Once
  /// this returns, neither the dispatcher nor the threads that dispatched through it hold the middleware: only
  /// those running transactions do, until they finish.
  /// - Parameter middleware: A middleware instance passed to ``register(middleware:)``.
  public func unregister(middleware: any Middleware) {
    let removed = registry.withLock { registry in
      registry.middleware.remove(middleware)
    }
    withExtendedLifetime(removed) {}  // Released here, after the lock.
  }
}

extension Dispatcher {
  // MARK: - Interceptors

  /// Adds `interceptor` after the interceptors already registered; it sees every action dispatched from now on,
  /// before any store does.
  /// - Parameter interceptor: The interceptor to add. Registering the same instance twice has no effect.
  public func register(interceptor: any Interceptor) {
    registry.withLock { registry in
      guard !registry.interceptors.contains(where: { $0 === interceptor }) else { return }
      registry.interceptors.append(interceptor)
      registry.interceptorsFollow = registry.interceptors.contains { $0 is any FollowingInterceptor }
      interceptorCount.store(registry.interceptors.count, ordering: .relaxed)
    }
  }

  /// Removes `interceptor`: dispatches that start from now on do not see it; those already running may.
  /// - Parameter interceptor: An interceptor passed to ``register(interceptor:)``.
  public func unregister(interceptor: any Interceptor) {
    let removed = registry.withLock { registry -> [any Interceptor] in
      let removed = registry.interceptors.filter { $0 === interceptor }
      registry.interceptors.removeAll { $0 === interceptor }
      registry.interceptorsFollow = registry.interceptors.contains { $0 is any FollowingInterceptor }
      interceptorCount.store(registry.interceptors.count, ordering: .relaxed)
      return removed
    }
    withExtendedLifetime(removed) {}  // Released here, after the lock.
  }

  /// The interceptors a dispatch starting now runs, or `nil` if there are none.
  func interceptorChain() -> InterceptorChain? {
    guard interceptorCount.load(ordering: .relaxed) > 0 else { return nil }
    let (interceptors, follow) = registry.withLock { ($0.interceptors, $0.interceptorsFollow) }
    return interceptors.isEmpty ? nil : InterceptorChain(interceptors: interceptors, follow: follow)
  }
}

/// The dispatcher's registry, behind its one lock.
struct Registry {
  var stores: [String: StoreEntry] = [:]
  /// The stores handling each action type, keyed by `ObjectIdentifier(Action.self)`, in registration order.
  var routes = RouteTable()
  var middleware = MiddlewareList()
  var interceptors: [any Interceptor] = []
  /// Whether one of the interceptors follows the dispatches it intercepts (``FollowingInterceptor``): decided when
  /// they change, so that dispatches without one make no ``InterceptedDispatch``.
  var interceptorsFollow = false
  /// Changes whenever a store is registered or removed, so that cached wait graphs are rebuilt.
  var generation: UInt64 = 0
}

extension Dispatcher {
  /// The identifiers of the registered stores that handle actions of `action`'s type, as their own or mapped
  /// (``Reducer/additionalActions``): for the test kit, which must know whether a dispatch will reach a store.
  package func storeIdentifiers(handling action: any ActionType) -> [String] {
    let key = ObjectIdentifier(type(of: action))
    return registry.withLock { registry in registry.routes[key].map(\.identifier) }
  }
}

extension Dispatcher {
  /// How many dispatches made with ``start(action:to:mode:options:)`` have not finished (pending, debounced, running):
  /// for the test kit, which waits for work it cannot otherwise see.
  package var unfinishedDispatchCount: Int {
    handles.withLock { $0.count }
  }

  /// The dispatches made with ``start(action:to:mode:options:)`` that have not started (waiting in a lane, or for a
  /// debounce or throttle interval): for the test kit, which names them when a test ends with timers pending.
  package var pendingDispatches: [DispatchHandle] {
    handles.withLock { Array($0.values) }.filter { if case .pending = $0.currentState { true } else { false } }
  }

  /// Calls `observer` after each dispatch made with ``start(action:to:mode:options:)`` finished.
  ///
  /// It runs once the dispatch no longer counts in ``unfinishedDispatchCount``: for the test kit, which waits for
  /// that count. One observer; a later call replaces it.
  package func onDispatchFinished(_ observer: @escaping @Sendable () -> Void) {
    dispatchFinishedObserver.withLock { $0 = observer }
    hasDispatchFinishedObserver.store(true, ordering: .releasing)
  }
}
