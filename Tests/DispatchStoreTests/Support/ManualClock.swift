import DispatchStore

/// A clock that moves only when the test advances it; scheduled work runs on the advancing thread, in due order.
final class ManualClock: DispatchClock {
  private struct State {
    var now = Duration.zero
    var scheduled: [(due: Duration, order: Int, work: @Sendable () -> Void)] = []
    var order = 0
  }

  private let state = Locked(State())

  var now: Duration { state.withLock { $0.now } }

  func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
    state.withLock { state in
      state.order += 1
      state.scheduled.append((state.now + delay, state.order, work))
    }
  }

  /// Moves the clock forward by `duration`, running each piece of work that falls due, earliest first.
  func advance(by duration: Duration) {
    let target = state.withLock { $0.now + duration }
    while true {
      let next = state.withLock { state -> (@Sendable () -> Void)? in
        let due = state.scheduled.enumerated().filter { $0.element.due <= target }
          .min { ($0.element.due, $0.element.order) < ($1.element.due, $1.element.order) }
        guard let due else {
          state.now = target
          return nil
        }
        state.scheduled.remove(at: due.offset)
        state.now = max(state.now, due.element.due)
        return due.element.work
      }
      guard let next else { return }
      next()
    }
  }

  /// How many pieces of work wait for their time.
  var waiting: Int { state.withLock { $0.scheduled.count } }
}
