import Dispatch
import Synchronization

/// A FIFO lane of dispatches: each job starts on the lane's executor after the previous job called `done`.
final class Lane: Sendable {
  typealias Job = @Sendable (_ done: @escaping @Sendable () -> Void) -> Void

  enum Executor: Sendable {
    case queue(DispatchQueue)
    case main(MainQueue)

    func schedule(_ work: @escaping @Sendable () -> Void) {
      switch self {
      case .queue(let queue): queue.async(execute: work)
      case .main(let mainQueue): mainQueue.schedule(work)
      }
    }
  }

  private struct State {
    var pending = FIFOQueue<Job>()
    /// A job is running (or scheduled to run); later jobs wait in `pending`.
    var isBusy = false
  }

  let executor: Executor
  private let state = Mutex(State())

  init(executor: Executor) {
    self.executor = executor
  }

  /// Appends `job`; it starts once every earlier job is done.
  func enqueue(_ job: @escaping Job) {
    let startNow = state.withLock(owner: self) { state -> Bool in
      if state.isBusy {
        state.pending.append(job)
        return false
      }
      state.isBusy = true
      return true
    }
    if startNow { run(job) }
  }

  private func run(_ job: @escaping Job) {
    executor.schedule { [self] in
      job { [self] in jobDone() }
    }
  }

  private func jobDone() {
    let next = state.withLock(owner: self) { state -> Job? in
      if let next = state.pending.popFirst() { return next }
      state.isBusy = false
      return nil
    }
    if let next { run(next) }
  }
}
