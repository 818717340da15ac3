import DispatchStore

/// A `DispatchClock` that moves only when a test advances it, so that tests of throttled and
/// debounced dispatches never sleep.
///
/// ```swift
/// let test = TestDispatcher()
/// test.dispatcher.start(action: SearchAction.query("sw"), options: DispatchOptions(debounce: .milliseconds(300)))
/// await test.advance(by: .milliseconds(300))  // the debounced search runs now, on this task
/// ```
///
/// > Important: Safe to use from any thread. Work falls due only in ``advance(by:)``, which runs it on the calling
/// > thread, earliest first.
public final class TestClock: DispatchClock {
  private struct State {
    var now = Duration.zero
    var scheduled: [(due: Duration, order: Int, work: @Sendable () -> Void)] = []
    var order = 0
  }

  private let state = LockedValue(State())

  /// Creates a clock at zero.
  public init() {}

  /// The time the clock was advanced to.
  public var now: Duration { state.withLock { $0.now } }

  /// Keeps `work` until the clock is advanced past `delay` from now.
  /// - Parameters:
  ///   - delay: How long from now.
  ///   - work: What to run then.
  public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
    state.withLock { state in
      state.order += 1
      state.scheduled.append((state.now + delay, state.order, work))
    }
  }

  /// Moves the clock forward by `duration`, running each piece of work that falls due, earliest first, on the
  /// calling thread.
  /// - Parameter duration: How far to move.
  public func advance(by duration: Duration) {
    let target = state.withLock { $0.now + duration }
    while let work = takeNext(dueBy: target) { work() }
  }

  /// How many pieces of work wait for their time.
  package var pendingCount: Int { state.withLock { $0.scheduled.count } }

  private func takeNext(dueBy target: Duration) -> (@Sendable () -> Void)? {
    state.withLock { state in
      let due = state.scheduled.indices.filter { state.scheduled[$0].due <= target }
        .min {
          (state.scheduled[$0].due, state.scheduled[$0].order) < (state.scheduled[$1].due, state.scheduled[$1].order)
        }
      guard let due else {
        state.now = target
        return nil
      }
      let item = state.scheduled.remove(at: due)
      state.now = max(state.now, item.due)
      return item.work
    }
  }
}
