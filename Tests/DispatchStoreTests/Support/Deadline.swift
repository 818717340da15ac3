import Dispatch
@testable import DispatchStore

/// Suspends until `start` delivers a value through the closure it is given, or `timeout` passed; returns `nil` then.
///
/// For tests whose waits must end by themselves: a dispatch that never finishes fails the test with a message instead
/// of holding the process past its time limit. The deadline is the failure path, never what the test waits for.
func firstValue<Value: Sendable>(
  within timeout: DispatchTimeInterval = .seconds(20),
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
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { deliver(nil) }
    start { deliver($0) }
  }
}

/// Suspends until `store`'s model satisfies `condition`, or `timeout` passed; returns the model then, or `nil`.
///
/// Checked after every change (observed synchronously on the thread that made it) and once at the start.
func waitForModel<Model: ModelType, Action: ActionType>(
  of store: Store<Model, Action>, within timeout: DispatchTimeInterval = .seconds(20),
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
