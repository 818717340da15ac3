import Synchronization

// The store's count of running operations, which an all-or-nothing dispatch's reservation waits for
// (`StoreGate.Word`): counted as a dispatch starts an operation, uncounted as the operation finishes.

extension Store {
  /// Counts an operation of this store as running, unless a reservation holds the store for another dispatch:
  /// returns `nil` to start it, or the error that stops it (``StoreGate/stop()``), leaving the count as it was.
  @inline(__always)
  func enterForOperation() -> (any Error)? {
    let word = gateWord.wrappingAdd(1, ordering: .acquiringAndReleasing).oldValue
    guard word & StoreGate.Word.held != 0 else { return nil }
    return enterHeld()
  }

  @inline(never)
  private func enterHeld() -> (any Error)? {
    state.withLock { state in
      guard let stopped = state.gate?.stop() else { return nil }
      // Not started: not counted. (No reservation waits for the count while one holds the store.)
      gateWord.wrappingSubtract(1, ordering: .acquiringAndReleasing)
      return stopped
    }
  }

  /// Whether an all-or-nothing dispatch holds the store: one atomic load, for a check before taking its lock.
  var isHeld: Bool { gateWord.load(ordering: .acquiring) & StoreGate.Word.held != 0 }

  /// An operation counted by ``enterForOperation()`` finished: wakes the reservations waiting for operations.
  ///
  /// Every operation a dispatch starts was counted: its store made it right after counting it.
  @inline(__always)
  func leaveForOperation() {
    let word = gateWord.wrappingSubtract(1, ordering: .acquiringAndReleasing).oldValue
    guard word & StoreGate.Word.waiter != 0 else { return }
    wakeWaitingReservations()
  }

  /// An operation finished while reservations waited for the store's operations: wakes them, each to try again (one
  /// made inside the operations still running may take the store now; the others queue again).
  @inline(never)
  private func wakeWaitingReservations() {
    let (woken, dropped) = state.withLock { state -> ([Reservation], StoreGate?) in
      guard let gate = state.gate, gate.owner == nil, gateWord.load(ordering: .acquiring) & StoreGate.Word.waiter != 0
      else { return ([], nil) }
      gateWord.bitwiseAnd(~StoreGate.Word.waiter, ordering: .acquiringAndReleasing)
      state.gate = nil
      return (gate.waiting, gate)
    }
    withExtendedLifetime(dropped) {}
    for reservation in woken { reservation.wake() }
  }
}
