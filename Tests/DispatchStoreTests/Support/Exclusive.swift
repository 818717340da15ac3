/// Runs the stress tests one at a time.
///
/// Each keeps both cores busy with eight or more threads of its own for many seconds. Several at once (their suites
/// run in parallel) made about 40 busy threads, and the ordinary tests beside them, which wait for Dispatch's global
/// queue or a new thread, waited past their one-minute limits. One at a time, the run takes about as long: each
/// already uses every core.
///
/// A stress test's time limit counts its wait for the others: their suites allow three minutes or more.
enum Exclusive {
  private static let state = Locked<(busy: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

  /// Runs `body` once no other stress test runs, in the order they asked.
  static func stress<Value>(_ body: () async throws -> Value) async rethrows -> Value {
    await withCheckedContinuation { continuation in
      let now = state.withLock { state -> Bool in
        guard state.busy else {
          state.busy = true
          return true
        }
        state.waiting.append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
    defer {
      let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
        guard !state.waiting.isEmpty else {
          state.busy = false
          return nil
        }
        return state.waiting.removeFirst()
      }
      next?.resume()
    }
    return try await body()
  }
}
