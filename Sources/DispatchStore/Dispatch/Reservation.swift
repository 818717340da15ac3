import Dispatch
import Synchronization

/// An all-or-nothing dispatch's hold on every store it reaches (``DispatchOptions/allOrNothing``).
///
/// Before any of its stores starts, the dispatch takes each of them, in identifier order (``Store/reserve(for:)``).
/// A store that another reservation holds, or on which operations run, makes it give back every store it took and
/// wait (queued on that store, without a thread) until woken, then try again: a reservation never holds one store
/// while it waits for another, so two reservations never wait for each other. While it holds its stores, no other
/// dispatch starts there (their starts park, ``ParkedStart``), so nothing another dispatch made can be overwritten
/// when it puts a store back. When the dispatch ends, it releases each store, first putting back the model the
/// store had when taken if the dispatch failed (``end(with:run:)``).
///
/// All mutable state is in `phase`, behind its lock; the stores' own state is changed under each store's lock.
final class Reservation: HolderWaiter {
  /// The dispatch's stores in identifier order, with their nodes in the run.
  private let stores: [(entry: StoreEntry, node: Int)]
  private let phase = LockedValue(Phase.idle)
  /// The main queue the dispatch's work runs on, for a `.mainThread` dispatch.
  let mainQueue: MainQueue?
  /// The main queue whose thread the dispatch's caller blocks until it ends: a `.sync` dispatch made on it.
  private let blockedQueue: MainQueue?
  /// The all-or-nothing dispatch this one was made inside (``ThreadContext/admission()``), which waits for it if it
  /// awaits it.
  ///
  /// Weak: one that ended holds no store, so being inside it no longer matters, and a chain of nested dispatches
  /// does not keep its ancestors alive. (Before Swift 6.2 a `let` cannot be `weak`: a `nonisolated(unsafe)` `var`
  /// then, assigned once, in `init`, and only read after.)
  #if compiler(>=6.2)
    weak let enclosing: Reservation?
  #else
    nonisolated(unsafe) weak var enclosing: Reservation?
  #endif
  /// The dispatch's identifier, which its transactions and rollback entries share.
  let dispatchID: TransactionID
  /// The operations in whose task the dispatch was made (``OperationTaskScope``): it does not wait for them to
  /// finish before taking their stores, since they may be awaiting it.
  let insideOperations: [any RunningOperation]

  private enum Phase {
    case idle
    /// Trying to take the stores; `woken` if a store it waited for freed meanwhile.
    case trying(then: @Sendable (Refusal?) -> Void, woken: Bool)
    /// Waiting for a store to wake it.
    case waiting(then: @Sendable (Refusal?) -> Void)
    case held
  }

  /// Why a reservation gives up a store rather than wait for it: waiting would never end.
  enum Refusal {
    /// The store is held by this all-or-nothing dispatch, inside which this one was made: it may be waiting for
    /// this one.
    case enclosing(Reservation)
    /// The store is held by a dispatch that runs on the main queue whose thread this dispatch's caller blocks.
    case blocksMainQueue
    /// The holder may be waiting for this dispatch through others: each dispatch of `path` waits for the next, or
    /// was made inside it (and so may be awaited by it); the last is this one's.
    case cycle(path: [TransactionID])
  }

  /// What asking one store for the reservation did (``Store/reserve(for:)``).
  enum Taking {
    case taken
    /// The store is busy; it wakes the reservation when it frees.
    case queued
    case refused(Refusal)
  }

  /// How an attempt to take every store ended.
  enum Acquisition {
    case held
    /// It waits; it calls its `then` once it holds them, or gave up.
    case waiting
    /// It gave up, holding none.
    case refused(Refusal)
  }

  /// How many all-or-nothing dispatches hold their stores, in every dispatcher: while none is, no dispatch looks for an
  /// admission (``ThreadContext/admission()``).
  static let running = Atomic<Int>(0)

  /// Every reservation queued behind a store another one holds, with that holder, in every dispatcher.
  ///
  /// What the check for a cycle of waits reads (``refusal(behind:)``). Only reservations that wait are in it.
  private static let waits = LockedValue<[ObjectIdentifier: (waiter: Reservation, holder: Reservation)]>([:])
  /// Whether this reservation is in ``waits``: read at the start of each attempt, so that one that never waited for a
  /// holder never takes that lock.
  private let inWaits = Atomic<Bool>(false)

  /// - Parameter dispatcherQueue: The dispatcher's main queue.
  /// - Parameter insideOperations: The operations in whose task the dispatch was made.
  init(
    targets: DispatchRun.Targets, placement: DispatchRun.Placement, dispatchID: TransactionID,
    dispatcherQueue: MainQueue, insideOperations: [any RunningOperation]
  ) {
    switch placement {
    case .main(let mainQueue): (self.mainQueue, blockedQueue) = (mainQueue, nil)
    case .waitingMainQueue: (mainQueue, blockedQueue) = (nil, dispatcherQueue)
    case .waitingCaller, .anyThread: (mainQueue, blockedQueue) = (nil, nil)
    }
    enclosing = ThreadContext.admission()
    self.dispatchID = dispatchID
    self.insideOperations = insideOperations
    var stores: [(entry: StoreEntry, node: Int)] = []
    targets.withUnsafeBufferPointer { entries in
      for node in entries.indices { stores.append((entries[node], node)) }
    }
    stores.sort { $0.entry.identifier < $1.entry.identifier }
    self.stores = stores
  }

  /// Takes every store, or waits for them.
  ///
  /// If it waits, it calls `then` on a background thread once it holds them (with `nil`), or gave up (with why).
  func acquire(then: @escaping @Sendable (Refusal?) -> Void) -> Acquisition {
    phase.withLock { $0 = .trying(then: then, woken: false) }
    return attempt(calling: nil)
  }

  /// One attempt to take every store, and another for each wake that came during it.
  /// - Parameter onDone: Called once the stores are held or refused, if this attempt is a retry.
  private func attempt(calling onDone: (@Sendable (Refusal?) -> Void)?) -> Acquisition {
    while true {
      switch takeAll() {
      case .taken:
        phase.withLock { $0 = .held }
        Self.running.wrappingAdd(1, ordering: .relaxed)
        onDone?(nil)
        return .held
      case .refused(let refusal):
        phase.withLock { $0 = .idle }
        onDone?(refusal)
        return .refused(refusal)
      case .queued:
        let again = phase.withLock { phase -> Bool in
          guard case .trying(let then, let woken) = phase else {
            preconditionFailure("DispatchStore: a reservation attempt ended in another phase")
          }
          if woken {
            phase = .trying(then: then, woken: false)
            return true
          }
          phase = .waiting(then: then)
          return false
        }
        if !again { return .waiting }
      }
    }
  }

  /// Takes the stores in order; if one is busy (it then queued this reservation) or refused, gives back those taken.
  private func takeAll() -> Taking {
    if inWaits.exchange(false, ordering: .acquiringAndReleasing) {
      Self.waits.withLock { $0[ObjectIdentifier(self)] = nil }
    }
    for (position, store) in stores.enumerated() {
      let taking = store.entry.withKind { $0.reserve($1, for: self) }
      if case .taken = taking { continue }
      let deliveries = PendingDeliveries()
      let given = stores[..<position].map { taken in
        taken.entry.withKind { $0.release($1, from: self, rollingBack: nil, deliveries: deliveries) }
      }
      Self.resume(given)
      return taking
    }
    return .taken
  }

  /// Whether this dispatch was made inside `other`, or inside one made inside it: it then passes `other`'s stores.
  func isInside(_ other: Reservation) -> Bool {
    var outer = enclosing
    while let reservation = outer {
      if reservation === other { return true }
      outer = reservation.enclosing
    }
    return false
  }

  /// The holder this reservation is queued behind, if it waits for one (``refusal(behind:)``).
  var holderWaitedFor: Reservation? {
    Self.waits.withLock { $0[ObjectIdentifier(self)]?.holder }
  }

  /// Whether it is queued behind `holder` (it may queue behind another once `holder` ended).
  func stillWaits(behind holder: Reservation) -> Bool {
    holderWaitedFor === holder
  }

  /// Why this reservation must not wait for `owner`, which holds a store it needs: called under that store's lock.
  ///
  /// If it may wait, it is noted as waiting behind `owner` (``waits``), until its next attempt.
  func refusal(behind owner: Reservation) -> Refusal? {
    if isInside(owner) { return .enclosing(owner) }
    if let blockedQueue, let holderQueue = owner.mainQueue, holderQueue.runsOnThread(of: blockedQueue) {
      return .blocksMainQueue
    }
    // Checked and noted in one critical section: of two reservations closing a cycle at once, the second sees it.
    return Self.waits.withLock { waits -> Refusal? in
      if let path = cycle(behind: owner, in: waits) { return .cycle(path: path) }
      waits[ObjectIdentifier(self)] = (self, owner)
      inWaits.store(true, ordering: .releasing)
      return nil
    }
  }

  /// The dispatches through which `owner` may be waiting for this one, if any: a reservation made inside `owner` (or
  /// `owner` itself) that waits behind a holder, which may in turn await one waiting behind another, and so on, up
  /// to a holder this one was made inside.
  private func cycle(
    behind owner: Reservation, in waits: [ObjectIdentifier: (waiter: Reservation, holder: Reservation)]
  ) -> [TransactionID]? {
    // Each holder reached, with the holder it was reached from.
    var reachedFrom: [ObjectIdentifier: Reservation?] = [ObjectIdentifier(owner): nil]
    var frontier = [owner]
    while let holder = frontier.popLast() {
      if isInside(holder) {
        // From `holder` back to `owner`.
        var holders: [TransactionID] = []
        var step: Reservation? = holder
        while let current = step {
          holders.append(current.dispatchID)
          step = reachedFrom[ObjectIdentifier(current)] ?? nil
        }
        return [dispatchID] + Array(holders.reversed()) + [dispatchID]
      }
      for (waiter, next) in waits.values where waiter === holder || waiter.isInside(holder) {
        guard reachedFrom[ObjectIdentifier(next)] == nil else { continue }
        reachedFrom[ObjectIdentifier(next)] = holder
        frontier.append(next)
      }
    }
    return nil
  }

  /// How many of the operations running on the store `store` are ones this dispatch was made inside.
  func runningInsideOperations(of store: ObjectIdentifier) -> UInt64 {
    var count: UInt64 = 0
    for operation in insideOperations where operation.storeID == store && !operation.isFinished { count += 1 }
    return count
  }

  /// A store this reservation waited for freed: it tries again, on a background thread.
  func wake() {
    let retry = phase.withLock { phase -> (@Sendable (Refusal?) -> Void)? in
      switch phase {
      case .trying(let then, _):
        phase = .trying(then: then, woken: true)
        return nil
      case .waiting(let then):
        phase = .trying(then: then, woken: false)
        return then
      case .idle, .held:
        return nil
      }
    }
    guard let retry else { return }
    DispatchQueue.global().async { [self] in _ = attempt(calling: retry) }
  }

  /// Releases every store once the dispatch ended with `result`.
  ///
  /// If it failed, or was cancelled (its later stores then did not start), each store it changed is put back first,
  /// with a rollback entry if a hook is registered (``TransactionHook``). Observers hear the rollback once every
  /// store is released: they may dispatch to any of them. Returns the dispatch's result: a failure becomes
  /// ``DispatchError/rolledBack(storeIdentifiers:failures:)``, a cancelled run ``DispatchError/cancelled``.
  func end(with result: Result<Void, DispatchError>, run: DispatchRun) -> Result<Void, DispatchError> {
    let cancelled = run.handle?.isCancelled == true
    let failed: Bool
    if case .failure = result { failed = true } else { failed = cancelled }
    let hook = failed ? run.middleware.borrowed.hook : nil
    let deliveries = PendingDeliveries()
    var restored: [String] = []
    let released = stores.map { store in
      let rollback =
        failed
        ? run.withAction(of: store.node) { Rollback(action: $0, hook: hook, dispatchID: dispatchID) } : nil
      let released = store.entry.withKind { $0.release($1, from: self, rollingBack: rollback, deliveries: deliveries) }
      if released.restored { restored.append(store.entry.identifier) }
      return released
    }
    Self.running.wrappingSubtract(1, ordering: .relaxed)
    deliveries.deliver()
    // The rollback entries were filed under the stores' locks: the hook is told after them, before the dispatch
    // completes.
    hook?.didHandle()
    Self.resume(released)
    if cancelled { return .failure(.cancelled) }
    guard case .failure(let error) = result, case .operationsFailed(let failures) = error else { return result }
    return .failure(.rolledBack(storeIdentifiers: restored, failures: failures))
  }

  /// Resumes the starts parked at stores just released, and wakes the reservations that waited for them.
  private static func resume(_ released: [StoreGate.Released]) {
    for store in released {
      for parked in store.parked { parked.release() }
      for reservation in store.waiting { reservation.wake() }
    }
  }
}

/// How a failed all-or-nothing dispatch puts a store back: announced with the action the store handled, and filed
/// with the hook as a rollback entry if one is registered.
struct Rollback {
  let action: any ActionType
  let hook: (any TransactionHook)?
  let dispatchID: TransactionID
}
