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
