import Dispatch
import Foundation

@testable import DispatchStore

/// Runs `work` and finishes `operation` on a global-queue thread, once a dispatch (or a dependent operation)
/// registered to hear it finish.
///
/// A plain hop to another thread may finish the operation while its start is still running, which the dispatcher
/// handles on the dispatching thread; this makes the finish late whatever the scheduling. It spins on the
/// operation's own state, not on time; a test suite's time limit ends a hang.
func finishLate<Model, Action>(
  _ operation: ActionOperation<Model, Action>, after work: @escaping @Sendable () -> Void
) {
  DispatchQueue.global().async {
    while !operation.isAwaited { sched_yield() }
    work()
    operation.finish()
  }
}
