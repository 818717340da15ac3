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
  /// on Apple platforms), and for processes that call `dispatchMain()` or have an `async` main.
  ///
  /// On Linux, `dispatchMain()` ends the main thread and a thread of Dispatch's pool runs the main queue's work:
  /// ``isCurrent`` is then true on that thread, while it runs the main queue's work.
  ///
  /// > Important: In a process that never services `DispatchQueue.main` (a Linux tool or server whose main thread
  /// > neither calls `dispatchMain()` nor runs its `RunLoop`), work scheduled here never runs. Use
  /// > ``libraryThread`` there.
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

  /// Schedules `work` after the work scheduled before it.
  /// - Parameter work: The closure to run on this queue's thread.
  public func schedule(_ work: @escaping @Sendable () -> Void) {
    switch kind {
    case .runLoopThread(let thread): thread.schedule(work)
    case .dispatchMain: DispatchQueue.main.async(execute: work)
    }
  }
}

/// Marks `DispatchQueue.main`, so that a thread of Dispatch's pool running its work (on Linux, after
/// `dispatchMain()`) knows it is on the main queue.
private enum MainQueueMarker {
  /// Set on `DispatchQueue.main` once, when first read.
  static let key: DispatchSpecificKey<Void> = {
    let key = DispatchSpecificKey<Void>()
    DispatchQueue.main.setSpecific(key: key, value: ())
    return key
  }()
}
