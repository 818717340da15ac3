import Foundation
import Testing

@testable import DispatchStore

// The README's recording example, run: each block between its markers is the README's, which CI compares.

private struct TodoList: ModelType, Codable, Equatable {
  var titles: [String] = []
}

private enum TodoAction: ActionType, Codable, Equatable {
  case add(String)
}

private final class TodoReducer: SynchronousReducer<TodoList, TodoAction>, @unchecked Sendable {
  override func reduce(_ action: TodoAction, into model: inout TodoList) throws {
    switch action {
    case .add(let title): model.titles.append(title)
    }
  }
}

private func todoApp() throws -> (Dispatcher, Store<TodoList, TodoAction>) {
  let dispatcher = Dispatcher()
  let store = Store(identifier: "todos", model: TodoList(), reducer: TodoReducer())
  try dispatcher.register(store: store)
  return (dispatcher, store)
}

@Suite("README: recording", .timeLimit(.minutes(1)), .watchdog)
struct ReadmeRecordingTests {
  @Test func theRecordingExampleRecordsUndoesRestoresAndVerifies() throws {
    let file = TemporaryFile()
    let url = file.url
    do {
      let (dispatcher, store) = try todoApp()
      // README: recording
      let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
      dispatcher.register(middleware: recorder)
      var codecs = SessionCodecs()  // Codable models and actions, per store identifier
      codecs.register(storeIdentifier: "todos", model: TodoList.self, action: TodoAction.self)
      try recorder.attach(appendingTo: url, codecs: codecs)  // written off the dispatching thread, hash-chained
      try dispatcher.dispatchSync(action: TodoAction.add("buy milk"))
      try recorder.undo()  // every store the last dispatch changed, back where it was
      // README end
      #expect(store.model.titles.isEmpty)
    }  // Released: the recorder writes what is left.

    let (dispatcher, store) = try todoApp()
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "todos", model: TodoList.self, action: TodoAction.self)
    let (freshDispatcher, verified) = try todoApp()
    do {
      // README: next launch
      let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
      dispatcher.register(middleware: recorder)
      do {
        let session = try Session.load(from: url, codecs: codecs)  // checks every line before anything is applied
        try recorder.resume(session, in: dispatcher)  // restores the stores at its cursor: no reducer runs, undo works
      } catch {
        guard case SessionError.noFile = error else { throw error }  // the first launch: attach creates the file
      }
      try recorder.attach(appendingTo: url, codecs: codecs)  // before any dispatch: goes on where the session ended

      // In a regression test, against a dispatcher of its own with the same stores: re-runs every reducer.
      try Session.load(from: url, codecs: codecs).verify(against: freshDispatcher)
      // README end
      #expect(store.model.titles.isEmpty)  // At the cursor: before the undone dispatch.
      try recorder.redo()
      #expect(store.model.titles == ["buy milk"])
      #expect(verified.model.titles == ["buy milk"])  // Every record re-run.
    }
  }
}
