import CoreFoundation
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
/// before it goes back to its run loop to sleep. Work scheduled meanwhile starts within a microsecond or so,
/// instead of waiting for the kernel to wake a sleeping thread, which takes about 25 µs on a virtual machine.
///
/// > Important: Never block this thread waiting for work that is itself scheduled on it (for example a `.sync`
/// > dispatch whose operation finishes on the main run-loop thread): that work cannot run until you return.
public final class MainRunLoopThread: Sendable {
  /// The thread used by every ``Dispatcher`` unless it is given another.
  public static let shared = MainRunLoopThread(name: "DispatchStore.main")

  /// The thread's name, as shown by debuggers.
  public let name: String
  /// How long the thread polls for more work after running out, before it sleeps.
  public let idlePolling: Duration

  /// Creates a new run-loop thread; it starts on first use.
  /// - Parameters:
  ///   - name: The thread's name, as shown by debuggers.
  ///   - idlePolling: How long the thread keeps polling for more work once it ran out, before it sleeps. Polling
  ///     costs CPU time, at most this much per burst of work; `.zero` makes the thread sleep at once.
  public init(name: String, idlePolling: Duration = .microseconds(50)) {
    self.name = name
    self.idlePolling = idlePolling
    let (seconds, attoseconds) = max(idlePolling, .zero).components
    self.idlePollingNanoseconds = UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
  }

  /// Whether the calling thread is this run-loop thread.
  public var isCurrent: Bool {
    ThreadContext.current.mainRunLoopThread === self
  }

  /// Schedules `work` to run on this thread after the work scheduled before it.
  ///
  /// - Parameter work: The closure to run. It runs on this thread even when called from it (it is then queued,
  ///   not run inline).
  public func schedule(_ work: @escaping @Sendable () -> Void) {
    let action = state.withLock { state -> WakeAction in
      state.pending.append(work)
      switch state.phase {
      case .notStarted:
        state.phase = .starting
        return .start
      case .starting, .draining:
        return .none
      case .idle(let runLoop):
        state.phase = .draining
        return .wake(runLoop)
      }
    }
    scheduledCount.add(1, ordering: .releasing)
    switch action {
    case .none: break
    case .start: startThread()
    case .wake(let runLoop): wake(runLoop.value)
    }
  }

  /// Runs `work` on this thread: at once if called from it, otherwise scheduled.
  /// - Parameter work: The closure to run.
  public func execute(_ work: @escaping @Sendable () -> Void) {
    if isCurrent { work() } else { schedule(work) }
  }

  // MARK: - Implementation

  /// The thread's run loop, to be woken from other threads.
  ///
  /// `@unchecked Sendable`: only `CFRunLoopPerformBlock` and `CFRunLoopWakeUp` are called on it from other
  /// threads, and Core Foundation documents both as thread-safe.
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
  }

  private let state = LockedValue(State())
  /// Incremented after each ``schedule(_:)`` appended its work, so that a polling drain sees new work without
  /// taking the lock.
  private let scheduledCount = Atomic<UInt64>(0)
  private let idlePollingNanoseconds: UInt64

  private func startThread() {
    let thread = Thread { [self] in
      ThreadContext.current.mainRunLoopThread = self
      let runLoop = RunLoop.current
      // A timer far in the future keeps the loop alive when no work is pending.
      runLoop.add(Timer(timeInterval: 1_000_000_000, repeats: true) { _ in }, forMode: .default)
      drain(runLoop: RunLoopReference(value: CFRunLoopGetCurrent()))
      while true {
        _ = runLoop.run(mode: .default, before: .distantFuture)
      }
    }
    thread.name = name
    thread.stackSize = 1 << 20
    thread.start()
  }

  /// Runs every pending item, polls for more for `idlePolling`, then marks the loop idle.
  private func drain(runLoop: RunLoopReference) {
    while true {
      // Read before looking at the queue: work scheduled after this changes the count.
      let seen = scheduledCount.load(ordering: .acquiring)
      if let work = state.withLock({ $0.pending.popFirst() }) {
        work()
        continue
      }
      if pollForWork(scheduledCountWas: seen) { continue }
      let next = state.withLock { state -> (@Sendable () -> Void)? in
        if let work = state.pending.popFirst() { return work }
        state.phase = .idle(runLoop)
        return nil
      }
      guard let next else { return }
      next()
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
  /// Faster than adding a zero-interval `Timer` (which re-arms a timer fd from both threads): about half the
  /// round-trip time on Linux, measured by the `MainRunLoopThread.schedule(roundTrip)` benchmark.
  private func wake(_ runLoop: CFRunLoop) {
    CFRunLoopPerformBlock(runLoop, kCFRunLoopDefaultMode) { [self] in
      drain(runLoop: RunLoopReference(value: CFRunLoopGetCurrent()))
    }
    CFRunLoopWakeUp(runLoop)
  }
}
