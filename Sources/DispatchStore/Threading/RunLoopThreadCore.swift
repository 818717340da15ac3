import CoreFoundation
import Dispatch
import Foundation
import Synchronization

/// The state and the loop of one ``MainRunLoopThread``'s OS thread.
///
/// Decisions are made under the lock by ``State``; starting, waking and running work happen after it.
final class RunLoopThreadCore: Sendable {
  /// The thread's run loop, to be woken from other threads.
  ///
  /// `@unchecked Sendable`: only `CFRunLoopPerformBlock`, `CFRunLoopWakeUp` and `CFRunLoopStop` are called on it
  /// from other threads, and Core Foundation documents them as thread-safe.
  struct RunLoopReference: @unchecked Sendable {
    let value: CFRunLoop
  }

  enum Phase {
    case notStarted
    case starting
    /// The loop is waiting for input; scheduling must wake it.
    case idle(RunLoopReference)
    /// A drain is running or already requested; new work is picked up by it.
    case draining
  }

  enum WakeAction {
    case none
    case start
    case wake(RunLoopReference)
  }

  struct State {
    var phase = Phase.notStarted
    var pending = FIFOQueue<@Sendable () -> Void>()
    /// The thread ends at the end of its current drain, once nothing is pending.
    var stopRequested = false

    /// Appends `work`; returns what the caller does after the lock.
    mutating func schedule(_ work: @escaping @Sendable () -> Void) -> WakeAction {
      pending.append(work)
      switch phase {
      case .notStarted:
        phase = .starting
        return .start
      case .starting, .draining:
        return .none
      case .idle(let runLoop):
        phase = .draining
        return .wake(runLoop)
      }
    }

    /// Asks a running thread to end; returns the loop to wake if it sleeps.
    mutating func stop() -> RunLoopReference? {
      switch phase {
      case .notStarted:
        return nil
      case .starting, .draining:
        stopRequested = true
        return nil
      case .idle(let runLoop):
        stopRequested = true
        phase = .draining
        return runLoop
      }
    }

    /// What a drain that found nothing pending does.
    enum Idle {
      case run(@Sendable () -> Void)
      case sleep
      case exit
    }

    /// The drain found nothing pending: run late work, go idle on `runLoop`, or end the thread.
    mutating func drainFoundNothing(runLoop: RunLoopReference) -> Idle {
      if let work = pending.popFirst() { return .run(work) }
      if stopRequested {
        stopRequested = false
        phase = .notStarted  // The next `schedule` starts a new thread.
        return .exit
      }
      phase = .idle(runLoop)
      return .sleep
    }
  }

  let name: String
  private let state = LockedValue(State())
  /// Incremented after each ``schedule(_:)`` appended its work, so that a polling drain sees new work without
  /// taking the lock.
  let scheduledCount = Atomic<UInt64>(0)
  private let idlePollingNanoseconds: UInt64
  /// Signalled when a thread of this core ended its loop: tests wait on it.
  let exited = DispatchSemaphore(value: 0)

  init(name: String, idlePollingNanoseconds: UInt64) {
    self.name = name
    self.idlePollingNanoseconds = idlePollingNanoseconds
  }

  func schedule(_ work: @escaping @Sendable () -> Void) {
    let action = state.withLock { $0.schedule(work) }
    scheduledCount.add(1, ordering: .releasing)
    switch action {
    case .none: break
    case .start: startThread()
    case .wake(let runLoop): wake(runLoop.value)
    }
  }

  func stop() {
    if let runLoop = state.withLock({ $0.stop() }) { wake(runLoop.value) }
  }

  private func startThread() {
    // The thread holds this core, not the `MainRunLoopThread`: releasing that one stops the thread.
    let thread = Thread { [self] in
      let context = ThreadContext.current
      context.mainRunLoopThread = self
      let runLoop = RunLoop.current
      // A timer far in the future keeps the loop alive when no work is pending.
      let keepAlive = Timer(timeInterval: 1_000_000_000, repeats: true) { _ in }
      runLoop.add(keepAlive, forMode: .default)
      var running = drain(runLoop: RunLoopReference(value: CFRunLoopGetCurrent()))
      while running {
        _ = runLoop.run(mode: .default, before: .distantFuture)
        running = context.mainRunLoopThread != nil
      }
      keepAlive.invalidate()
      exited.signal()
    }
    thread.name = name
    thread.stackSize = 1 << 20
    thread.start()
  }

  /// Runs every pending item, polls for more for `idlePolling`, then marks the loop idle; returns `false` if the
  /// thread is to end.
  @discardableResult
  private func drain(runLoop: RunLoopReference) -> Bool {
    while true {
      // Read before looking at the queue: work scheduled after this changes the count.
      let seen = scheduledCount.load(ordering: .acquiring)
      if let work = state.withLock({ $0.pending.popFirst() }) {
        work()
        continue
      }
      if pollForWork(scheduledCountWas: seen) { continue }
      switch state.withLock({ $0.drainFoundNothing(runLoop: runLoop) }) {
      case .run(let work):
        work()
      case .sleep:
        return true
      case .exit:
        ThreadContext.current.mainRunLoopThread = nil
        CFRunLoopStop(runLoop.value)
        return false
      }
    }
  }

  /// Waits up to `idlePolling` for work to be scheduled; returns whether some was.
  ///
  /// The phase stays `.draining` meanwhile, so `schedule` appends without waking the run loop.
  private func pollForWork(scheduledCountWas seen: UInt64) -> Bool {
    guard idlePollingNanoseconds > 0 else { return false }
    let deadline = MonotonicClock.nanoseconds() &+ idlePollingNanoseconds
    repeat {
      if scheduledCount.load(ordering: .acquiring) != seen { return true }
      sched_yield()  // Lets a thread waiting for this core run: it may be the one about to schedule work.
    } while MonotonicClock.nanoseconds() < deadline
    return scheduledCount.load(ordering: .acquiring) != seen
  }

  /// Runs a drain on the loop's thread: a block for its next pass, and a wake-up so that the pass happens now.
  ///
  /// Not a zero-interval `Timer`, which re-arms a timer fd from both threads: proposal 0002 has the measurements.
  private func wake(_ runLoop: CFRunLoop) {
    CFRunLoopPerformBlock(runLoop, kCFRunLoopDefaultMode) { [self] in
      drain(runLoop: RunLoopReference(value: CFRunLoopGetCurrent()))
    }
    CFRunLoopWakeUp(runLoop)
  }
}
