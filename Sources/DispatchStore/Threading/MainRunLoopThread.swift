import CoreFoundation
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// A thread owned by the library that runs a `RunLoop`, used as the "main thread" of `.mainThread` dispatch and
/// of observer notifications.
///
/// A Linux command-line tool or server never runs the process main thread's loop, so `DispatchQueue.main` and
/// `@MainActor` work would never run there. This thread runs its own loop from the first ``schedule(_:)`` on, in
/// any process. Work scheduled on it runs one item at a time, in the order it was scheduled.
///
/// ```swift
/// MainRunLoopThread.shared.schedule {
///   precondition(MainRunLoopThread.shared.isCurrent)
/// }
/// ```
///
/// After running the work it was given, the thread keeps polling for more for a short while (``idlePolling``)
/// before it goes back to its run loop to sleep: work scheduled meanwhile runs without waiting for it to wake.
///
/// The thread ends when ``stop()`` is called or the object is released, once the work scheduled before has run;
/// ``shared`` lives as long as the process.
///
/// > Important: Never block this thread waiting for work that is itself scheduled on it (for example a `.sync`
/// > dispatch whose operation finishes on the main run-loop thread): that work cannot run until you return.
final class MainRunLoopThread: Sendable {
  /// The thread used by every ``Dispatcher`` unless it is given another.
  static let shared = MainRunLoopThread(name: "DispatchStore.main")

  /// The thread's name, as shown by debuggers.
  let name: String
  /// How long the thread polls for more work after running out, before it sleeps.
  let idlePolling: Duration
  /// What the OS thread runs and holds: never this object, so that releasing it ends the thread.
  let core: RunLoopThreadCore

  /// Creates a new run-loop thread; it starts on first use.
  /// - Parameters:
  ///   - name: The thread's name, as shown by debuggers.
  ///   - idlePolling: How long the thread keeps polling for more work once it ran out, awake on its core, before
  ///     it sleeps. `.zero` makes the thread sleep at once.
  init(name: String, idlePolling: Duration = .microseconds(50)) {
    self.name = name
    self.idlePolling = idlePolling
    let (seconds, attoseconds) = max(idlePolling, .zero).components
    core = RunLoopThreadCore(
      name: name,
      idlePollingNanoseconds: UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000))
  }

  deinit {
    core.stop()
  }

  /// Whether the calling thread is this run-loop thread.
  var isCurrent: Bool {
    ThreadContext.current.mainRunLoopThread === core
  }

  /// Schedules `work` to run on this thread after the work scheduled before it.
  ///
  /// - Parameter work: The closure to run. It runs on this thread even when called from it (it is then queued,
  ///   not run inline). If the thread was stopped, a new one starts for it.
  func schedule(_ work: @escaping @Sendable () -> Void) {
    core.schedule(work)
  }

  /// Runs `work` on this thread: at once if called from it, otherwise scheduled.
  /// - Parameter work: The closure to run.
  func execute(_ work: @escaping @Sendable () -> Void) {
    if isCurrent { work() } else { schedule(work) }
  }

  /// Ends the OS thread once the work scheduled so far has run; returns at once.
  ///
  /// Nothing scheduled is dropped: work scheduled after this call starts a new thread. Releasing the object stops
  /// the thread too.
  func stop() {
    core.stop()
  }
}

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
