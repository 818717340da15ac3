import DispatchStore
import DispatchStoreTesting
import Foundation
import Testing

@testable import todo

@Suite("Todo example, with DispatchStoreTesting", .timeLimit(.minutes(1)))
struct TodoTests {
  @Test func addingAndCompletingItems() async throws {
    let test = TestDispatcher()
    let todos = try test.register(makeTodoStore())

    await test.send(
      TodoAction.add("buy milk"),
      .store(todos) {
        $0.items = [TodoList.Item(id: 1, title: "buy milk")]
        $0.nextID = 2
      })
    await test.send(TodoAction.complete(1), .store(todos) { $0.items[0].done = true })
    await test.finish()
  }

  @Test func completingAnItemTwiceFailsAndChangesNothing() async throws {
    let test = TestDispatcher()
    let todos = try test.register(makeTodoStore())
    await test.send(
      TodoAction.add("walk the dog"),
      .store(todos) {
        $0.items = [TodoList.Item(id: 1, title: "walk the dog")]
        $0.nextID = 2
      })
    await test.send(TodoAction.complete(1), .store(todos) { $0.items[0].done = true })
    await test.send(TodoAction.complete(1), fails: TodoError.alreadyDone(1))
    await test.finish()
  }

  /// A session the todo example recorded replays against its reducer: a golden test.
  @Test func aRecordedTodoSessionStillReplays() throws {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("todo-golden-\(UUID()).jsonl")
    defer { try? FileManager.default.removeItem(at: url) }
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "todos", model: TodoList.self, action: TodoAction.self)
    let recording = Dispatcher()
    try recording.register(store: makeTodoStore())
    let recorder = RecorderMiddleware()
    recording.register(middleware: recorder)
    try recorder.attach(appendingTo: url, codecs: codecs)
    try recording.dispatchSync(action: TodoAction.add("buy milk"))
    try recording.dispatchSync(action: TodoAction.add("walk the dog"))
    try recording.dispatchSync(action: TodoAction.complete(2))
    recorder.flush()

    let fresh = Dispatcher()
    try fresh.register(store: makeTodoStore())
    assertSessionReplays(at: url, codecs: codecs, against: fresh)
  }
}
