import Dispatch
import Foundation
import Testing

@testable import DispatchStore

/// An app-wide action that the counter store maps to one of its own.
enum ResetAction: ActionType, Codable, Equatable {
  case reset
}

/// A counter whose operations change the model, fail without changing it, or fail after changing it; it maps
/// ``ResetAction`` to `.increase(-1)`.
private final class UndoCounterReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
  override var additionalActions: [ActionMapping<CounterAction>] {
    [.on(ResetAction.self) { _ in .increase(-1) }]
  }

  override func operation(for action: CounterAction, in store: Store<Counter, CounterAction>) -> ActionOperation<
    Counter, CounterAction
  > {
    ActionOperation(action: action, store: store) { operation, action, store in
      switch action {
      case .increase(let amount):
        operation.updateModel { $0.count += amount }
        operation.finish()
      case .fail:  // A fetch that failed: nothing changed.
        operation.finish(throwing: TestFailure(reason: "offline"))
      case .increaseLater(let amount):  // Changed, then failed.
        operation.updateModel { $0.count += amount }
        operation.finish(throwing: TestFailure(reason: "failed after changing"))
      case .noop:  // Succeeded, changed nothing.
        operation.finish()
      case .abandon:
        operation.finish()
      }
    }
  }
}

private struct UndoApp {
  let dispatcher = Dispatcher()
  let counter = Store(identifier: "counter", model: Counter(), reducer: UndoCounterReducer())
  let recorder = RecorderMiddleware()

  init() throws {
    try dispatcher.register(store: counter)
    dispatcher.register(middleware: recorder)
  }

  func send(_ action: CounterAction) -> Bool {
    dispatchSync(dispatcher, action).isSuccess
  }
}

/// The codecs of the counter store the sessions here record.
private let counterCodecs: SessionCodecs = {
  var codecs = SessionCodecs()
  codecs.register(storeIdentifier: "counter", model: Counter.self, action: CounterAction.self)
  return codecs
}()

@Suite("Undo steps", .timeLimit(.minutes(1)), .watchdog)
struct UndoStepTests {
  @Test func undoAndRedoStepOverDispatchesThatChangedNothing() throws {
    let app = try UndoApp()
    #expect(app.send(.increase(1)))
    #expect(app.send(.increase(10)))
    #expect(!app.send(.fail))  // The user's failed fetch.
    #expect(app.send(.noop))
    // Still recorded and shown.
    #expect(app.recorder.records.map(\.changedModel) == [true, true, false, false])
    #expect(app.recorder.records[2].error != nil)

    // The first undo undoes the last change, not the failed fetch.
    try app.recorder.undo()
    #expect(app.counter.model.count == 1)
    #expect(app.recorder.cursor == 0)
    try app.recorder.undo()
    #expect(app.counter.model.count == 0)
    #expect(throws: SessionError.atStartOfHistory) { try app.recorder.undo() }
    // Redo lands after the dispatches that changed nothing, as undo left them.
    try app.recorder.redo()
    #expect(app.counter.model.count == 1)
    #expect(app.recorder.cursor == 0)
    let current = try app.recorder.redo()
    #expect(app.counter.model.count == 11)
    #expect(app.recorder.cursor == 3)
    #expect(current?.index == 3)
    #expect(throws: SessionError.atEndOfHistory) { try app.recorder.redo() }
  }

  @Test func aDispatchThatChangedNothingAfterAnUndoIsNotAStep() throws {
    let app = try UndoApp()
    #expect(app.send(.increase(1)))
    try app.recorder.undo()  // The restore changes the store's model, not the next operation's record.
    #expect(!app.send(.fail))
    #expect(app.recorder.records.map(\.changedModel) == [false])
    #expect(throws: SessionError.atStartOfHistory) { try app.recorder.undo() }
  }

  @Test func aFailedDispatchThatChangedTheModelIsAStep() throws {
    let app = try UndoApp()
    #expect(app.send(.increase(1)))
    #expect(!app.send(.increaseLater(5)))
    #expect(app.counter.model.count == 6)
    #expect(app.recorder.records.map(\.changedModel) == [true, true])
    try app.recorder.undo()
    #expect(app.counter.model.count == 1)
  }

  @Test func undoByRecordStepsOverRecordsThatChangedNothing() throws {
    let app = try UndoApp()
    #expect(app.send(.increase(1)))
    #expect(!app.send(.fail))
    try app.recorder.undo(byRecord: true)
    #expect(app.counter.model.count == 0)
    #expect(app.recorder.cursor == -1)
  }

  @Test func aCancelledOperationThatChangedNothingIsNotAStep() async throws {
    let app = RecordedApp()
    let gate = Gate()
    let store = Store(identifier: "gated", model: Counter(), reducer: GatedReducer(gate: gate))
    try app.dispatcher.register(store: store)
    #expect(dispatchSync(app.dispatcher, CounterAction.increase(3), storeIdentifier: "counter").isSuccess)
    let handle = app.dispatcher.start(action: CounterAction.increase(1), to: "gated", mode: .async)
    _ = await gate.waitForOperations(1)
    handle.cancel()
    _ = await handle.result
    #expect(app.recorder.records.last?.wasCancelled == true)
    #expect(app.recorder.records.last?.changedModel == false)
    try app.recorder.undo()
    #expect(app.counter.model.count == 0)
  }

  @Test func aSessionFileKeepsWhatChangedNothingAndAResumedHistoryStepsOverIt() throws {
    let app = try UndoApp()
    let file = TemporaryFile()
    let codecs = counterCodecs
    try app.recorder.attach(appendingTo: file.url, codecs: codecs)
    #expect(app.send(.increase(2)))
    #expect(!app.send(.fail))
    app.recorder.flush()
    let text = try String(contentsOf: file.url, encoding: .utf8)
    #expect(text.components(separatedBy: #""u":true"#).count == 2)
    // The inspector's check accepts the field.
    _ = try SessionInspector.page(forSessionAt: file.url)

    let session = try Session.load(from: file.url, codecs: codecs)
    #expect(try session.records.map(\.changedModel) == [true, false])
    let resumed = try UndoApp()
    try resumed.recorder.resume(session, in: resumed.dispatcher)
    #expect(resumed.counter.model.count == 2)
    try resumed.recorder.undo()
    #expect(resumed.counter.model.count == 0)
  }

  /// Undo steps over a record that says its transaction changed nothing (`"u"`): verify holds that against the
  /// re-run, and refuses a record so marked whose re-run changed the model, naming the field.
  @Test func verifyRefusesARecordThatSaysItChangedNothingWhenItsRerunChangedTheModel() throws {
    let app = try UndoApp()
    let file = TemporaryFile()
    let codecs = counterCodecs
    try app.recorder.attach(appendingTo: file.url, codecs: codecs)
    #expect(app.send(.increase(2)))
    #expect(!app.send(.fail))
    #expect(app.send(.noop))
    app.recorder.flush()
    func verify() throws {
      let verifying = Dispatcher()
      try verifying.register(store: Store(identifier: "counter", model: Counter(), reducer: UndoCounterReducer()))
      try Session.load(from: file.url, codecs: codecs).verify(against: verifying)
    }
    try verify()

    var objects = file.lines.map(ListFormsTests.object)
    try #require(objects.count == 5)
    #expect(objects[2].contains(#""a":{"increase""#) && !objects[2].contains(#""u":"#))
    objects[2] = String(objects[2].dropLast()) + #","u":true}"#
    writeSession(objects, to: file.url)
    #expect(try Session.load(from: file.url, codecs: codecs).records.map(\.changedModel) == [false, false, false])
    do {
      try verify()
      Issue.record("a record marked unchanged whose re-run changed the model must not verify")
    } catch let error as SessionError {
      guard case .diverged(let index, _, let store, _, let differences) = error else { throw error }
      #expect(index == 0 && store == "counter")
      #expect(differences == [FieldDifference(path: "count", expected: "0", actual: "2")], "\(differences)")
    }
  }

  /// A recorder writes `"u"` only on the one record of a transaction that changed nothing: on either record of an
  /// operation that changed its store twice, verify refuses it as no recorder's.
  @Test(arguments: [0, 1])
  func verifyRefusesAnOperationsChangeRecordThatSaysItChangedNothing(record: Int) throws {
    func makeStore() -> Store<Counter, CounterAction> {
      Store(identifier: "counter", model: Counter()) { (action: CounterAction, operation) in
        guard case .increase(let amount) = action else { return }
        operation.updateModel { $0.count += amount }
        operation.updateModel { $0.count += amount }
      }
    }
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeStore())
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    let file = TemporaryFile()
    let codecs = counterCodecs
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    try dispatcher.dispatchSync(action: CounterAction.increase(2))
    recorder.flush()
    func verify() throws {
      let verifying = Dispatcher()
      try verifying.register(store: makeStore())
      try Session.load(from: file.url, codecs: codecs).verify(against: verifying)
    }
    try verify()
    var objects = file.lines.map(ListFormsTests.object)
    try #require(objects.count == 4)
    #expect(recorder.records.map(\.change) == [0, 1])
    objects[2 + record] = String(objects[2 + record].dropLast()) + #","u":true}"#
    writeSession(objects, to: file.url)
    #expect {
      try verify()
    } throws: { error in
      guard case .corruptLine(let line, let reason) = error as? SessionError else { return false }
      return line == 3 + record && reason.contains("changed nothing")
    }
  }

  @Test func aRecordKeepsTheActionTheAppDispatchedWhenTheStoreMappedIt() throws {
    let app = try UndoApp()
    try app.dispatcher.register(store: makeCounterStore("other"))  // Handles counter actions, not ResetAction.
    #expect(app.send(.increase(5)))
    #expect(dispatchSync(app.dispatcher, ResetAction.reset).isSuccess)
    #expect(app.counter.model.count == 4)
    let records = app.recorder.records
    let reset = try #require(records.last)
    #expect(reset.storeIdentifier == "counter")
    #expect(reset.action as? CounterAction == .increase(-1))
    #expect(reset.dispatchedAction as? ResetAction == .reset)
    // An action the store handles as its own is its dispatched action.
    #expect(records.first?.dispatchedAction as? CounterAction == .increase(5))
    // What a move reports.
    try app.recorder.undo()
    let redone = try app.recorder.redo()
    #expect(redone?.dispatchedAction as? ResetAction == .reset)
  }
}
