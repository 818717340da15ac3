import Synchronization

extension Store {
  /// Registers `observer` to hear about every change an operation makes to the model.
  ///
  /// The store holds `observer` weakly: once it is deallocated, `onChange` is no longer called. Registering the
  /// same observer again replaces its previous registration.
  /// - Parameters:
  ///   - observer: The object whose lifetime bounds the registration; also the key for ``unregister(observer:)``.
  ///   - delivery: Where `onChange` runs: on the main thread (default) or synchronously on the finishing thread.
  ///   - onChange: Called once per operation that changed the model, in order, with the new model and the action.
  ///
  /// > Important: Notifications never overlap for one store and one delivery. `onChange` may dispatch further
  /// > actions; `.sync` dispatch is allowed from observers.
  public func register(
    observer: AnyObject,
    delivery: ObserverDelivery = .mainThread,
    onChange: @escaping @Sendable (Model, Action) -> Void
  ) {
    let entry = ObserverEntry(object: observer, onChange: onChange)
    let replaced = state.withLock(owner: self) { state in
      let replaced = state.removeObservers { $0.id == entry.id }
      switch delivery {
      case .mainThread: state.mainThreadObservers.append(entry)
      case .synchronous: state.synchronousObservers.append(entry)
      }
      registeredObservers.store(state.observerEntryCount, ordering: .relaxed)
      return replaced
    }
    withExtendedLifetime(replaced) {}  // Released here, after the lock: a closure's captures may end here.
  }

  /// Stops notifying `observer`.
  /// - Parameter observer: An object passed to ``register(observer:delivery:onChange:)``.
  ///
  /// > Important: A main-thread notification already scheduled when you unregister may still arrive; call this
  /// > from the main thread to rule that out.
  public func unregister(observer: AnyObject) {
    let id = ObjectIdentifier(observer)
    let removed = state.withLock(owner: self) { state in
      defer { registeredObservers.store(state.observerEntryCount, ordering: .relaxed) }
      return state.removeObservers { $0.id == id }
    }
    withExtendedLifetime(removed) {}  // Released here, after the lock.
  }

  /// The number of registered observers whose object is still alive.
  public var observerCount: Int {
    let entries = state.withLock(owner: self) { $0.mainThreadObservers + $0.synchronousObservers }
    return entries.reduce(0) { $0 + ($1.isAlive ? 1 : 0) }
  }

  /// Called by the dispatcher after an operation of this store finished: announces the change, if any.
  ///
  /// Inlinable, like everything it uses, so that ``announcer`` runs it specialised in the app's module.
  @inlinable
  func announceChange(of action: Action, askingReducer: Bool = true) {
    let shouldNotify = askingReducer ? reducer.shouldNotifyObservers(for: action, in: self) : true
    let synchronous = state.withLock(owner: self) { state -> StoreChange<Model, Action>? in
      guard state.version != state.announcedVersion else { return nil }
      state.announcedVersion = state.version
      guard shouldNotify else { return nil }
      if !state.mainThreadObservers.isEmpty {
        let change = StoreChange(model: state.model, action: action, observers: state.mainThreadObservers)
        // Scheduled under the lock so that main-thread notifications keep the order of the changes; scheduling
        // only appends to the main queue, it runs no user code.
        state.mainQueue.schedule { [self] in
          ThreadContext.withoutRunningDispatchers { deliver(change) }
        }
      }
      guard !state.synchronousObservers.isEmpty else { return nil }
      let change = StoreChange(model: state.model, action: action, observers: state.synchronousObservers)
      if state.isDeliveringSynchronously {
        state.pendingSynchronous.append(change)
        return nil
      }
      state.isDeliveringSynchronously = true
      return change
    }
    guard var change = synchronous else { return }
    ThreadContext.withoutRunningDispatchers {
      while true {
        deliver(change)
        let next = state.withLock(owner: self) { state -> StoreChange<Model, Action>? in
          if let next = state.pendingSynchronous.popFirst() { return next }
          state.isDeliveringSynchronously = false
          return nil
        }
        guard let next else { return }
        change = next
      }
    }
  }

  @inlinable
  func deliver(_ change: StoreChange<Model, Action>) {
    var deadEntries: [ObserverEntry<Model, Action>] = []
    for entry in change.observers {
      // Holding the object keeps it alive while its callback runs.
      guard let object = entry.object else {
        deadEntries.append(entry)
        continue
      }
      entry.onChange(change.model, change.action)
      withExtendedLifetime(object) {}
    }
    guard !deadEntries.isEmpty else { return }
    // Compared by identity: loading a weak reference under the lock could end an object's life there.
    let removed = state.withLock(owner: self) { state in
      defer { registeredObservers.store(state.observerEntryCount, ordering: .relaxed) }
      return state.removeObservers { entry in deadEntries.contains { $0 === entry } }
    }
    withExtendedLifetime(removed) {}  // Released here, after the lock.
  }
}

extension StoreState {
  /// The number of observer entries, alive or not.
  @inlinable
  var observerEntryCount: Int { mainThreadObservers.count + synchronousObservers.count }

  /// Removes the observers matching `predicate` and returns them, so that the caller releases them (and whatever
  /// their closures captured) after the lock.
  @inlinable
  mutating func removeObservers(
    where predicate: (ObserverEntry<Model, Action>) -> Bool
  ) -> [ObserverEntry<Model, Action>] {
    let removed = mainThreadObservers.filter(predicate) + synchronousObservers.filter(predicate)
    mainThreadObservers.removeAll(where: predicate)
    synchronousObservers.removeAll(where: predicate)
    return removed
  }
}

/// One change to announce: the model after it, the action that made it, and who to tell.
@usableFromInline
struct StoreChange<Model: ModelType, Action: ActionType>: Sendable {
  @usableFromInline let model: Model
  @usableFromInline let action: Action
  @usableFromInline let observers: [ObserverEntry<Model, Action>]

  @inlinable
  init(model: Model, action: Action, observers: [ObserverEntry<Model, Action>]) {
    self.model = model
    self.action = action
    self.observers = observers
  }
}

/// One observer registration.
///
/// `@unchecked Sendable`: every stored property is immutable except the weak reference, which the Swift runtime
/// reads and zeroes atomically; the object is only loaded to test liveness and to keep it alive during a callback,
/// never used, so its own (possibly non-`Sendable`) state is never touched from another thread. Nothing assigns
/// `object` after `init`, so its reads skip the runtime's dynamic exclusivity checks (a third of a notification's
/// cost); `weak let` would say the same, but needs Swift 6.2.
@usableFromInline
final class ObserverEntry<Model: ModelType, Action: ActionType>: @unchecked Sendable {
  @usableFromInline @exclusivity(unchecked) weak var object: AnyObject?
  @usableFromInline let id: ObjectIdentifier
  @usableFromInline let onChange: @Sendable (Model, Action) -> Void

  init(object: AnyObject, onChange: @escaping @Sendable (Model, Action) -> Void) {
    self.object = object
    self.id = ObjectIdentifier(object)
    self.onChange = onChange
  }

  var isAlive: Bool { object != nil }
}
