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
final class Reservation: Sendable {
  /// The dispatch's stores in identifier order, with their nodes in the run.
  private let stores: [(entry: StoreEntry, node: Int)]
  private let phase = LockedValue(Phase.idle)
  /// The main queue the dispatch's work runs on, for a `.mainThread` dispatch.
  let mainQueue: MainQueue?

  private enum Phase {
    case idle
    /// Trying to take the stores; `woken` if a store it waited for freed meanwhile.
    case trying(then: @Sendable () -> Void, woken: Bool)
    /// Waiting for a store to wake it.
    case waiting(then: @Sendable () -> Void)
    case held
  }

  /// How many all-or-nothing dispatches hold their stores, in every dispatcher: while none is, no dispatch looks for an
  /// admission (``admission()``).
  private static let running = Atomic<Int>(0)

  /// The all-or-nothing dispatch that a dispatch made here is part of, if any.
  ///
  /// A dispatch is part of one when its observers, middleware or operations make it, on a thread starting its stores
  /// (``ThreadContext/reserving``) or inside an operation's task (``ReservationScope``). Such a dispatch passes the stores it holds, as its own starts do, and is put back with
  /// them: waiting for it would wait for itself.
  static func admission() -> ObjectIdentifier? {
    guard running.load(ordering: .relaxed) > 0 else { return nil }
    return ThreadContext.withCurrent { $0.reserving } ?? ReservationScope.reserving
  }

  init(targets: DispatchRun.Targets, placement: DispatchRun.Placement) {
    if case .main(let mainQueue) = placement { self.mainQueue = mainQueue } else { self.mainQueue = nil }
    var stores: [(entry: StoreEntry, node: Int)] = []
    targets.withUnsafeBufferPointer { entries in
      for node in entries.indices { stores.append((entries[node], node)) }
    }
    stores.sort { $0.entry.identifier < $1.entry.identifier }
    self.stores = stores
  }

  /// Takes every store, or waits for them.
  ///
  /// Returns `true` if it holds them now. Otherwise it waits, and calls `then` once it holds them, on a background
  /// thread.
  func acquire(then: @escaping @Sendable () -> Void) -> Bool {
    phase.withLock { $0 = .trying(then: then, woken: false) }
    return attempt(calling: nil)
  }

  /// One attempt to take every store, and another for each wake that came during it.
  /// - Parameter onHeld: Called once the stores are held, if this attempt is a retry.
  private func attempt(calling onHeld: (@Sendable () -> Void)?) -> Bool {
    while true {
      if takeAll() {
        phase.withLock { $0 = .held }
        Self.running.wrappingAdd(1, ordering: .relaxed)
        onHeld?()
        return true
      }
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
      if !again { return false }
    }
  }

  /// Takes the stores in order; if one is busy (it then queued this reservation), gives back those taken.
  private func takeAll() -> Bool {
    for (position, store) in stores.enumerated() {
      if store.entry.withKind({ $0.reserve($1, for: self) }) { continue }
      for taken in stores[..<position] { release(taken, rollingBack: nil) }
      return false
    }
    return true
  }

  /// A store this reservation waited for freed: it tries again, on a background thread.
  func wake() {
    let retry = phase.withLock { phase -> (@Sendable () -> Void)? in
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
  /// If it failed, each store it changed is put back first, with a rollback record if a recorder is registered.
  /// Returns the dispatch's result: a failure becomes ``DispatchError/rolledBack(storeIdentifiers:failures:)``.
  func end(with result: Result<Void, DispatchError>, run: DispatchRun) -> Result<Void, DispatchError> {
    let failed: Bool
    if case .failure = result { failed = true } else { failed = false }
    let recorder = failed ? run.middleware.borrowed.recorder : nil
    // Every all-or-nothing dispatch has a handle, whose identifier its transactions share.
    let dispatchID = run.dispatchID ?? TransactionID.next()
    var restored: [String] = []
    for store in stores {
      let rollback =
        failed
        ? run.withAction(of: store.node) { Rollback(action: $0, recorder: recorder, dispatchID: dispatchID) } : nil
      if release(store, rollingBack: rollback) { restored.append(store.entry.identifier) }
    }
    Self.running.wrappingSubtract(1, ordering: .relaxed)
    guard case .failure(let error) = result, case .operationsFailed(let failures) = error else { return result }
    return .failure(.rolledBack(storeIdentifiers: restored, failures: failures))
  }

  /// Releases `store`, putting its model back with `rollback`, if any.
  ///
  /// Resumes the starts parked there and wakes the reservations waiting. Returns whether the model was put back.
  @discardableResult
  private func release(_ store: (entry: StoreEntry, node: Int), rollingBack rollback: Rollback?) -> Bool {
    let released = store.entry.withKind { $0.release($1, from: self, rollingBack: rollback) }
    for parked in released.parked { parked.release() }
    for reservation in released.waiting { reservation.wake() }
    return released.restored
  }
}

/// The all-or-nothing dispatch whose operation's task this is (``Reservation/admission()``): set for the task of an
/// operation with an `async` body that one of its stores started.
enum ReservationScope {
  @TaskLocal static var reserving: ObjectIdentifier?
}

/// How a failed all-or-nothing dispatch puts a store back: announced with the action the store handled, and filed
/// as a rollback record (``Record/isRollback``) if a recorder is registered.
struct Rollback {
  let action: any ActionType
  let recorder: RecorderMiddleware?
  let dispatchID: TransactionID
}
