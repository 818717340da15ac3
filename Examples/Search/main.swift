// A search field: each keystroke dispatches a query; the latest one cancels the query still in flight, and every
// handle says how its query ended. (Issue 13 adds debouncing and cancellation ids to this example.)
import Dispatch
import DispatchStore

struct Results: ModelType {
  var query = ""
  var hits: [String] = []
}

enum SearchAction: ActionType {
  case query(String)
}

let catalogue = ["swift", "swiftui", "switch", "sweden", "sweet"]

/// Looks the query up "remotely": the operation finishes later on another thread, and stops when cancelled.
final class SearchReducer: Reducer<Results, SearchAction>, @unchecked Sendable {
  override func operation(
    for action: SearchAction, in store: Store<Results, SearchAction>
  ) -> ActionOperation<Results, SearchAction> {
    ActionOperation(action: action, store: store) { operation, action, _ in
      guard case .query(let text) = action else { return operation.finish() }
      // Stop at once when cancelled; the lookup, when it comes, sees it and drops its answer.
      operation.onCancel { operation.finish(throwing: CancellationError()) }
      DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(30)) {
        guard !operation.isCancelled else { return }
        let hits = catalogue.filter { $0.hasPrefix(text) }
        operation.updateModel { $0 = Results(query: text, hits: hits) }
        operation.finish()
      }
    }
  }
}

let dispatcher = Dispatcher()
let results = Store(identifier: "results", model: Results(), reducer: SearchReducer())
try dispatcher.register(store: results)

/// The README's example of a handle, kept identical to it (CI compares them).
func follow() async throws {
  // README: transactions
  let search = dispatcher.start(SearchAction.query("swift"), mode: .serial)
  let token = search.observe { state in print("search: \(state)") }  // pending, started, completed
  for await state in search.states { print(state) }  // or as an async sequence
  try await search.value  // throws the DispatchError it failed with
  search.cancel()  // no effect once it finished
  // README end
  withExtendedLifetime(token) {}
}

/// Typing "s", "sw", "swe", "swee": each keystroke cancels the query still in flight.
func type(_ keystrokes: [String]) async throws {
  var handles: [DispatchHandle] = []
  for text in keystrokes {
    handles.last?.cancel()
    handles.append(dispatcher.start(SearchAction.query(text)))
  }
  try await handles.last?.value
  for (text, handle) in zip(keystrokes, handles) { print("query \"\(text)\": \(handle.state)") }
  print("results for \"\(results.model.query)\": \(results.model.hits.joined(separator: ", "))")
}

try await follow()
try await type(["s", "sw", "swe", "swee"])
