import Dispatch
import Synchronization

/// What an all-or-nothing dispatch (``Reservation``) keeps on a store it holds, and who waits for it.
///
/// Kept in the store's state (``StoreState/gate``), and read and changed only under the store's lock; `nil` while no
/// reservation holds the store or waits for it. While a reservation holds the store:
/// - a reduction in place by another dispatch does not run: its start is parked (``ParkedStart``) in the critical
///   section where it would have changed the model (``Store/change(by:hooked:operation:announcesFailure:gated:_:)``);
/// - an operation of another dispatch does not start: it is parked where it enters the store
///   (``Store/enterForOperation()``);
/// - restores of the store's model fail, changing nothing: they are the user's, who can try again.
/// The holder's own starts pass: they run on a thread marked with its reservation (``ThreadContext/reserving``).
///
/// `@unchecked Sendable`: every property is read and written under the lock of the one store whose state holds it.
@usableFromInline
final class StoreGate: @unchecked Sendable {
  /// The reservation holding the store; `nil` while reservations only wait for its operations to finish.
  var owner: Reservation?
  /// The model when the owner took the store, to put back if the owner fails.
  var original: (any ModelType)?
  /// The store's version when the owner took it: the owner changed the store if it moved.
  var version: UInt64 = 0
  /// Starts of other dispatches waiting for the owner to end, in arrival order.
  var parked: [ParkedStart] = []
  /// Reservations waiting for the owner to end, or for the store's operations to finish.
  var waiting: [Reservation] = []

  /// The bits of ``Store/gateWord``: how many operations of the store are running (the low 32 bits), whether a
  /// reservation holds the store, and whether one waits for the count to reach zero.
  enum Word {
    static let count: UInt64 = 0xFFFF_FFFF
    static let held: UInt64 = 1 << 32
    static let waiter: UInt64 = 1 << 33
  }

  /// What ending a reservation's hold on a store left to do (``Store/release(from:rollingBack:deliveries:)``).
  struct Released {
    /// Whether the model was put back.
    var restored = false
    /// The starts that waited, to resume.
    var parked: [ParkedStart] = []
    /// The reservations that waited, to wake.
    var waiting: [Reservation] = []
    /// The gate, and the model put back, released with this value, after the store's lock: a class inside a model
    /// may run its `deinit`.
    var gate: StoreGate?
    var replaced: (any ModelType)?
  }

  /// What a start does here while `owner` holds the store.
  ///
  /// `nil` to go on (it is the owner's, or nobody holds the store), otherwise the error that stops it
  /// (``ParkedStart/Parked``). Called under the store's lock.
  @usableFromInline
  func stop() -> (any Error)? {
    guard let owner else { return nil }
    // The owner's own start, or a `.sync` dispatch its observers, middleware or operation blocks made on its thread:
    // it runs inside the owner (waiting would wait for the owner, which waits for it), and is put back with it.
    // So does a dispatch made inside an all-or-nothing dispatch made inside the owner: the owner may await it.
    if let mine = ThreadContext.withCurrent({ $0.reserving }) ?? OperationTaskScope.current?.reserving,
      mine === owner || mine.isInside(owner)
    {
      return nil
    }
    let parked = ParkedStart()
    self.parked.append(parked)
    return ParkedStart.Parked(start: parked, holder: owner)
  }
}

extension Store {
  /// Takes the store for `reservation` if nobody holds it and no operation runs (other than those it was made
  /// inside, which may be awaiting it); otherwise queues `reservation` to be woken when that changes, or refuses it
  /// if its wait would never end (``Reservation/refusal(behind:)``).
  func reserve(for reservation: Reservation) -> Reservation.Taking {
    state.withLock { state in
      let gate = state.gate ?? StoreGate()
      state.gate = gate
      if let owner = gate.owner {
        if let refusal = reservation.refusal(behind: owner) { return .refused(refusal) }
        gate.waiting.append(reservation)
        return .queued
      }
      var word = gateWord.load(ordering: .acquiring)
      var free = false
      while true {
        // An operation counts itself as running until after it reads as finished, so those it was made inside are
        // never fewer than it finds running; it waits for every other one.
        let inside = reservation.runningInsideOperations(of: ObjectIdentifier(self))
        free = word & StoreGate.Word.count <= inside
        let desired = word | (free ? StoreGate.Word.held : StoreGate.Word.waiter)
        let (exchanged, original) = gateWord.compareExchange(
          expected: word, desired: desired, ordering: .acquiringAndReleasing)
        if exchanged { break }
        word = original
      }
      guard free else {
        gate.waiting.append(reservation)
        return .queued
      }
      gate.owner = reservation
      gate.original = state.model
      gate.version = state.version
      return .taken
    }
  }

  /// Ends `reservation`'s hold on the store, first putting back the model it had when taken with `rollback`.
  ///
  /// The model is put back, and a rollback entry filed with the hook, only if it changed since. Observers hear of
  /// the restore, with the rollback's action, through `deliveries`, once the caller released every store.
  /// - Returns: Whether the model was put back; the starts and reservations that waited, to resume and wake.
  func release(
    from reservation: Reservation, rollingBack rollback: Rollback?, deliveries: PendingDeliveries
  ) -> StoreGate.Released {
    let deliverer = ThreadContext.currentDeliverer
    let (released, turn) = state.withLock { state -> (StoreGate.Released, SynchronousTurn<Model, Action>) in
      guard let gate = state.gate, gate.owner === reservation else { return (StoreGate.Released(), .none) }
      var released = StoreGate.Released(parked: gate.parked, waiting: gate.waiting, gate: gate)
      var turn = SynchronousTurn<Model, Action>.none
      if let rollback, let action = rollback.action as? Action, state.version != gate.version,
        let original = gate.original as? Model
      {
        released.replaced = state.model
        state.model = original
        state.version &+= 1
        state.announcedVersion = state.version
        released.restored = true
        if let hook = rollback.hook {
          // Filed in the critical section that put the model back, as a reduction files its entry.
          state.filedVersion = state.version
          state.filedEvent = hook.fileRollback(
            dispatchID: rollback.dispatchID, store: identifier, action: action, model: original)
        }
        if let observers = state.observers {
          turn = observers.changes(
            of: original, by: action, origin: .restore, store: self, mainQueue: state.mainQueue, deliverer: deliverer)
        }
      }
      gateWord.bitwiseAnd(~StoreGate.Word.held, ordering: .acquiringAndReleasing)
      state.gate = nil
      return (released, turn)
    }
    if case .none = turn {} else { deliveries.add(for: self) { [self] in deliverSynchronously(turn) } }
    return released
  }
}
