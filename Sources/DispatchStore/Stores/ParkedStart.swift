import Dispatch
import Synchronization

/// A start of a store, in a dispatch that found the store held by an all-or-nothing dispatch: it runs when that one
/// ends, where its dispatch runs, and tells its run as an operation that finished later does.
///
/// Three events, in any order, make it run: its gate's release, its run's setup
/// (``setUp(run:index:hooked:admitted:)``), and the run registering to hear it (``start(notifying:token:)``).
final class ParkedStart: OperationStarting, HolderWaiter {
  /// The error a parked start reports up to its run, carrying it.
  struct Parked: Error {
    let start: ParkedStart
    /// The all-or-nothing dispatch holding the store.
    let holder: Reservation
  }

  private struct State {
    var released = false
    var cancelled = false
    var scheduled = false
    var run: (run: DispatchRun, index: Int, hooked: HookedTransaction?, admitted: Reservation?)?
    var handler: (any OperationCompletionHandler)?
  }

  private let state = LockedValue(State())

  /// Sets what the start needs to run: its run, its node, the transaction its hook follows, and the all-or-nothing
  /// dispatch it is part of (``ThreadContext/admission()``), if any.
  func setUp(run: DispatchRun, index: Int, hooked: HookedTransaction?, admitted: Reservation?) {
    runIfReady { $0.run = (run, index, hooked, admitted) }
  }

  /// The gate it waited at opened.
  func release() {
    runIfReady { $0.released = true }
  }

  /// Whether the gate it waits at, which `holder` closed, is still closed.
  func stillWaits(behind holder: Reservation) -> Bool {
    state.withLock { !$0.released }
  }

  func start(notifying handler: any OperationCompletionHandler, token: Int) {
    runIfReady { $0.handler = handler }
  }

  func startUnobserved() -> OperationOutcome { .unfinished }

  func attach(_ hooked: HookedTransaction) {}

  /// Its dispatch was cancelled: when its gate opens, it ends as cancelled without starting the store.
  func cancel() {
    state.withLock { $0.cancelled = true }
  }

  /// Applies `event`, then, once the start has everything, schedules it where its run places work.
  private func runIfReady(_ event: (inout State) -> Void) {
    let ready = state.withLock {
      state -> (DispatchRun, Int, HookedTransaction?, Reservation?, any OperationCompletionHandler, Bool)? in
      event(&state)
      guard state.released, !state.scheduled, let run = state.run, let handler = state.handler else { return nil }
      state.scheduled = true
      return (run.run, run.index, run.hooked, run.admitted, handler, state.cancelled)
    }
    guard let (run, index, hooked, admitted, handler, cancelled) = ready else { return }
    let resume: @Sendable () -> Void = {
      if cancelled || run.handle?.isCancelled == true {
        return handler.operationFinished(token: index, error: DispatchError.cancelled)
      }
      ThreadContext.withReserving(admitted) { run.resume(index, hooked: hooked, notifying: handler) }
    }
    if case .main(let mainQueue) = run.placement {
      mainQueue.schedule(resume)
    } else {
      DispatchQueue.global().async(execute: resume)
    }
  }
}
