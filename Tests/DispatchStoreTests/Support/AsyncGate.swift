/// Holds every task that waits at it until it is opened; after that, waits return at once.
final class AsyncGate: Sendable {
  private let state = Locked<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

  /// How many tasks wait at the gate now.
  var waiting: Int { state.withLock { $0.waiting.count } }

  func wait() async {
    await withCheckedContinuation { continuation in
      let now = state.withLock { state -> Bool in
        if state.open { return true }
        state.waiting.append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
  }

  func open() {
    let waiting = state.withLock { state in
      state.open = true
      defer { state.waiting = [] }
      return state.waiting
    }
    for continuation in waiting { continuation.resume() }
  }
}
