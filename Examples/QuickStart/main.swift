import DispatchStore

struct Counter: ModelType {
  var count = 0
}

enum CounterAction: ActionType {
  case increase(by: Int)
  case reset
}

// Reducers run on many threads: keep them stateless (hence the restated `@unchecked Sendable`).
final class CounterReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
  override func operation(
    for action: CounterAction, in store: Store<Counter, CounterAction>
  ) -> ActionOperation<Counter, CounterAction> {
    ActionOperation(action: action, store: store) { operation, action, _ in
      switch action {
      case .increase(let amount): operation.updateModel { $0.count += amount }  // observers hear each update
      case .reset: operation.updateModel { $0.count = 0 }
      }
      operation.finish()
    }
  }
}

final class CounterView: Sendable {}

let dispatcher = Dispatcher()
let counter = Store(identifier: "counter", model: Counter(), reducer: CounterReducer())
let view = CounterView()

func start() throws {
  try dispatcher.register(store: counter)
  counter.register(observer: view) { model, action in  // the view is held weakly
    print("count is now \(model.count) after \(action)")
  }
  try dispatcher.dispatchSync(action: CounterAction.increase(by: 1))  // returns when done; throws if it failed
  dispatcher.dispatch(action: CounterAction.reset, mode: .serial) { result in
    if case .failure(let error) = result { print("reset failed: \(error)") }
  }
}

func addTwo() async throws {
  // In async code `dispatch` is awaited and throws the DispatchError that made it fail.
  try await dispatcher.dispatch(action: CounterAction.increase(by: 2))
}

final class FastCounterReducer: SynchronousReducer<Counter, CounterAction>, @unchecked Sendable {
  override func reduce(_ action: CounterAction, into model: inout Counter) throws {
    switch action {
    case .increase(let amount): model.count += amount
    case .reset: model.count = 0
    }
  }
}

let fastCounter = Store(identifier: "fast-counter", model: Counter(), reducer: FastCounterReducer())
// Notified until the token is released or cancelled; cheaper than an observer held weakly.
let token = fastCounter.observe(delivery: .synchronous) { model, _ in print(model.count) }

// MARK: - Not in the README: runs the code above (CI checks that the README's blocks are this file's first lines).

func run() async throws {
  try start()
  // The serial lane is FIFO: this returns after the reset that `start()` queued.
  try await dispatcher.dispatch(action: CounterAction.reset, mode: .serial)
  try await addTwo()
  print("counter: \(counter.model.count)")
  // Every store of the action's type hears it: both counters.
  try dispatcher.register(store: fastCounter)
  try await dispatcher.dispatch(action: CounterAction.increase(by: 3), mode: .sync)
  print("counters: \(counter.model.count), \(fastCounter.model.count)")
  withExtendedLifetime(token) {}
}

try await run()
