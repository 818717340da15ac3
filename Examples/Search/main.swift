// A search field: each keystroke dispatches a query, debounced, and the query that runs cancels the one still in
// flight; every handle says how its query ended.
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

let dispatcher = Dispatcher()
/// Looks the query up "remotely": the operation finishes later, and stops at once when cancelled (the sleep
/// throws `CancellationError`).
let results = Store(identifier: "results", model: Results()) { (action: SearchAction, operation) in
  guard case .query(let text) = action else { return }
  try await Task.sleep(for: .milliseconds(400))
  let hits = catalogue.filter { $0.hasPrefix(text) }
  operation.updateModel { $0 = Results(query: text, hits: hits) }
}
try dispatcher.register(store: results)

/// The README's example of a handle, kept identical to it (CI compares them).
func follow() async throws {
  // README: transactions
  let search = dispatcher.start(action: SearchAction.query("swift"), mode: .serial)
  let token = search.observe { state in print("search: \(state)") }  // pending, started, completed
  try await search.value  // throws the DispatchError it failed with
  print(search.dispatchedActions ?? [])  // what reached the stores, after interceptors
  search.cancel()  // no effect once it finished
  // README end
  withExtendedLifetime(token) {}
}

/// Types "s", "sw", pauses, then types "swe", "swee".
///
/// Each query waits for 100 ms of quiet (a later keystroke replaces it: superseded); the one that runs cancels the
/// query still in flight with the same id.
func type() async throws {
  let options = DispatchOptions(cancellationID: "search", debounce: .milliseconds(100))
  var handles: [(String, DispatchHandle)] = []
  for (text, pause) in [("s", 20), ("sw", 250), ("swe", 20), ("swee", 0)] {
    handles.append((text, dispatcher.start(action: SearchAction.query(text), options: options)))
    try await Task.sleep(for: .milliseconds(pause))
  }
  try await handles.last?.1.value
  for (text, handle) in handles { print("query \"\(text)\": \(handle.state)") }
  print("results for \"\(results.model.query)\": \(results.model.hits.joined(separator: ", "))")
}

try await follow()
try await type()
