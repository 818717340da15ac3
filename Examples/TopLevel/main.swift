// Top-level code awaiting a dispatch: `try await dispatcher.dispatch(action:)` must wait here too, where Swift
// prefers a synchronous overload of the same shape to an `async` one (proposal 0009). CI runs this and checks the
// count printed after the await.
import Dispatch
import DispatchStore

struct Tally: ModelType {
  var count = 0
}

enum TallyAction: ActionType {
  case add(Int)
}

/// Adds later, on another thread: a dispatch that did not wait would print the count before it.
final class SlowTallyReducer: Reducer<Tally, TallyAction>, @unchecked Sendable {
  override func operation(for action: TallyAction, in store: Store<Tally, TallyAction>) -> ActionOperation<
    Tally, TallyAction
  > {
    ActionOperation(action: action, store: store) { operation, action, _ in
      DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) {
        if case .add(let amount) = action { operation.updateModel { $0.count += amount } }
        operation.finish()
      }
    }
  }
}

let dispatcher = Dispatcher()
let tally = Store(identifier: "tally", model: Tally(), reducer: SlowTallyReducer())
try dispatcher.register(store: tally)

try await dispatcher.dispatch(action: TallyAction.add(2))
print("after await dispatch: \(tally.model.count)")

try await dispatcher.start(TallyAction.add(3), mode: .serial).value
print("after await start(...).value: \(tally.model.count)")
