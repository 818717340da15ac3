import Dispatch
import Foundation
import Synchronization

@testable import DispatchStore

struct Counter: ModelType, Equatable, Codable {
  var count = 0
  var log: [String] = []
}

enum CounterAction: ActionType, Equatable, Codable {
  case increase(Int)
  /// Increases on another thread, finishing there.
  case increaseLater(Int)
  case fail
  /// Returns an operation whose block neither finishes nor keeps the operation.
  case abandon
  /// Changes nothing.
  case noop
}

struct TestFailure: Error, Equatable {
  let reason: String
}

/// A reducer whose behaviour and wait list are closures, recording the actions it was asked about.
final class CounterReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
  let waits: @Sendable (CounterAction) -> [String]
  let onStart: @Sendable (CounterAction, Store<Counter, CounterAction>) -> Void
  let notify: @Sendable (CounterAction) -> Bool
  let asked = Locked<[CounterAction]>([])

  init(
    waits: @escaping @Sendable (CounterAction) -> [String] = { _ in [] },
    notify: @escaping @Sendable (CounterAction) -> Bool = { _ in true },
    onStart: @escaping @Sendable (CounterAction, Store<Counter, CounterAction>) -> Void = { _, _ in }
  ) {
    self.waits = waits
    self.notify = notify
    self.onStart = onStart
  }

  override func waitList(for action: CounterAction) -> [String] { waits(action) }

  override func shouldNotifyObservers(for action: CounterAction, in store: Store<Counter, CounterAction>) -> Bool {
    notify(action)
  }

  override func operation(
    for action: CounterAction, in store: Store<Counter, CounterAction>
  ) -> ActionOperation<Counter, CounterAction> {
    asked.withLock { $0.append(action) }
    return ActionOperation(action: action, store: store) { [onStart] operation, action, store in
      onStart(action, store)
      switch action {
      case .increase(let amount):
        operation.updateModel {
          $0.count += amount
          $0.log.append("\(store.identifier)+\(amount)")
        }
        operation.finish()
      case .increaseLater(let amount):
        DispatchQueue.global().async {
          operation.updateModel {
            $0.count += amount
            $0.log.append("\(store.identifier)+\(amount)")
          }
          operation.finish()
        }
      case .fail:
        operation.finish(throwing: TestFailure(reason: "fail in \(store.identifier)"))
      case .abandon:
        break
      case .noop:
        operation.finish()
      }
    }
  }
}

func makeCounterStore(
  _ identifier: String,
  waits: @escaping @Sendable (CounterAction) -> [String] = { _ in [] },
  notify: @escaping @Sendable (CounterAction) -> Bool = { _ in true },
  onStart: @escaping @Sendable (CounterAction, Store<Counter, CounterAction>) -> Void = { _, _ in }
) -> Store<Counter, CounterAction> {
  Store(
    identifier: identifier, model: Counter(), reducer: CounterReducer(waits: waits, notify: notify, onStart: onStart))
}

/// A second, unrelated action and model type.
struct Text: ModelType, Equatable, Codable {
  var value = ""
}

enum TextAction: ActionType, Equatable, Codable {
  case append(String)
}

final class TextReducer: Reducer<Text, TextAction>, @unchecked Sendable {
  let calls = Atomic<Int>(0)

  override func operation(for action: TextAction, in store: Store<Text, TextAction>) -> ActionOperation<
    Text, TextAction
  > {
    calls.add(1, ordering: .relaxed)
    return ActionOperation(action: action, store: store) { operation, action, store in
      switch action {
      case .append(let text): operation.updateModel { $0.value += text }
      }
      operation.finish()
    }
  }
}

/// Records every middleware call, in order.
final class RecordingMiddleware: Middleware {
  enum Event: Equatable {
    case will(store: String, id: TransactionID)
    case did(store: String, id: TransactionID, failed: Bool)
  }

  let events = Locked<[Event]>([])
  let transactions = Locked<[Transaction]>([])

  func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    events.withLock { $0.append(.will(store: store.identifier, id: transaction.id)) }
  }

  func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    events.withLock { $0.append(.did(store: store.identifier, id: transaction.id, failed: transaction.error != nil)) }
    transactions.withLock { $0.append(transaction) }
  }
}

/// Collects results or values from other threads; `wait(for:)` suspends until enough arrived.
final class Collector<Value: Sendable>: Sendable {
  private struct State {
    var values: [Value] = []
    var waiters: [(count: Int, continuation: CheckedContinuation<[Value], Never>)] = []
  }

  private let state = Locked(State())

  func append(_ value: Value) {
    let ready = state.withLock { state -> [(CheckedContinuation<[Value], Never>, [Value])] in
      state.values.append(value)
      let values = state.values
      let ready = state.waiters.filter { $0.count <= values.count }
      state.waiters.removeAll { $0.count <= values.count }
      return ready.map { ($0.continuation, values) }
    }
    for (continuation, values) in ready { continuation.resume(returning: values) }
  }

  var values: [Value] { state.withLock { $0.values } }

  /// Suspends until at least `count` values were appended, then returns them all.
  func wait(for count: Int) async -> [Value] {
    await withCheckedContinuation { continuation in
      let values = state.withLock { state -> [Value]? in
        if state.values.count >= count { return state.values }
        state.waiters.append((count, continuation))
        return nil
      }
      if let values { continuation.resume(returning: values) }
    }
  }
}

extension Result where Success == Void, Failure == DispatchError {
  var isSuccess: Bool {
    if case .success = self { return true }
    return false
  }

  var dispatchError: DispatchError? {
    if case .failure(let error) = self { return error }
    return nil
  }
}

/// Dispatches synchronously and returns the completion's result.
func dispatchSync<Action: ActionType>(
  _ dispatcher: Dispatcher, _ action: Action, storeIdentifier: String? = nil
) -> Result<Void, DispatchError> {
  let result = Locked<Result<Void, DispatchError>?>(nil)
  dispatcher.dispatch(action: action, to: storeIdentifier, mode: .sync) { value in
    result.withLock { $0 = value }
  }
  return result.withLock { $0! }
}

/// Runs `body` on `threads` threads of its own at once, released together, and returns when every one returned.
///
/// Not on a pool: Swift's cooperative pool on Linux is libdispatch's global queue, one thread per core, so work that
/// keeps those threads busy or blocked (as stress tests do) holds up every other test of the run.
func onThreads(_ threads: Int, _ body: @escaping @Sendable (Int) -> Void) async {
  let start = DispatchSemaphore(value: 0)
  let finished = DispatchGroup()
  for thread in 0..<threads {
    finished.enter()
    Thread {
      start.wait()
      body(thread)
      finished.leave()
    }.start()
  }
  for _ in 0..<threads { start.signal() }
  await withCheckedContinuation { continuation in
    finished.notify(queue: .global()) { continuation.resume() }
  }
}

/// Runs `body` on a thread of its own and returns what it returns, or throws what it throws.
///
/// For a test that blocks or computes for long (thousands of synchronous dispatches, a blocking drain): on one of the
/// cooperative pool's threads (one per core) it would hold up every test waiting for one. Record issues with the
/// result, back in the test: `#expect` needs the test's task.
func onOwnThread<Value: Sendable, Failure: Error>(
  _ body: @escaping @Sendable () throws(Failure) -> Value
) async throws(Failure) -> Value {
  let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, Failure>, Never>) in
    Thread { continuation.resume(returning: Result(catching: body)) }.start()
  }
  return try result.get()
}
