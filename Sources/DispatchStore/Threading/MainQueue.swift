import Foundation
import Synchronization

/// The thread that `.mainThread` dispatches and main-thread observer notifications run on.
///
/// A ``Dispatcher`` uses the process main thread on Apple platforms, where every app runs the main thread's loop, and
/// the library's own run-loop thread elsewhere, where a tool or server usually runs none.
public struct MainQueue: Sendable {
  enum Kind: Sendable {
    case runLoopThread(MainRunLoopThread)
    case dispatchMain
  }

  let kind: Kind

  /// The queue a ``Dispatcher`` and its stores use unless given another: ``processMainThread`` on Apple platforms,
  /// ``libraryThread`` on Linux and other platforms.
  @usableFromInline static var `default`: MainQueue {
    // `DISPATCHSTORE_PROCESS_MAIN_THREAD` builds the Apple platforms' branch on Linux (CI runs Examples/DispatchMain
    // with it).
    #if canImport(Darwin) || DISPATCHSTORE_PROCESS_MAIN_THREAD
      processMainThread
    #else
      libraryThread
    #endif
  }

  /// The library's own run-loop thread: a thread the library owns that runs a `RunLoop`, which works in any process;
  /// the default on Linux.
  public static var libraryThread: MainQueue { MainQueue(kind: .runLoopThread(.shared)) }

  /// A run-loop thread of its own (the library's tests).
  static func runLoopThread(_ thread: MainRunLoopThread) -> MainQueue {
    MainQueue(kind: .runLoopThread(thread))
  }

  /// The process main thread (the main actor's), through `DispatchQueue.main`: the default on Apple platforms,
  /// where every app's main thread runs its loop; also for processes that call `dispatchMain()` or have an `async`
  /// main.
  ///
  /// On Linux, `dispatchMain()` ends the main thread and a thread of Dispatch's pool runs the main queue's work:
  /// ``isCurrent`` is then true on that thread, while it runs the main queue's work.
  ///
  /// > Important: In a process that never services `DispatchQueue.main` (a tool or server whose main thread
  /// > neither calls `dispatchMain()` nor runs its `RunLoop`, and has no `async` main), work scheduled here runs only
  /// > when the main thread calls ``waitUntilDrained()``. Use ``libraryThread`` there.
  public static var processMainThread: MainQueue { MainQueue(kind: .dispatchMain) }

  /// Whether the calling thread is running this queue's work.
  ///
  /// For ``processMainThread``: on the main thread, or running `DispatchQueue.main`'s work on any thread.
  public var isCurrent: Bool {
    switch kind {
    case .runLoopThread(let thread): return thread.isCurrent
    case .dispatchMain: return Thread.isMainThread || DispatchQueue.getSpecific(key: MainQueueMarker.key) != nil
    }
  }

  /// The run-loop thread's core; `nil` for the process main thread.
  var runLoopCore: RunLoopThreadCore? {
    guard case .runLoopThread(let thread) = kind else { return nil }
    return thread.core
  }

  /// Whether this queue's work runs on the thread `other`'s does: both are the same run-loop thread, or both the
  /// process main thread.
  func runsOnThread(of other: MainQueue) -> Bool {
    switch (kind, other.kind) {
    case (.runLoopThread(let mine), .runLoopThread(let theirs)): return mine.core === theirs.core
    case (.dispatchMain, .dispatchMain): return true
    default: return false
    }
  }

  /// Schedules `work` after the work scheduled before it.
  /// - Parameter work: The closure to run on this queue's thread.
  public func schedule(_ work: @escaping @Sendable () -> Void) {
    switch kind {
    case .runLoopThread(let thread): thread.schedule(work)
    case .dispatchMain: MainQueueMarker.schedule(work)
    }
  }

  /// Awaits until the work scheduled on this queue so far has run, and the work that work scheduled here in turn:
  /// pending `.mainThread` dispatches and main-thread observer notifications.
  ///
  /// A command-line tool awaits it before it exits, so that no notification is lost; top-level code too. Dispatches
  /// still running on other threads schedule their notifications when they finish: await them first. Work the main
  /// actor runs for ``Store/observeOnMainActor(_:)`` is counted too when this is ``processMainThread``.
  /// A pass runs a marker through the queue; passes repeat while anything else was scheduled meanwhile. Other
  /// threads that keep scheduling work would keep it waiting for ever: after 1,000 passes it returns
  /// `false`, with the work scheduled before the call done.
  /// - Returns: `true` once a pass found nothing new scheduled; `false` after 1,000 passes that each
  ///   found new work.
  @discardableResult
  public func drain() async -> Bool {
    for _ in 0..<Self.drainPassLimit {
      let before = scheduledCount
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        schedule { continuation.resume() }
      }
      // Only the marker was scheduled meanwhile: everything before it ran, and scheduled nothing more.
      if scheduledCount == before &+ 1 { return true }
    }
    return false
  }

  /// Blocks the calling thread until the work scheduled on this queue so far has run, and what it scheduled here.
  ///
  /// The synchronous form of ``drain()``, for code that cannot await: what it waits for (pending `.mainThread`
  /// dispatches and main-thread observer notifications), and when it gives up, are as there.
  /// - Returns: `true` once a pass found nothing new scheduled; `false` at once if called from this queue's own
  ///   work on a thread that does not run its loop (``libraryThread``'s work, or `DispatchQueue.main`'s work
  ///   after `dispatchMain()`), which cannot wait for the work queued behind it, or after 1,000 passes
  ///   that each found new work.
  ///
  /// > Important: Unavailable in `async` code, top-level code that awaits included: use ``drain()`` there. Called
  /// > on the process main thread for ``processMainThread``, it runs the main run loop until the queue is drained,
  /// > so that it also works in a tool whose main thread runs no loop otherwise. Called on another thread, it waits
  /// > for the main queue to run, so the main thread must service it (an app, `dispatchMain()`), not wait for this
  /// > thread.
  @available(*, noasync, message: "it blocks the thread and can wait for itself on the main actor; use 'await drain()'")
  @discardableResult
  public func waitUntilDrained() -> Bool {
    if cannotWaitHere { return false }
    for _ in 0..<Self.drainPassLimit {
      let before = scheduledCount
      runMarker()
      // Only the marker was scheduled meanwhile: everything before it ran, and scheduled nothing more.
      if scheduledCount == before &+ 1 { return true }
    }
    return false
  }

  /// Whether the calling thread runs this queue's work without running its loop, so that it cannot block until work
  /// queued behind its own ran.
  var cannotWaitHere: Bool { isCurrent && !Thread.isMainThread }

  /// How many passes through the queue ``drain()`` and ``waitUntilDrained()`` make at most while work keeps being
  /// scheduled.
  static let drainPassLimit = 1_000

  /// Schedules an empty item and waits until it ran.
  private func runMarker() {
    let done = DispatchSemaphore(value: 0)
    schedule { done.signal() }
    wait(for: done)
  }

  /// Blocks until `semaphore` is signalled; on the process main thread, for ``processMainThread``, running the main
  /// run loop meanwhile, since nobody else runs this queue's work while that thread waits.
  func wait(for semaphore: DispatchSemaphore) {
    guard case .dispatchMain = kind, Thread.isMainThread else { return semaphore.wait() }
    while semaphore.wait(timeout: .now()) == .timedOut {
      _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
    }
  }

  /// How many items were scheduled on this queue so far.
  private var scheduledCount: UInt64 {
    switch kind {
    case .runLoopThread(let thread): thread.core.scheduledCount.load(ordering: .acquiring)
    case .dispatchMain: MainQueueMarker.scheduled.load(ordering: .acquiring)
    }
  }
}

/// Marks `DispatchQueue.main`, so that a thread of Dispatch's pool running its work (on Linux, after
/// `dispatchMain()`) knows it is on the main queue, and counts what the library schedules there, for
/// `MainQueue.drain()`.
enum MainQueueMarker {
  /// Set on `DispatchQueue.main` once, when first read.
  static let key: DispatchSpecificKey<Void> = {
    let key = DispatchSpecificKey<Void>()
    DispatchQueue.main.setSpecific(key: key, value: ())
    return key
  }()

  /// The items the library scheduled on `DispatchQueue.main`.
  static let scheduled = Atomic<UInt64>(0)

  static func schedule(_ work: @escaping @Sendable () -> Void) {
    DispatchQueue.main.async(execute: work)
    scheduled.add(1, ordering: .releasing)
  }
}
