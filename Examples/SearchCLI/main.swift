// The SwiftUI example's feature (Examples/SearchApp) driven from a Linux terminal, the same way: the "view" reads
// the results through Observation and re-renders when what it read changes; an async sequence logs every change.
import DispatchStore
import Foundation
import Observation
import SearchFeature

let feature = try SearchFeature(catalogue: ["rust", "swift", "swiftui", "switch", "sweden"])

// The view: reads `hits` and `query` through Observation, and renders again (on the main queue, as SwiftUI would)
// when one of them changes.
let results = feature.results.observable()
@Sendable func render() {
  withObservationTracking {
    print("render: \(results.query.isEmpty ? "-" : results.query) -> \(results.hits.joined(separator: ","))")
  } onChange: {
    feature.dispatcher.mainQueue.schedule { render() }
  }
}
feature.dispatcher.mainQueue.schedule { render() }

// A log of every change of the results, as an async sequence: the three changes made below.
let changes = feature.results.changes(bufferingNewest: 16)
let log = Task {
  var lines: [String] = []
  for await change in changes {
    lines.append("\(change.isRestore ? "undo" : "search") \(change.model.query)")
    if lines.count == 3 { break }
  }
  return lines
}

// Quick keystrokes: only the last one searches.
feature.type("s")
feature.type("sw")
try await feature.type("swi").value
try await feature.type("r").value
try feature.undo()

// Everything queued for the main queue (notifications, renders) is delivered before the tool goes on.
await feature.dispatcher.drain()
print("after drain: \(results.query) -> \(results.hits.joined(separator: ","))")
print("log: \(await log.value.joined(separator: "; "))")
