import Dispatch
import Synchronization

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
  /// How many blocking waits the delivering thread is in, from inside an observer (a `.sync` dispatch): while it is
  /// in one, no thread waits for its turn, which could be what it waits for (``delivererBlocks()``).
  @usableFromInline @exclusivity(unchecked) var delivererBlocked = 0

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
    guard let delivering = deliveringThread, delivering != deliverer.thread, deliverer.mayWait, delivererBlocked == 0
    else { return .none }
    let waiter = TurnWaiter<Model, Action>(change: nil)
    pendingSynchronous.append(.waiting(waiter, thread: deliverer.thread))
    return .wait(waiter)
  }

  /// The delivering thread is about to block, from inside an observer, until another thread does something (a
  /// `.sync` dispatch whose operation finishes there): the threads waiting for their turn could be that one, so
  /// their changes are queued for the delivering thread, in their places, and they go on; until
  /// ``delivererUnblocked()``, a change of another thread is queued too.
  ///
  /// Called under the store's lock; returns the waiters to wake after it.
  func delivererBlocks() -> [TurnWaiter<Model, Action>] {
    delivererBlocked += 1
    var released: [TurnWaiter<Model, Action>] = []
    pendingSynchronous.replaceEach { pending in
      guard case .waiting(let waiter, _) = pending else { return pending }
      released.append(waiter)
      return waiter.change.map { .queued($0) }
    }
    return released
  }

  /// The delivering thread's blocking wait (``delivererBlocks()``) ended.
  ///
  /// Called under the store's lock.
  func delivererUnblocked() {
    delivererBlocked -= 1
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
    guard delivering != deliverer.thread && deliverer.mayWait && delivererBlocked == 0 else {
      pendingSynchronous.append(.queued(change))
      return .none
    }
    let waiter = TurnWaiter(change: change)
    pendingSynchronous.append(.waiting(waiter, thread: deliverer.thread))
    return .wait(waiter)
  }
}

/// A thread waiting for its turn to deliver a synchronous notification, and the change it delivers then.
@usableFromInline
final class TurnWaiter<Model: ModelType, Action: ActionType>: Sendable {
  @usableFromInline let turn = DispatchSemaphore(value: 0)
  /// The change the thread delivers; `nil` if it only waits for the notifications before it.
  @usableFromInline let change: StoreChange<Model, Action>?
  /// Set before `turn` is signalled when the change was queued for the delivering thread instead
  /// (``ObserverLists/delivererBlocks()``): the waiting thread then goes on without delivering.
  @usableFromInline let released = Atomic<Bool>(false)

  @usableFromInline init(change: StoreChange<Model, Action>?) {
    self.change = change
  }

  /// Wakes the waiting thread without its turn: its change was queued for the delivering thread.
  func release() {
    released.store(true, ordering: .releasing)
    turn.signal()
  }
}

/// When a thread that announced a change delivers its synchronous notification.
@usableFromInline
enum SynchronousTurn<Model: ModelType, Action: ActionType>: Sendable {
  /// No synchronous notification.
  case none
  /// Now.
  case deliver(StoreChange<Model, Action>)
  /// Once another thread hands the turn over, or releases the waiter (its change then queued for that thread).
  case wait(TurnWaiter<Model, Action>)
}

/// A synchronous notification waiting for its turn.
@usableFromInline
enum PendingChange<Model: ModelType, Action: ActionType> {
  /// Made from inside a synchronous observer: the thread whose turn it is delivers it.
  case queued(StoreChange<Model, Action>)
  /// Made by another thread, which waits for its turn.
  case waiting(TurnWaiter<Model, Action>, thread: ObjectIdentifier)
}

/// What the delivering thread does after a notification.
@usableFromInline
enum NextTurn<Model: ModelType, Action: ActionType> {
  case none
  case deliver(StoreChange<Model, Action>)
  case handOver(TurnWaiter<Model, Action>)
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
  /// Set when the token is cancelled or released, before the entry leaves the store's lists: a notification that
  /// holds the entry and has not called it yet (queued, waiting for its turn, or on the main queue) then skips it.
  @usableFromInline let ended: ObservationEnd

  init(
    token: ObservationToken, ended: ObservationEnd = ObservationEnd(),
    onChange: @escaping @Sendable (ModelChange<Model, Action>) -> Void
  ) {
    self.id = ObjectIdentifier(token)
    self.ended = ended
    self.onChange = onChange
  }

  /// Calls the observer's closure with `change`, unless its observation ended.
  @inlinable
  func call(_ change: StoreChange<Model, Action>) {
    guard !ended.hasEnded else { return }
    onChange(
      ModelChange(model: change.model, action: change.action, isRestore: change.origin == .restore))
  }
}

/// Whether an observation ended: its token was cancelled or released.
@usableFromInline
final class ObservationEnd: Sendable {
  @usableFromInline let ended = Atomic<Bool>(false)

  init() {}

  /// Whether the observation ended.
  @inlinable var hasEnded: Bool { ended.load(ordering: .acquiring) }

  /// Ends the observation.
  func end() { ended.store(true, ordering: .releasing) }
}
