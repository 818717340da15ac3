// Top-level code that awaits. Here Swift ranks a synchronous overload above an `async` one of the same shape, so
// `try await dispatcher.dispatch(action:)` would pick the fire-and-forget form and not wait: the compiler refuses it
// (CI checks the refusal with `.ci/top-level-refused.swift`). The forms below wait in every context, top level
// included; CI runs this file and checks the counts printed after each await.
import Dispatch
import DispatchStore
import Synchronization

struct Tally: ModelType {
  var count = 0
}

enum TallyAction: ActionType {
  case add(Int)
}

// The process main thread: the default on Apple platforms, where `await dispatcher.drain()` in top-level code used
// to pick the blocking form and wait for itself for ever.
let dispatcher = Dispatcher(mainQueue: .processMainThread)
/// Adds later, on another thread: a dispatch that did not wait would print the count before it.
let tally = Store(identifier: "tally", model: Tally()) { (action: TallyAction, operation) in
  try await Task.sleep(for: .milliseconds(100))
  if case .add(let amount) = action { operation.updateModel { $0.count += amount } }
}
try dispatcher.register(store: tally)
let seen = Mutex<[Int]>([])
let token = tally.observe { change in seen.withLock { $0.append(change.model.count) } }

try await dispatcher.start(action: TallyAction.add(2)).value
print("after await start(...).value: \(tally.model.count)")

try await dispatcher.start(action: TallyAction.add(3), mode: .serial).value
print("after await start(..., mode: .serial).value: \(tally.model.count)")

// In an `async` function, `dispatch(action:)` and `dispatch(actions:)` are the awaited forms.
func addMore() async throws {
  try await dispatcher.dispatch(action: TallyAction.add(4))
  try await dispatcher.dispatch(actions: [TallyAction.add(5), TallyAction.add(6)])
}
try await addMore()
print("after await addMore(): \(tally.model.count)")

await dispatcher.drain()
print("main-thread observer saw, after await drain(): \(seen.withLock { $0 }.map(String.init).joined(separator: ","))")
withExtendedLifetime(token) {}

#if !canImport(Darwin)
  // On Linux, after `dispatchMain()` (an `async` main), the main queue's work runs on a thread of Dispatch's pool:
  // the blocking form, called from synchronous code there, cannot wait for itself and says so at once.
  let fromMainQueue = await withCheckedContinuation { continuation in
    DispatchQueue.main.async { continuation.resume(returning: dispatcher.waitUntilDrained()) }
  }
  print("waitUntilDrained() from the main queue's own work: \(fromMainQueue)")
#endif
