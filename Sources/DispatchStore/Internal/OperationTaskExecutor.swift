import Dispatch

/// Runs the tasks of `async` operations on Dispatch's global queue rather than Swift's cooperative pool.
///
/// A `.sync` dispatch blocks its calling thread until the operation finished. Called from `async` code, that thread
/// is one of the pool's few; were the operation's task to need a pool thread too, enough blocked callers would
/// leave it none, and both would wait forever. On this executor the task's own work never needs the pool (what it
/// awaits on an actor still does).
final class OperationTaskExecutor: TaskExecutor {
  static let shared = OperationTaskExecutor()

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    DispatchQueue.global().async { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
  }
}
