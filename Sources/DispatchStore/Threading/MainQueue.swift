import Foundation

/// The thread that `.mainThread` dispatches and main-thread observer notifications run on.
public struct MainQueue: Sendable {
  enum Kind: Sendable {
    case runLoopThread(MainRunLoopThread)
    case dispatchMain
  }

  let kind: Kind

  /// The library's own run-loop thread, ``MainRunLoopThread/shared``: works in any process; the default.
  public static var libraryThread: MainQueue { MainQueue(kind: .runLoopThread(.shared)) }

  /// A run-loop thread of your own.
  /// - Parameter thread: The thread to run main-thread work on.
  /// - Returns: A main queue backed by `thread`.
  public static func runLoopThread(_ thread: MainRunLoopThread) -> MainQueue {
    MainQueue(kind: .runLoopThread(thread))
  }

  /// The process main thread, through `DispatchQueue.main`: for apps whose main thread runs its loop (every app
  /// on Apple platforms).
  ///
  /// > Important: In a process whose main thread never runs `dispatchMain()` or its `RunLoop` (a Linux tool or
  /// > server, a test runner), work scheduled here never runs. Use ``libraryThread`` there.
  public static var processMainThread: MainQueue { MainQueue(kind: .dispatchMain) }

  /// Whether the calling thread is this queue's thread.
  public var isCurrent: Bool {
    switch kind {
    case .runLoopThread(let thread): return thread.isCurrent
    case .dispatchMain: return Thread.isMainThread
    }
  }

  /// Schedules `work` after the work scheduled before it.
  /// - Parameter work: The closure to run on this queue's thread.
  public func schedule(_ work: @escaping @Sendable () -> Void) {
    switch kind {
    case .runLoopThread(let thread): thread.schedule(work)
    case .dispatchMain: DispatchQueue.main.async(execute: work)
    }
  }
}
