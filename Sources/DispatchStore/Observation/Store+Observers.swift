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
  ///     completes.
  ///   - onChange: Called once per change with the ``ModelChange``: the model after it, the action that made it, and
  ///     whether the recorder restored it.
  /// - Returns: The token that keeps the observation alive; keep it for as long as you want to be notified.
  ///
  /// > Important: Notifications of one store never overlap. A synchronous observer's change made from inside it is
  /// > delivered after the notification being delivered; do not block a synchronous observer waiting for another
  /// > thread's dispatch to the same store (that thread may be waiting for the observer's turn to end). A
  /// > main-queue notification already scheduled when the token is cancelled may still arrive; cancel on the main
  /// > queue to rule that out.
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
  /// > wait until the main thread calls `MainQueue.drain()` on ``MainQueue/processMainThread``.
  public func observeOnMainActor(
    _ onChange: @escaping @MainActor @Sendable (ModelChange<Model, Action>) -> Void
  ) -> ObservationToken {
    let token = ObservationToken()
    // Delivered synchronously, in the order of the changes, then queued on the main queue, which keeps that order.
    let entry = ObserverEntry<Model, Action>(token: token) { change in
      DispatchQueue.main.async { onChange(change) }
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
    let id = entry.id
    token.setCancellation { [weak self] in
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
    case .wait(let waiter, let first):
      waiter.wait()  // Until the thread delivering the changes before this one hands the turn over.
      change = first
    }
    ThreadContext.deliveringSynchronously {
      while true {
        if let change { deliver(change) }
        // The lists stay once made, so they are still there.
        switch state.withLock({ $0.observers?.endSynchronousTurn() ?? .none }) {
        case .deliver(let next):
          change = next
        case .handOver(let waiter):
          waiter.signal()
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

extension StoreState {
  /// The number of observer entries, alive or not.
  @inlinable
  var observerEntryCount: Int { observers.map { $0.mainThread.count + $0.synchronous.count } ?? 0 }

  /// Removes the observers matching `predicate` and returns them, so that the caller releases them (and whatever
  /// their closures captured) after the lock.
  @inlinable
  mutating func removeObservers(
    where predicate: (ObserverEntry<Model, Action>) -> Bool
  ) -> [ObserverEntry<Model, Action>] {
    guard let observers else { return [] }
    let removed = observers.mainThread.filter(predicate) + observers.synchronous.filter(predicate)
    observers.mainThread.removeAll(where: predicate)
    observers.synchronous.removeAll(where: predicate)
    return removed
  }
}

/// A store's observer registrations and the state of their synchronous delivery, made with the first
/// registration, so that a store nobody observes does not carry them.
///
/// Part of the store's state: only touched under the store's lock, which is also why its properties skip the
/// runtime's dynamic exclusivity checks. Once made, a store keeps its lists.
@usableFromInline
final class ObserverLists<Model: ModelType, Action: ActionType> {
  @usableFromInline @exclusivity(unchecked) var mainThread: [ObserverEntry<Model, Action>] = []
  @usableFromInline @exclusivity(unchecked) var synchronous: [ObserverEntry<Model, Action>] = []
  /// The synchronous notifications waiting for their turn, in the order of their changes.
  @usableFromInline @exclusivity(unchecked) var pendingSynchronous = FIFOQueue<PendingChange<Model, Action>>()
  /// The thread (its ``ThreadContext``) whose turn it is to deliver synchronous notifications; `nil` when nobody
  /// delivers.
  @usableFromInline @exclusivity(unchecked) var deliveringThread: ObjectIdentifier?

  init() {}

  /// Ends the delivering thread's notification: its next turn if it queued one from inside an observer, otherwise
  /// the next waiting thread's (to hand over), or nobody's.
  ///
  /// Called under the store's lock.
  @inlinable
  func endSynchronousTurn() -> NextTurn<Model, Action> {
    switch pendingSynchronous.popFirst() {
    case .none:
      deliveringThread = nil
      return .none
    case .queued(let change):
      return .deliver(change)
    case .waiting(let waiter, let thread):
      deliveringThread = thread
      return .handOver(waiter)
    }
  }

  /// The turn of a thread whose change another thread announced (operations of one store that ran at the same
  /// time): it waits until the notification being delivered, which carries its change, was delivered.
  ///
  /// Called under the store's lock; runs no user code.
  @inlinable
  func turnAfterCurrentDelivery(deliverer: (thread: ObjectIdentifier, mayWait: Bool)) -> SynchronousTurn<Model, Action>
  {
    guard let delivering = deliveringThread, delivering != deliverer.thread, deliverer.mayWait else { return .none }
    let waiter = DispatchSemaphore(value: 0)
    pendingSynchronous.append(.waiting(waiter, thread: deliverer.thread))
    return .wait(waiter, nil)
  }

  /// Announces `model`, which `action` made: schedules its main-thread notification, and returns the synchronous
  /// one's turn.
  ///
  /// The synchronous notification is delivered after the lock: by the calling thread at once if nobody is
  /// delivering, or once its turn comes if another thread is (it waits). If the calling thread may not wait (it is
  /// inside a synchronous observer itself), or is the one delivering (an observer changed the store), it is queued
  /// for the delivering thread, which delivers it after the notifications before it.
  ///
  /// Called under the store's lock; runs no user code.
  @inlinable
  func changes(
    of model: Model, by action: Action, origin: ChangeOrigin = .dispatch, store: Store<Model, Action>,
    mainQueue: MainQueue, deliverer: (thread: ObjectIdentifier, mayWait: Bool)
  ) -> SynchronousTurn<Model, Action> {
    if !mainThread.isEmpty {
      let change = StoreChange(model: model, action: action, origin: origin, observers: mainThread)
      // Scheduled under the lock so that main-thread notifications keep the order of the changes; scheduling only
      // appends to the main queue.
      mainQueue.schedule {
        ThreadContext.withoutRunningDispatchers { store.deliver(change) }
      }
    }
    guard !synchronous.isEmpty else { return .none }
    let change = StoreChange(model: model, action: action, origin: origin, observers: synchronous)
    guard let delivering = deliveringThread else {
      deliveringThread = deliverer.thread
      return .deliver(change)
    }
    guard delivering != deliverer.thread && deliverer.mayWait else {
      pendingSynchronous.append(.queued(change))
      return .none
    }
    let waiter = DispatchSemaphore(value: 0)
    pendingSynchronous.append(.waiting(waiter, thread: deliverer.thread))
    return .wait(waiter, change)
  }
}

/// When a thread that announced a change delivers its synchronous notification.
@usableFromInline
enum SynchronousTurn<Model: ModelType, Action: ActionType>: Sendable {
  /// No synchronous notification.
  case none
  /// Now.
  case deliver(StoreChange<Model, Action>)
  /// Once another thread signals the semaphore; `nil` to only wait until the notifications before it were
  /// delivered.
  case wait(DispatchSemaphore, StoreChange<Model, Action>?)
}

/// A synchronous notification waiting for its turn.
@usableFromInline
enum PendingChange<Model: ModelType, Action: ActionType> {
  /// Made from inside a synchronous observer: the thread whose turn it is delivers it.
  case queued(StoreChange<Model, Action>)
  /// Made by another thread, which waits on the semaphore for its turn.
  case waiting(DispatchSemaphore, thread: ObjectIdentifier)
}

/// What the delivering thread does after a notification.
@usableFromInline
enum NextTurn<Model: ModelType, Action: ActionType> {
  case none
  case deliver(StoreChange<Model, Action>)
  case handOver(DispatchSemaphore)
}

/// One change to announce: the model after it, the action that made it, and who to tell.
@usableFromInline
struct StoreChange<Model: ModelType, Action: ActionType>: Sendable {
  @usableFromInline let model: Model
  @usableFromInline let action: Action
  @usableFromInline let origin: ChangeOrigin
  @usableFromInline let observers: [ObserverEntry<Model, Action>]

  @inlinable
  init(model: Model, action: Action, origin: ChangeOrigin, observers: [ObserverEntry<Model, Action>]) {
    self.model = model
    self.action = action
    self.origin = origin
    self.observers = observers
  }
}

/// One observation: a token's closure, held until the token removes it.
@usableFromInline
final class ObserverEntry<Model: ModelType, Action: ActionType>: Sendable {
  /// The token's identifier.
  @usableFromInline let id: ObjectIdentifier
  @usableFromInline let onChange: @Sendable (ModelChange<Model, Action>) -> Void

  init(token: ObservationToken, onChange: @escaping @Sendable (ModelChange<Model, Action>) -> Void) {
    self.id = ObjectIdentifier(token)
    self.onChange = onChange
  }

  /// Calls the observer's closure with `change`.
  @inlinable
  func call(_ change: StoreChange<Model, Action>) {
    onChange(
      ModelChange(model: change.model, action: change.action, isRestore: change.origin == .restore))
  }
}
