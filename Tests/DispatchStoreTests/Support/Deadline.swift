import Dispatch
import Foundation

@testable import DispatchStore

/// Suspends until `start` delivers a value through the closure it is given, or `timeout` passed; returns `nil` then.
///
/// For tests whose waits must end by themselves: a dispatch that never finishes fails the test with a message instead
/// of holding the process past its time limit. The deadline is the failure path, never what the test waits for.
/// The default, 60 s, is twice the longest that other tests of a parallel run were seen to hold the cooperative pool.
func firstValue<Value: Sendable>(
  within timeout: DispatchTimeInterval = .seconds(60),
  _ start: (@escaping @Sendable (Value) -> Void) -> Void
) async -> Value? {
  let once = Locked<CheckedContinuation<Value?, Never>?>(nil)
  @Sendable func deliver(_ value: Value?) {
    once.withLock { continuation in
      defer { continuation = nil }
      return continuation
    }?.resume(returning: value)
  }
  return await withCheckedContinuation { continuation in
    once.withLock { $0 = continuation }
    Deadlines.shared.after(timeout) { deliver(nil) }
    start { deliver($0) }
  }
}

/// Awaits `body` in a task of its own, or `timeout`; returns `nil` then (the task is left waiting).
func awaited<Value: Sendable>(
  within timeout: DispatchTimeInterval = .seconds(60), _ body: @escaping @Sendable () async -> Value
) async -> Value? {
  await firstValue(within: timeout) { deliver in Task { deliver(await body()) } }
}

/// Suspends until `condition` holds, checking it between yields, or `timeout` passed; returns whether it held.
func eventually(within timeout: Duration = .seconds(60), _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + timeout
  while !condition() {
    if ContinuousClock.now >= deadline { return false }
    await Task.yield()
  }
  return true
}

/// Suspends until `store`'s model satisfies `condition`, or `timeout` passed; returns the model then, or `nil`.
///
/// Checked after every change (observed synchronously on the thread that made it) and once at the start.
func waitForModel<Model: ModelType, Action: ActionType>(
  of store: Store<Model, Action>, within timeout: DispatchTimeInterval = .seconds(60),
  where condition: @escaping @Sendable (Model) -> Bool
) async -> Model? {
  let token = Locked<ObservationToken?>(nil)
  defer { token.withLock { $0?.cancel() } }
  return await firstValue(within: timeout) { deliver in
    token.withLock {
      $0 = store.observe(synchronously: true) { change in if condition(change.model) { deliver(change.model) } }
    }
    let now = store.model
    if condition(now) { deliver(now) }
  }
}

/// Runs each deadline's action on a thread of its own, never on Dispatch's pool: a test whose dispatches block every
/// pool thread (waiting for each other for ever) still fails at its deadline, with its message.
final class Deadlines: Sendable {
  static let shared = Deadlines()

  private let condition = NSCondition()
  /// The pending deadlines; read and written only while `condition` is locked.
  nonisolated(unsafe) private var pending: [(at: DispatchTime, action: @Sendable () -> Void)] = []

  private init() {
    let thread = Thread { [self] in run() }
    thread.name = "test deadlines"
    thread.start()
  }

  /// Calls `action` on the deadline thread once `timeout` passed.
  func after(_ timeout: DispatchTimeInterval, _ action: @escaping @Sendable () -> Void) {
    condition.lock()
    pending.append((DispatchTime.now() + timeout, action))
    condition.signal()
    condition.unlock()
  }

  private func run() {
    while true {
      condition.lock()
      let now = DispatchTime.now()
      let due = pending.filter { $0.at <= now }
      pending.removeAll { $0.at <= now }
      if due.isEmpty {
        if let next = pending.map(\.at).min() {
          let seconds = Double(next.uptimeNanoseconds - now.uptimeNanoseconds) / 1e9
          _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
        } else {
          condition.wait()
        }
      }
      condition.unlock()
      for deadline in due { deadline.action() }
    }
  }
}
