import DispatchStore
import Foundation
import Testing

func appCodecs() -> SessionCodecs {
  var codecs = SessionCodecs()
  codecs.register(storeIdentifier: "counter", model: Counter.self, action: CounterAction.self)
  codecs.register(storeIdentifier: "text", model: Text.self, action: TextAction.self)
  return codecs
}

@Suite("Sessions on disk", .timeLimit(.minutes(2)))
struct SessionTests {
  @Test func appendsOneFlushedLinePerRecordWithoutRewritingTheFile() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    #expect(file.lines.count == 1)  // The header.
    var previous = file.data
    for step in 1...4 {
      if step % 2 == 0 { app.send(TextAction.append("\(step)")) } else { app.send(CounterAction.increase(step)) }
      // Each record is on disk as soon as the dispatch returned, after everything written before.
      let now = file.data
      #expect(now.count > previous.count)
      #expect(now.prefix(previous.count) == previous)
      #expect(file.lines.count == step + 1)
      previous = now
    }
    let header = try #require(file.lines.first)
    #expect(header.contains("\"version\":1"))
    #expect(header.contains("\"identifier\":\"counter\""))
    #expect(header.contains("\"identifier\":\"text\""))
  }

  @Test func loadsWhatWasWrittenAcrossStoresAndReplaysItExactly() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(2))
    app.send(TextAction.append("hello"))
    app.send(CounterAction.increase(5))
    try app.recorder.previousRecord()
    #expect(app.recorder.persistenceError == nil)

    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.storeIdentifiers == ["counter", "text"])
    #expect(session.records.map(\.storeIdentifier) == ["counter", "text", "counter"])
    #expect(session.records.map(\.transactionID) == app.recorder.records.map(\.transactionID))
    #expect(session.cursor == 1)
    #expect(session.truncatedLine == nil)

    let fresh = RecordedApp()
    try fresh.recorder.replay(session, into: fresh.dispatcher)
    #expect(fresh.recorder.cursor == 1)
    #expect(fresh.counter.model.count == 2)  // At the cursor, as the original app was.
    #expect(fresh.text.model.value == "hello")
    try fresh.recorder.nextRecord()
    #expect(fresh.counter.model.count == 7)
    #expect(fresh.recorder.records.map(\.transactionID) == session.records.map(\.transactionID))
  }

  @Test func aTruncatedLastLineLoadsEveryCompleteRecordAndIsReported() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    for amount in 1...3 { app.send(CounterAction.increase(amount)) }
    let complete = file.data
    // The process died while writing a fourth record.
    var partial = complete
    partial.append(Data("{\"action\":{\"increase\":{\"_0\":4}},\"ind".utf8))
    try partial.write(to: file.url)

    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.records.count == 3)
    #expect(session.truncatedLine == 5)
    // Appending again first drops the incomplete line, so the file stays valid.
    let next = RecordedApp()
    try next.recorder.replay(session, into: next.dispatcher)
    try next.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    #expect(file.data == complete)
    next.send(CounterAction.increase(4))
    let reloaded = try Session.load(from: file.url, codecs: appCodecs())
    #expect(reloaded.truncatedLine == nil)
    #expect(reloaded.records.compactMap { ($0.model as? Counter)?.count } == [1, 3, 6, 10])
  }

  @Test func aCorruptMiddleLineFailsWithItsLineNumberAndNothingIsApplied() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    for amount in 1...3 { app.send(CounterAction.increase(amount)) }
    var lines = file.lines
    lines[2] = String(lines[2].dropLast(5))  // Line 3 of 4.
    file.write(lines.joined(separator: "\n") + "\n")
    let before = file.data

    #expect(throws: SessionError.self) { try Session.load(from: file.url, codecs: appCodecs()) }
    do {
      _ = try Session.load(from: file.url, codecs: appCodecs())
    } catch {
      guard case .corruptLine(let line, _) = error else { throw error }
      #expect(line == 3)
    }
    let other = RecordedApp()
    #expect(throws: SessionError.self) { try other.recorder.attach(appendingTo: file.url, codecs: appCodecs()) }
    #expect(file.data == before)
    #expect(other.counter.model.count == 0)
  }

  @Test func unknownStoresAndUnsupportedVersionsFailNamingTheLine() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(TextAction.append("a"))
    app.send(CounterAction.increase(1))

    var onlyCounter = SessionCodecs()
    onlyCounter.register(storeIdentifier: "counter", model: Counter.self, action: CounterAction.self)
    #expect(throws: SessionError.unknownStore(identifier: "text", line: 1)) {
      try Session.load(from: file.url, codecs: onlyCounter)
    }

    var lines = file.lines
    lines[2] = lines[2].replacingOccurrences(of: "\"store\":\"counter\"", with: "\"store\":\"ghost\"")
    file.write(lines.joined(separator: "\n") + "\n")
    #expect(throws: SessionError.unknownStore(identifier: "ghost", line: 3)) {
      try Session.load(from: file.url, codecs: appCodecs())
    }

    lines = file.lines
    lines[0] = lines[0].replacingOccurrences(of: "\"version\":1", with: "\"version\":2")
    file.write(lines.joined(separator: "\n") + "\n")
    #expect(throws: SessionError.unsupportedVersion(found: 2, supported: 1, line: 1)) {
      try Session.load(from: file.url, codecs: appCodecs())
    }

    file.write("not a session\n")
    #expect(throws: SessionError.missingHeader(path: file.url.path)) {
      try Session.load(from: file.url, codecs: appCodecs())
    }
  }

  @Test func replayReportsTheFirstDivergenceWithIndexStoreActionAndModels() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(1))
    app.send(TextAction.append("x"))
    app.send(CounterAction.increase(2))
    let session = try Session.load(from: file.url, codecs: appCodecs())

    // The replaying app's counter adds twice as much, so its very first record diverges.
    let dispatcher = Dispatcher()
    let doubling = Store(
      identifier: "counter", model: Counter(),
      reducer: CounterReducer(onStart: { action, store in
        if case .increase(let amount) = action { store.updateModel { $0.count += amount } }
      }))
    try dispatcher.register(store: doubling)
    try dispatcher.register(store: Store(identifier: "text", model: Text(), reducer: TextReducer()))
    do {
      try session.replay(into: dispatcher)
      Issue.record("a diverging replay must throw")
    } catch {
      guard case .diverged(let index, let store, let action, let expected, let actual) = error else { throw error }
      #expect(index == 0)
      #expect(store == "counter")
      #expect(action == "\(CounterAction.increase(1))")
      #expect(expected.contains("\"count\":1"))
      #expect(actual.contains("\"count\":2"))
    }
  }

  @Test func aTenThousandActionSessionRoundTrips() throws {
    // Two stores of different types; the models stay small so the file grows linearly.
    func makeApp() throws -> (Dispatcher, Store<Score, ScoreAction>, Store<Text, TextAction>, RecorderMiddleware) {
      let dispatcher = Dispatcher()
      let score = Store(identifier: "score", model: Score(), reducer: ScoreReducer())
      let text = Store(identifier: "text", model: Text(), reducer: TextReducer())
      try dispatcher.register(store: score)
      try dispatcher.register(store: text)
      let recorder = RecorderMiddleware(maxNumberOfRecords: 20_000)
      dispatcher.register(middleware: recorder)
      return (dispatcher, score, text, recorder)
    }
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "score", model: Score.self, action: ScoreAction.self)
    codecs.register(storeIdentifier: "text", model: Text.self, action: TextAction.self)

    let file = TemporaryFile()
    let (dispatcher, score, text, recorder) = try makeApp()
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    for step in 0..<10_000 {
      let result =
        step % 3 == 0
        ? dispatchSync(dispatcher, TextAction.append(String(step % 10)))
        : dispatchSync(dispatcher, ScoreAction.add(step))
      #expect(result.isSuccess)
    }
    #expect(recorder.persistenceError == nil)
    #expect(file.lines.count == 10_001)

    let session = try Session.load(from: file.url, codecs: codecs)
    #expect(session.records.count == 10_000)
    let (freshDispatcher, freshScore, freshText, freshRecorder) = try makeApp()
    try freshRecorder.replay(session, into: freshDispatcher)
    #expect(freshScore.model == score.model)
    #expect(freshText.model == text.model)
    #expect(freshRecorder.records.count == 10_000)
  }

  @Test func concurrentDispatchesAreWrittenInRecordOrder() async throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    await concurrently(iterations: 8) { thread in
      for _ in 0..<200 {
        let result =
          thread % 2 == 0
          ? dispatchSync(app.dispatcher, CounterAction.increase(1))
          : dispatchSync(app.dispatcher, TextAction.append("t"))
        #expect(result.isSuccess)
      }
    }
    #expect(app.recorder.persistenceError == nil)
    // Loading checks that every record's index follows the previous one's.
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.records.map(\.index) == Array(0..<1_600))
    #expect(session.records.map(\.transactionID) == app.recorder.records.map(\.transactionID))
  }

  @Test func saveWritesTheWholeHistoryAndRefusesAnIncompleteOne() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    app.send(CounterAction.increase(1))
    app.send(TextAction.append("b"))
    try app.recorder.save(to: file.url, codecs: appCodecs())
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.records.count == 2)

    let bounded = RecordedApp(maxNumberOfRecords: 1)
    bounded.send(CounterAction.increase(1))
    bounded.send(CounterAction.increase(1))
    #expect(throws: SessionError.historyIncomplete(droppedRecords: 1)) {
      try bounded.recorder.save(to: file.url, codecs: appCodecs())
    }
  }
}

struct Score: ModelType, Codable, Equatable {
  var points = 0
  var last = 0
}

enum ScoreAction: ActionType, Codable, Equatable {
  case add(Int)
}

final class ScoreReducer: Reducer<Score, ScoreAction>, @unchecked Sendable {
  override func operation(for action: ScoreAction, in store: Store<Score, ScoreAction>) -> ActionOperation<
    Score, ScoreAction
  > {
    ActionOperation(action: action, store: store) { operation, action, store in
      guard case .add(let amount) = action else { return operation.finish() }
      store.updateModel {
        $0.points += amount
        $0.last = amount
      }
      operation.finish()
    }
  }
}
