import Foundation
import Testing

@testable import DispatchStore

/// A dispatcher with a counter store, a text store and a recorder.
struct RecordedApp {
  let dispatcher = Dispatcher()
  let counter = makeCounterStore("counter")
  let text = Store(identifier: "text", model: Text(), reducer: TextReducer())
  let recorder: RecorderMiddleware

  init(maxNumberOfRecords: Int = 10_000) {
    recorder = RecorderMiddleware(maxNumberOfRecords: maxNumberOfRecords)
    try! dispatcher.register(store: counter)
    try! dispatcher.register(store: text)
    dispatcher.register(middleware: recorder)
  }

  func send(_ action: CounterAction) {
    #expect(dispatchSync(dispatcher, action).isSuccess)
  }

  func send(_ action: TextAction) {
    #expect(dispatchSync(dispatcher, action).isSuccess)
  }
}

@Suite("RecorderMiddleware", .timeLimit(.minutes(1)), .watchdog)
struct RecorderMiddlewareTests {
  @Test func recordsEveryTransactionInOrderWithTheModelAfterIt() {
    let app = RecordedApp()
    app.send(CounterAction.increase(2))
    app.send(TextAction.append("a"))
    app.send(CounterAction.increase(3))
    let records = app.recorder.records
    #expect(records.map(\.index) == [0, 1, 2])
    #expect(records.map(\.storeIdentifier) == ["counter", "text", "counter"])
    #expect(records[0].action as? CounterAction == .increase(2))
    #expect((records[0].model as? Counter)?.count == 2)
    #expect((records[1].model as? Text)?.value == "a")
    #expect((records[2].model as? Counter)?.count == 5)
    #expect(records[0].transactionID.rawValue < records[1].transactionID.rawValue)
    #expect(records[1].transactionID.rawValue < records[2].transactionID.rawValue)
    #expect(app.recorder.cursor == 2)
  }

  @Test func failedTransactionsAreRecordedWithTheirError() {
    let app = RecordedApp()
    app.send(CounterAction.increase(1))
    #expect(!dispatchSync(app.dispatcher, CounterAction.fail).isSuccess)
    let records = app.recorder.records
    #expect(records.count == 2)
    #expect(records[1].error as? TestFailure == TestFailure(reason: "fail in counter"))
    #expect(!records[1].succeeded)
    #expect((records[1].model as? Counter)?.count == 1)
  }

  @Test func timeTravelRestoresModelsAndNotifiesObserversWithoutRunningReducers() throws {
    let app = RecordedApp()
    app.send(CounterAction.increase(1))
    app.send(TextAction.append("x"))
    app.send(CounterAction.increase(10))
    let reducer = try #require(app.counter.reducer as? CounterReducer)
    let askedBefore = reducer.asked.withLock { $0.count }
    let heard = Locked<[Int]>([])
    let token = app.counter.observe(synchronously: true) { change in
      heard.withLock { $0.append(change.model.count) }
    }

    let current = try app.recorder.undo()
    #expect(current?.index == 1)
    #expect(app.counter.model.count == 1)
    #expect(app.text.model.value == "x")

    try app.recorder.undo()
    try app.recorder.undo()
    #expect(app.recorder.cursor == -1)
    #expect(app.counter.model.count == 0)
    #expect(app.text.model.value == "")
    #expect(throws: SessionError.atStartOfHistory) { try app.recorder.undo() }

    try app.recorder.jump(to: 2)
    #expect(app.counter.model.count == 11)
    #expect(app.text.model.value == "x")
    try app.recorder.jump(to: 0)
    let next = try app.recorder.redo()
    #expect(next?.storeIdentifier == "text")
    #expect(app.counter.model.count == 1)

    #expect(reducer.asked.withLock { $0.count } == askedBefore)
    #expect(heard.withLock { $0 } == [1, 0, 11, 1])
    withExtendedLifetime(token) {}
  }

  @Test func dispatchingAfterMovingBackDropsTheRecordsAfterTheCursor() throws {
    let app = RecordedApp()
    app.send(CounterAction.increase(1))
    app.send(CounterAction.increase(2))
    app.send(CounterAction.increase(4))
    try app.recorder.jump(to: 0)
    app.send(CounterAction.increase(100))
    let records = app.recorder.records
    #expect(records.map(\.index) == [0, 1])
    #expect((records[1].model as? Counter)?.count == 101)
    #expect(app.counter.model.count == 101)
    #expect(throws: SessionError.self) { try app.recorder.jump(to: 2) }
    #expect(throws: SessionError.atEndOfHistory) { try app.recorder.redo() }
  }

  @Test func theHistoryBoundDropsTheOldestRecordsAndTimeTravelStopsAtTheOldestKept() throws {
    let app = RecordedApp(maxNumberOfRecords: 3)
    for amount in 1...5 { app.send(CounterAction.increase(amount)) }
    let records = app.recorder.records
    #expect(records.count == 3)
    #expect(records.map(\.index) == [2, 3, 4])
    // Before the oldest kept record: the model the dropped records left (1 + 2).
    try app.recorder.jump(to: 1)
    #expect(app.counter.model.count == 3)
    #expect(throws: SessionError.indexOutOfRange(0, valid: 1...4)) { try app.recorder.jump(to: 0) }
    try app.recorder.jump(to: 4)
    #expect(app.counter.model.count == 15)
  }

  /// The first and last indices of `records`, which follow one another (`nil` if they do not).
  static func span(_ records: [Record]) -> ClosedRange<Int>? {
    guard let first = records.first?.index, let last = records.last?.index, last - first + 1 == records.count,
      zip(records, records.dropFirst()).allSatisfy({ $0.index + 1 == $1.index })
    else { return nil }
    return first...last
  }

  /// Records past the bound that are not dropped yet (they go in batches) stay out of the history when a dispatch
  /// after moving back removes the newest: the history does not reach back further than before.
  @Test func aDispatchAfterMovingBackDoesNotBringBackRecordsPastTheBound() throws {
    let app = RecordedApp(maxNumberOfRecords: 500)
    for _ in 0..<6_000 { app.send(CounterAction.increase(1)) }
    #expect(Self.span(app.recorder.records) == 5_500...5_999)
    for _ in 0..<10 { try app.recorder.undo() }
    app.send(CounterAction.increase(1))
    #expect(Self.span(app.recorder.records) == 5_500...5_990)
    try app.recorder.jump(to: 5_499)
    #expect(app.counter.model.count == 5_500)
    #expect(throws: SessionError.indexOutOfRange(5_498, valid: 5_499...5_990)) { try app.recorder.jump(to: 5_498) }
    // Moved back to the start: a dispatch keeps only itself.
    app.send(CounterAction.increase(1))
    #expect(Self.span(app.recorder.records) == 5_500...5_500)
    for _ in 0..<600 { app.send(CounterAction.increase(1)) }
    #expect(Self.span(app.recorder.records) == 5_601...6_100)
  }

  @Test func recordsModelsThatAreNotCodable() throws {
    struct Plain: ModelType { var values: [Int] = [] }
    final class PlainReducer: Reducer<Plain, CounterAction>, @unchecked Sendable {
      override func operation(for action: CounterAction, in store: Store<Plain, CounterAction>) -> ActionOperation<
        Plain, CounterAction
      > {
        ActionOperation(action: action, store: store) { operation, _, store in
          operation.updateModel { $0.values.append($0.values.count) }
          operation.finish()
        }
      }
    }
    let dispatcher = Dispatcher()
    let store = Store(identifier: "plain", model: Plain(), reducer: PlainReducer())
    try dispatcher.register(store: store)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    for _ in 0..<3 { #expect(dispatchSync(dispatcher, CounterAction.noop).isSuccess) }
    try recorder.jump(to: 0)
    #expect(store.model.values == [0])
    // Saving needs codecs for every recorded store.
    let file = TemporaryFile()
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "other", model: Counter.self, action: CounterAction.self)
    #expect(throws: SessionError.self) { try recorder.save(to: file.url, codecs: codecs) }
  }
}

/// An object whose deinit reads the recorder: released under the recorder's lock, it would trap (the lock is not
/// recursive), so a passing test shows that dropped records are released after the lock.
final class RecorderCanary: Sendable {
  let recorder: RecorderMiddleware
  let released: Locked<Int>

  init(recorder: RecorderMiddleware, released: Locked<Int>) {
    self.recorder = recorder
    self.released = released
  }

  deinit {
    _ = recorder.records.count
    released.withLock { $0 += 1 }
  }
}

struct CanaryModel: ModelType, Codable {
  var canary: RecorderCanary?
  var count = 0

  enum CodingKeys: CodingKey { case count }

  init() {}

  init(from decoder: any Decoder) throws {
    count = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .count)
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(count, forKey: .count)
  }
}

/// Gives each dispatch's model a new canary, through an operation.
final class CanaryReducer: Reducer<CanaryModel, CounterAction>, @unchecked Sendable {
  let recorder: RecorderMiddleware
  let released: Locked<Int>

  init(recorder: RecorderMiddleware, released: Locked<Int>) {
    self.recorder = recorder
    self.released = released
  }

  override func operation(
    for action: CounterAction, in store: Store<CanaryModel, CounterAction>
  ) -> ActionOperation<CanaryModel, CounterAction> {
    ActionOperation(action: action, store: store) { [recorder, released] operation, _, store in
      operation.updateModel {
        $0.canary = RecorderCanary(recorder: recorder, released: released)
        $0.count += 1
      }
      operation.finish()
    }
  }
}

@Suite("RecorderMiddleware releases", .timeLimit(.minutes(1)), .watchdog)
struct RecorderReleaseTests {
  @Test func droppedRecordsAreReleasedOutsideTheRecordersLock() throws {
    let recorder = RecorderMiddleware(maxNumberOfRecords: 1)
    let released = Locked(0)
    let dispatcher = Dispatcher()
    let store = Store(
      identifier: "canary", model: CanaryModel(), reducer: CanaryReducer(recorder: recorder, released: released))
    try dispatcher.register(store: store)
    dispatcher.register(middleware: recorder)
    for _ in 0..<200 { #expect(dispatchSync(dispatcher, CounterAction.noop).isSuccess) }
    // Go back and dispatch again: the record after the cursor is dropped too.
    try recorder.undo()
    #expect(dispatchSync(dispatcher, CounterAction.noop).isSuccess)
    #expect(released.withLock { $0 } >= 190)
  }

  /// Records share chunks of slots; a chunk whose records the recorder no longer holds (here: replaced by a resumed
  /// session) is released with the records' models after the lock too, when the next record needs a new chunk.
  @Test func aChunkOfDroppedRecordsIsReleasedOutsideTheRecordersLock() throws {
    let recorder = RecorderMiddleware()
    let released = Locked(0)
    let dispatcher = Dispatcher()
    try dispatcher.register(
      store: Store(
        identifier: "canary", model: CanaryModel(),
        reducer: CanaryReducer(recorder: recorder, released: released)))
    dispatcher.register(middleware: recorder)
    // Exactly one chunk's worth: its last slot filled.
    for _ in 0..<64 { try dispatcher.dispatchSync(action: CounterAction.noop) }
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "canary", model: CanaryModel.self, action: CounterAction.self)
    let file = TemporaryFile()
    try recorder.save(to: file.url, codecs: codecs)
    try recorder.resume(Session.load(from: file.url, codecs: codecs), in: dispatcher)
    // The resumed history holds none of the full chunk's records; this record needs a new chunk.
    try dispatcher.dispatchSync(action: CounterAction.noop)
    #expect(released.withLock { $0 } >= 63)
    #expect(recorder.records.count == 65)
  }

  /// A record handed out keeps its fields after the recorder dropped it (and the rest of its chunk).
  @Test func aRecordOutlivesItsPlaceInTheHistory() {
    let app = RecordedApp(maxNumberOfRecords: 2)
    app.send(CounterAction.increase(5))
    let first = app.recorder.records[0]
    for _ in 0..<200 { app.send(CounterAction.increase(1)) }
    #expect(app.recorder.records.map(\.index) == [199, 200])
    #expect(first.index == 0)
    #expect((first.model as? Counter)?.count == 5)
    #expect(first.action as? CounterAction == .increase(5))
  }

  /// Records are read by another thread while dispatching threads file new ones into the same chunks (run under
  /// ThreadSanitizer in CI).
  @Test func recordsAreReadWhileOtherThreadsFileMore() async {
    // Reduced in place: each record holds exactly the model its own reduction produced (an operation's record holds
    // the model when it finished, which operations running at the same time share).
    let dispatcher = Dispatcher()
    let store = Store(identifier: "counter", model: Counter(), reducer: CounterSynchronousReducer())
    try! dispatcher.register(store: store)
    let recorder = RecorderMiddleware(maxNumberOfRecords: 100)
    dispatcher.register(middleware: recorder)
    let wrong = Locked(0)
    await onThreads(5) { thread in
      guard thread == 4 else {
        for _ in 0..<250 { _ = dispatchSync(dispatcher, CounterAction.increase(1)) }
        return
      }
      // The count after record `i` is `i + 1`.
      for _ in 0..<50 {
        let mismatches = recorder.records.filter { ($0.model as? Counter)?.count != $0.index + 1 }.count
        wrong.withLock { $0 += mismatches }
      }
    }
    #expect(wrong.withLock { $0 } == 0)
    let counts = recorder.records.compactMap { ($0.model as? Counter)?.count }
    #expect(counts == Array(901...1000))
  }

  /// Everything recorded is written by the time the recorder's release returns.
  ///
  /// The release closes the writer on the releasing thread, which waits for what is left to be written: also when
  /// the writer thread is taking lines at that moment (it holds the recorder's storage then, never the
  /// recorder). Many rounds, so that releases land while the writer works.
  @Test func everythingRecordedIsInTheFileWhenTheReleaseReturns() throws {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "counter", model: Counter.self, action: CounterAction.self)
    for round in 0..<100 {
      let file = TemporaryFile()
      do {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore("counter"))
        let recorder = RecorderMiddleware()
        dispatcher.register(middleware: recorder)
        try recorder.attach(appendingTo: file.url, codecs: codecs)
        for _ in 0..<(round % 7 + 1) { try dispatcher.dispatchSync(action: CounterAction.increase(1)) }
        _ = try recorder.undo()
      }  // Released here: no flush() was called.
      let session = try Session.load(from: file.url, codecs: codecs)
      #expect(session.recordCount == round % 7 + 1, "round \(round)")
      #expect(session.cursor == round % 7 - 1, "round \(round): the undo's cursor move is in the file")
    }
  }
}
