import Dispatch
import Synchronization

extension Store {
  /// Calls `onChange` after every change of the model, for as long as the returned token lives.
  ///
  /// ```swift
  /// let token = counter.observe { change in
  ///   if change.isRestore { print("time travel:", change.model) } else { print(change.action, "->", change.model) }
  /// }
  /// ```
  ///
  /// Observers hear each change once, with the model that change produced, in the order of the changes, also while
  /// other threads change the same store. A change is one ``SynchronousReducer`` reduction, one
  /// ``ActionOperation/updateModel(_:)`` call, or one model the recorder restored. The store holds `onChange` until
  /// the token is released or cancelled.
  /// - Parameters:
  ///   - synchronously: `false` (the default) to call `onChange` on the dispatcher's main queue (see
  ///     ``MainQueue``); `true` to call it on the thread that made the change, before that change's dispatch
  ///     completes (but for the exception below).
  ///   - onChange: Called once per change with the ``ModelChange``: the model after it, the action that made it, and
  ///     whether the recorder restored it.
  /// - Returns: The token that keeps the observation alive; keep it for as long as you want to be notified.
  ///
  /// > Important: Notifications of one store never overlap. A synchronous observer's change made from inside it is
  /// > delivered after the notification being delivered. A synchronous observer may dispatch `.sync`, to its own
  /// > store too: while that dispatch waits, the changes other threads make to this store are delivered by the
  /// > observer's thread once the observer returns, in their order, and their dispatches may complete first (one of
  /// > those threads may be running that dispatch's operation; see Threading). Do not block a synchronous observer
  /// > any other way waiting for another thread's dispatch to the same store: that thread may be waiting for the
  /// > observer's turn to end. Once the token
  /// > is cancelled or released, `onChange` is not called again, but by a notification another thread is delivering
  /// > to it at that moment (``ObservationToken/cancel()``).
  public func observe(
    synchronously: Bool = false, _ onChange: @escaping @Sendable (ModelChange<Model, Action>) -> Void
  ) -> ObservationToken {
    let token = ObservationToken()
    return observe(
      delivery: synchronously ? .synchronous : .mainThread, entry: ObserverEntry(token: token, onChange: onChange),
      token: token)
  }

  /// Calls `onChange` on the main actor after every change of the model, for as long as the returned token lives.
  ///
  /// For code that touches the UI: `onChange` is `@MainActor`, so it needs no `MainActor.assumeIsolated`.
  ///
  /// ```swift
  /// let token = cart.observeOnMainActor { change in
  ///   totalLabel.text = change.model.total.formatted()  // a @MainActor property
  /// }
  /// ```
  /// - Parameter onChange: Called on the main actor once per change, in the order of the changes, with the
  ///   ``ModelChange``.
  /// - Returns: The token that keeps the observation alive; keep it for as long as you want to be notified.
  ///
  /// > Important: The main actor runs on the process main thread: in every app on Apple platforms, and in a process
  /// > with an `async` main or that calls `dispatchMain()`. In a tool whose main thread does neither, notifications
  /// > wait until the main thread drains ``MainQueue/processMainThread`` (``MainQueue/waitUntilDrained()``, or
  /// > ``MainQueue/drain()`` where it can await). ``Dispatcher/drain()`` waits for them only when the dispatcher's
  /// > main queue is ``MainQueue/processMainThread`` (not ``MainQueue/libraryThread``, Linux's default).
  public func observeOnMainActor(
    _ onChange: @escaping @MainActor @Sendable (ModelChange<Model, Action>) -> Void
  ) -> ObservationToken {
    let token = ObservationToken()
    let ended = ObservationEnd()
    // Delivered synchronously, in the order of the changes, then queued on the main queue, which keeps that order;
    // a change queued there when the token is cancelled is dropped.
    let entry = ObserverEntry<Model, Action>(token: token, ended: ended) { change in
      DispatchQueue.main.async {
        guard !ended.hasEnded else { return }
        onChange(change)
      }
      MainQueueMarker.scheduled.add(1, ordering: .releasing)
    }
    return observe(delivery: .synchronous, entry: entry, token: token)
  }

  /// Adds a token's observation; the token removes it when cancelled or released.
  private func observe(
    delivery: ObserverDelivery, entry: ObserverEntry<Model, Action>, token: ObservationToken
  ) -> ObservationToken {
    add(entry, delivery: delivery)
    // The token's identity, not the entry: an entry may hold what holds the token (an async sequence's
    // continuation), and the token must not hold it back. A token's identity is unique while it lives.
    let (id, ended) = (entry.id, entry.ended)
    token.setCancellation { [weak self] in
      // First: a notification holding the entry skips it from now on.
      ended.end()
      guard let self else { return }
      let removed = state.withLock { state in
        defer { registeredObservers.store(state.observerEntryCount, ordering: .relaxed) }
        return state.removeObservers { $0.id == id }
      }
      withExtendedLifetime(removed) {}  // Released here, after the lock.
    }
    return token
  }

  /// Adds `entry`, replacing any registration with its identifier.
  private func add(_ entry: ObserverEntry<Model, Action>, delivery: ObserverDelivery) {
    let replaced = state.withLock { state in
      let replaced = state.removeObservers { $0.id == entry.id }
      let observers = state.observers ?? ObserverLists()
      state.observers = observers
      switch delivery {
      case .mainThread: observers.mainThread.append(entry)
      case .synchronous: observers.synchronous.append(entry)
      }
      registeredObservers.store(state.observerEntryCount, ordering: .relaxed)
      return replaced
    }
    withExtendedLifetime(replaced) {}  // Released here, after the lock: a closure's captures may end here.
  }

  /// The number of observations whose token was neither released nor cancelled.
  var observerCount: Int {
    state.withLock { $0.observerEntryCount }
  }

  /// Announces the change the finished operation made, if any; with no observers there is nobody to tell, and the
  /// version catches up at the next announcement.
  ///
  /// Called for operations only: a reduction in place announced its change in the critical section that made it
  /// (``reduceInPlace(_:hooked:)``).
  /// - Parameter hidingRunningDispatchers: Hide the dispatchers running on this thread from the observers (they may
  ///   dispatch `.sync`).
  @inline(__always)
  func announceFinishedOperation(for action: any ActionType, hidingRunningDispatchers: Bool) {
    guard registeredObservers.load(ordering: .relaxed) > 0 else { return }
    announceObserved(action, hidingRunningDispatchers: hidingRunningDispatchers)
  }

  @inline(never)
  private func announceObserved(_ action: any ActionType, hidingRunningDispatchers: Bool) {
    let action = ownAction(action)
    if hidingRunningDispatchers {
      ThreadContext.withoutRunning { _ = specialised(self, action, .announce) }
    } else {
      _ = specialised(self, action, .announce)
    }
  }

  /// Called by the dispatcher after an operation of this store finished: announces the change, if any.
  ///
  /// The notification carries the model as it is now: the operation's changes, and those of any operation of this
  /// store that ran at the same time and was not announced yet (its own announcement then finds nothing new).
  ///
  /// The reducer is asked whether to notify (``Reducer/shouldNotifyObservers(for:in:)``) only if there is something
  /// new to announce: an operation whose ``ActionOperation/updateModel(_:)`` announced its change is not asked again.
  ///
  /// Inlinable, like everything it uses, so that ``specialised`` runs it specialised in the app's module.
  @inlinable
  func announceChange(of action: Action) {
    let deliverer = ThreadContext.currentDeliverer
    var shouldNotify: Bool?
    while true {
      let (turn, asks) = state.withLock { state -> (SynchronousTurn<Model, Action>, asks: Bool) in
        guard state.version != state.announcedVersion else {
          // Nothing new (another announcement took the change): wait until it was delivered.
          return (state.observers?.turnAfterCurrentDelivery(deliverer: deliverer) ?? .none, false)
        }
        guard let shouldNotify else { return (.none, true) }
        state.announcedVersion = state.version
        guard shouldNotify else { return (.none, false) }
        // Through optional chaining, which uses the lists in place: binding them would retain and release them.
        let turn = state.observers?.changes(
          of: state.model, by: action, store: self, mainQueue: state.mainQueue, deliverer: deliverer)
        return (turn ?? .none, false)
      }
      guard asks else { return deliverSynchronously(turn) }
      shouldNotify = reducer.shouldNotifyObservers(for: action, in: self)  // User code, so outside the lock.
    }
  }

  /// Delivers a synchronous notification when it is this thread's turn, then the ones this thread queued from
  /// inside its own observers, and hands the turn to the next thread waiting for it.
  ///
  /// Notifications of one store never overlap and keep the order of the changes; each is delivered by the thread
  /// that made the change, before that thread goes on, so a dispatch completes after its observers heard it. The
  /// exception is a change made from inside a synchronous observer while another thread delivers this store's
  /// notifications: that thread delivers it, in order, so that two threads never wait for each other's turn.
  @inlinable
  func deliverSynchronously(_ turn: SynchronousTurn<Model, Action>) {
    var change: StoreChange<Model, Action>?
    switch turn {
    case .none:
      return
    case .deliver(let first):
      change = first
    case .wait(let waiter):
      waiter.turn.wait()  // Until the thread delivering the changes before this one hands the turn over.
      // Or until it blocked, inside an observer: it delivers this change once it returns.
      if waiter.released.load(ordering: .acquiring) { return }
      change = waiter.change
    }
    ThreadContext.deliveringSynchronously(for: self) {
      while true {
        if let change { deliver(change) }
        // The lists stay once made, so they are still there.
        switch state.withLock({ $0.observers?.endSynchronousTurn() ?? .none }) {
        case .deliver(let next):
          change = next
        case .handOver(let waiter):
          waiter.turn.signal()
          return
        case .none:
          return
        }
      }
    }
  }

  @inlinable
  func deliver(_ change: StoreChange<Model, Action>) {
    // The entries are borrowed from the change, which holds them: iterating the array would retain and release
    // each, and its closure's context.
    change.observers.withUnsafeBufferPointer { entries in
      for index in entries.indices {
        Unmanaged.passUnretained(entries[index])._withUnsafeGuaranteedRef { $0.call(change) }
      }
    }
  }
}

extension Store: DeliveringStore {
  @usableFromInline func delivererBlocks() {
    let released = state.withLock { $0.observers?.delivererBlocks() ?? [] }
    for waiter in released { waiter.release() }
  }

  @usableFromInline func delivererUnblocked() {
    state.withLock { $0.observers?.delivererUnblocked() }
  }
}
