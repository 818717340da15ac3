import Foundation
import Testing

@testable import DispatchStore

func appCodecs() -> SessionCodecs {
  var codecs = SessionCodecs()
  codecs.register(storeIdentifier: "counter", model: Counter.self, action: CounterAction.self)
  codecs.register(storeIdentifier: "text", model: Text.self, action: TextAction.self)
  return codecs
}

@Suite("Sessions on disk", .timeLimit(.minutes(2)), .watchdog)
struct SessionTests {
  @Test(arguments: [true, false])
  func appendsLinesOffTheDispatchingThreadInOrderWithoutRewritingTheFile(syncEachRecord: Bool) throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs(), syncEachRecord: syncEachRecord)
    #expect(file.lines.count == 1)  // The header, written when attaching.
    var previous = file.data
    for step in 1...4 {
      if step % 2 == 0 { app.send(TextAction.append("\(step)")) } else { app.send(CounterAction.increase(step)) }
      app.recorder.flush()
      let now = file.data
      #expect(now.count > previous.count)
      #expect(now.prefix(previous.count) == previous)
      previous = now
    }
    // The header, a snapshot of each store's first model (when first seen), and four records.
    #expect(file.lines.count == 7)
    let header = try #require(file.lines.first)
    #expect(header.contains("\"version\":3"))
    #expect(header.contains("\"identifier\":\"counter\""))
    #expect(header.contains("\"identifier\":\"text\""))
  }

  @Test func releasingTheRecorderWritesEverythingRecorded() throws {
    let file = TemporaryFile()
    do {
      let app = RecordedApp()
      try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
      for amount in 1...100 { app.send(CounterAction.increase(amount)) }
    }
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.recordCount == 100)
  }

  /// A recorder keeping fewer records than the session holds resumes from the records it keeps: it decodes none
  /// before them (one that no longer decodes does not stop it), and undo reaches the models before the first kept.
  @Test func aBoundedRecorderResumesOnlyTheRecordsItKeeps() throws {
    let file = TemporaryFile()
    do {
      let app = RecordedApp()
      try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
      app.send(TextAction.append("a"))  // Record 0: the text store's only one.
      for amount in 1...59 { app.send(CounterAction.increase(amount)) }
      app.recorder.flush()
    }
    // Record 5's model no longer decodes (its hashes made again: the file loads).
    var objects = try MailApp.objects(of: file.url)
    let line = try #require(objects.firstIndex { $0.hasPrefix(#"{"k":"r","i":5,"#) })
    objects[line] = objects[line].replacingOccurrences(of: #""count":15,"#, with: #""count":"fifteen","#)
    #expect(objects[line].contains("fifteen"))
    writeSession(objects, to: file.url)
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(throws: SessionError.self) { try session.records }

    let app = RecordedApp(maxNumberOfRecords: 20)
    try app.recorder.resume(session, in: app.dispatcher)
    #expect(app.recorder.records.map(\.index) == Array(40..<60))
    #expect(app.counter.model.count == (1...59).reduce(0, +))
    #expect(app.text.model.value == "a")
    while (try? app.recorder.undo(byRecord: true)) != nil {}
    #expect(app.counter.model.count == (1...39).reduce(0, +))  // Record 39's model.
    #expect(app.text.model.value == "a")
    // Saved, its history verifies from there.
    let saved = TemporaryFile()
    try app.recorder.save(to: saved.url, codecs: appCodecs())
    let reloaded = try Session.load(from: saved.url, codecs: appCodecs())
    #expect(reloaded.firstIndex == 40)
    let verifying = RecordedApp()
    try reloaded.verify(against: verifying.dispatcher)
  }

  /// A store first recorded among the records a bounded recorder keeps starts, for undo, from the model the session
  /// recorded for it then: not from the model the launch that resumes has.
  @Test func aStoreFirstRecordedAmongTheRecordsKeptStartsFromTheSessionsModel() throws {
    let file = TemporaryFile()
    do {
      let app = RecordedApp()
      try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
      for amount in 1...30 { app.send(CounterAction.increase(amount)) }
      app.send(TextAction.append("a"))  // Record 30: the text store's first, after its snapshot.
      for amount in 31...35 { app.send(CounterAction.increase(amount)) }
      app.recorder.flush()
    }
    let app = RecordedApp(maxNumberOfRecords: 10)
    app.send(TextAction.append("this launch's"))
    try app.recorder.resume(try Session.load(from: file.url, codecs: appCodecs()), in: app.dispatcher)
    #expect(app.text.model.value == "a")
    while (try? app.recorder.undo(byRecord: true)) != nil {}
    #expect(app.text.model.value == "")
    #expect(app.counter.model.count == (1...26).reduce(0, +))  // Record 25, before the first kept.
  }

  @Test func loadsWhatWasWrittenAcrossStoresAndResumesWithoutRunningReducers() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(2))
    app.send(TextAction.append("hello"))
    app.send(CounterAction.increase(5))
    try app.recorder.undo()
    app.recorder.flush()
    #expect(app.recorder.persistenceError == nil)

    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.storeIdentifiers == ["counter", "text"])
    #expect(try session.records.map(\.storeIdentifier) == ["counter", "text", "counter"])
    #expect(try session.records.map(\.transactionID) == app.recorder.records.map(\.transactionID))
    #expect(session.cursor == 1)
    #expect(session.truncatedLine == nil)

    let fresh = RecordedApp()
    let reducer = try #require(fresh.counter.reducer as? CounterReducer)
    try fresh.recorder.resume(session, in: fresh.dispatcher)
    #expect(reducer.asked.withLock { $0 }.isEmpty)
    #expect(fresh.recorder.cursor == 1)
    #expect(fresh.counter.model.count == 2)  // At the cursor, as the original app was.
    #expect(fresh.text.model.value == "hello")
    try fresh.recorder.redo()
    #expect(fresh.counter.model.count == 7)
    #expect(fresh.recorder.records.map(\.transactionID) == app.recorder.records.map(\.transactionID))
  }

  @Test func aTruncatedLastLineLoadsEveryCompleteRecordAndIsReported() throws {
    let file = TemporaryFile()
    do {  // The recording process, gone before the file is read (its recorder held the file's lock).
      let app = RecordedApp()
      try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
      for amount in 1...3 { app.send(CounterAction.increase(amount)) }
      app.recorder.flush()
    }
    let complete = file.data
    // The process died while writing a fourth record.
    var partial = complete
    partial.append(Data("{\"k\":\"r\",\"i\":3,\"t\":12".utf8))
    try partial.write(to: file.url)

    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.recordCount == 3)
    #expect(session.truncatedLine == 6)
    // Appending again first drops the incomplete line, so the file stays valid.
    let next = RecordedApp()
    try next.recorder.resume(session, in: next.dispatcher)
    try next.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    #expect(file.data == complete)
    next.send(CounterAction.increase(4))
    next.recorder.flush()
    let reloaded = try Session.load(from: file.url, codecs: appCodecs())
    #expect(reloaded.truncatedLine == nil)
    #expect(try reloaded.records.compactMap { ($0.model as? Counter)?.count } == [1, 3, 6, 10])
  }

  @Test func attachingARecorderThatDidNotResumeTheFileIsRefused() throws {
    let file = TemporaryFile()
    do {  // An earlier run, gone (its recorder held the file's lock).
      let app = RecordedApp()
      try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
      app.send(CounterAction.increase(1))
      app.recorder.flush()
    }
    let before = file.data
    let other = RecordedApp()
    #expect(throws: SessionError.historyMismatch(fileRecords: 1, recorderRecords: 0)) {
      try other.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    }
    #expect(file.data == before)
  }

  @Test func unknownStoresAndUnsupportedVersionsFailNamingTheLine() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(TextAction.append("a"))
    app.send(CounterAction.increase(1))
    app.recorder.flush()

    var onlyCounter = SessionCodecs()
    onlyCounter.register(storeIdentifier: "counter", model: Counter.self, action: CounterAction.self)
    #expect(throws: SessionError.unknownStore(identifier: "text", line: 1)) {
      try Session.load(from: file.url, codecs: onlyCounter)
    }

    let written = file.lines
    var lines = written
    lines[0] = lines[0].replacingOccurrences(of: "\"version\":3", with: "\"version\":4")
    file.write(lines.joined(separator: "\n") + "\n")
    #expect(throws: SessionError.unsupportedVersion(found: 4, supported: 3, line: 1)) {
      try Session.load(from: file.url, codecs: appCodecs())
    }

    file.write("not a session\n")
    #expect(throws: SessionError.missingHeader(path: file.url.path)) {
      try Session.load(from: file.url, codecs: appCodecs())
    }

    // CRLF line ends (an editor's, a transfer's) are named as such, not as a line without its hash.
    file.write(written.map { $0 + "\r" }.joined(separator: "\n") + "\n")
    #expect(
      throws: SessionError.corruptLine(line: 1, reason: "the line ends in a carriage return (CRLF line ends)")
    ) {
      try Session.load(from: file.url, codecs: appCodecs())
    }
  }

  @Test func verifyReportsTheFirstDivergenceWithItsDispatchStoreActionAndFields() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(1))
    app.send(TextAction.append("x"))
    app.send(CounterAction.increase(2))
    app.recorder.flush()
    let session = try Session.load(from: file.url, codecs: appCodecs())

    // The verifying app's counter adds twice as much, so its very first record diverges.
    let dispatcher = Dispatcher()
    let doubling = Store(identifier: "counter", model: Counter()) { (action: CounterAction, model) in
      guard case .increase(let amount) = action else { return }
      model.count += 2 * amount
      model.log.append("counter+\(amount)")
    }
    try dispatcher.register(store: doubling)
    try dispatcher.register(store: Store(identifier: "text", model: Text(), reducer: TextReducer()))
    do {
      try session.verify(against: dispatcher)
      Issue.record("a diverging session must throw")
    } catch {
      guard case .diverged(let index, let dispatch, let store, let action, let differences) = error else {
        throw error
      }
      #expect(index == 0)
      #expect(dispatch == app.recorder.records[0].dispatchID)
      #expect(store == "counter")
      #expect(action == "\(CounterAction.increase(1))")
      #expect(differences == [FieldDifference(path: "count", expected: "1", actual: "2")])
      #expect("\(error)".contains("count: expected 1, actual 2"))
    }
  }

  /// Verify reads a long session's lines in two parts at once: the unreadable line it names is still the first in
  /// the file, whichever part finds one first.
  @Test func verifyOfALongSessionNamesTheFirstUnreadableLine() throws {
    let file = TemporaryFile()
    func makeStore() -> Store<Counter, PickyAction> {
      Store(identifier: "picky", model: Counter()) { (action: PickyAction, model) in model.count += action.amount }
    }
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "picky", model: Counter.self, action: PickyAction.self)
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeStore())
    let recorder = RecorderMiddleware(maxNumberOfRecords: 10)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    // Two amounts this app cannot read back: one in each half of the records.
    for step in 0..<6_000 {
      let amount = step == 1_000 ? 2_000_000 : step == 5_000 ? 3_000_000 : 1
      try dispatcher.dispatchSync(action: PickyAction(amount: amount))
    }
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    let firstBad = try #require(file.lines.firstIndex { $0.contains("2000000") }) + 1
    let session = try Session.load(from: file.url, codecs: codecs)
    #expect(session.recordCount == 6_000)
    let verifying = Dispatcher()
    try verifying.register(store: makeStore())
    do {
      try session.verify(against: verifying)
      Issue.record("a session with an unreadable action must not verify")
    } catch {
      guard case .corruptLine(let line, _) = error else { throw error }
      #expect(line == firstBad)
    }
  }

  /// Verifying into a dispatcher without the session's store names the store, and says the models before the first
  /// record need it (not "Record #-1"); restoring names the record restored.
  @Test func aStoreMissingBeforeTheFirstRecordIsNamed() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(1))
    app.recorder.flush()
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect {
      try session.verify(against: Dispatcher())
    } throws: { error in
      guard case .unregisteredStore(let index, let store) = error as? SessionError else { return false }
      return index == -1 && "\(error)".hasPrefix("Before the first record: store \"\(store)\" is not registered")
    }
    #expect {
      try session.restore(into: Dispatcher())
    } throws: { error in
      guard case .unregisteredStore(let index, let store) = error as? SessionError else { return false }
      return index == 0 && "\(error)".hasPrefix("Record #0: store \"\(store)\" is not registered")
    }
  }

  /// A long session of 6,000 increments, recorded to `file` by a store of `PickyAction`s.
  static func recordLongSession(to file: TemporaryFile) throws -> SessionCodecs {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "picky", model: Counter.self, action: PickyAction.self)
    let dispatcher = Dispatcher()
    try dispatcher.register(
      store: Store(identifier: "picky", model: Counter()) { (action: PickyAction, model) in model.count += action.amount
      })
    let recorder = RecorderMiddleware(maxNumberOfRecords: 10)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    for _ in 0..<6_000 { try dispatcher.dispatchSync(action: PickyAction(amount: 1)) }
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    return codecs
  }

  /// A long session (read on two threads) that diverges, then fails: the divergence, the first, is the one thrown.
  @Test func verifyOfALongSessionThrowsItsFirstDivergenceBeforeALaterFailure() throws {
    let file = TemporaryFile()
    let session = try Session.load(from: file.url, codecs: Self.recordLongSession(to: file))
    let verifying = Dispatcher()
    try verifying.register(
      store: Store(identifier: "picky", model: Counter()) { (action: PickyAction, model) in
        // Record 3,000 adds two; from a count of 3,010 on, the reducer throws.
        guard model.count < 3_010 else { throw TestFailure(reason: "past 3,010") }
        model.count += model.count == 3_000 ? 2 : action.amount
      })
    do {
      try session.verify(against: verifying)
      Issue.record("a diverging session must throw")
    } catch {
      guard case .diverged(let index, _, let store, _, let differences) = error else { throw error }
      #expect(index == 3_000)
      #expect(store == "picky")
      #expect(differences == [FieldDifference(path: "count", expected: "3001", actual: "3002")])
    }
  }

  /// A long session whose re-run fails without diverging before: the failure is thrown.
  @Test func verifyOfALongSessionThrowsALaterFailureWhenNothingDivergedBefore() throws {
    let file = TemporaryFile()
    let session = try Session.load(from: file.url, codecs: Self.recordLongSession(to: file))
    let verifying = Dispatcher()
    try verifying.register(
      store: Store(identifier: "picky", model: Counter()) { (action: PickyAction, model) in
        guard model.count < 4_000 else { throw TestFailure(reason: "past 4,000") }
        model.count += action.amount
      })
    do {
      try session.verify(against: verifying)
      Issue.record("a failing re-run must throw")
    } catch {
      guard case .dispatchFailed(let index, _, _, _, _) = error else { throw error }
      #expect(index == 4_000)
    }
  }

  /// Two stores whose actions, of two types, encode to the same JSON, in a session long enough to be read on two
  /// threads: each record's action is decoded as its own store's type, however often the same JSON comes back.
  @Test func actionsWithTheSameJSONInTwoStoresVerifyAsEachStoresOwn() throws {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "picky", model: Counter.self, action: PickyAction.self)
    codecs.register(storeIdentifier: "spare", model: Counter.self, action: SpareAction.self)
    func register(into dispatcher: Dispatcher) throws {
      try dispatcher.register(
        store: Store(identifier: "picky", model: Counter()) { (action: PickyAction, model) in
          model.count += action.amount
        })
      try dispatcher.register(
        store: Store(identifier: "spare", model: Counter()) { (action: SpareAction, model) in
          model.count -= action.amount
        })
    }
    let file = TemporaryFile()
    let recording = Dispatcher()
    try register(into: recording)
    let recorder = RecorderMiddleware(maxNumberOfRecords: 10)
    recording.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    for step in 0..<6_000 {
      // Both write {"amount":1} and {"amount":2}.
      if step % 3 == 0 {
        try recording.dispatchSync(action: SpareAction(amount: 1 + step % 2))
      } else {
        try recording.dispatchSync(action: PickyAction(amount: 1 + step % 2))
      }
    }
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    let session = try Session.load(from: file.url, codecs: codecs)
    #expect(session.recordCount == 6_000)
    let verifying = Dispatcher()
    try register(into: verifying)
    try session.verify(against: verifying)
    #expect((verifying.store(with: "spare") as? Store<Counter, SpareAction>)?.model.count == -3_000)
  }

  @Test func aTenThousandActionSessionRoundTrips() async throws {
    // Two stores of different types; the models stay small so the file grows linearly.
    @Sendable func makeApp() throws -> (
      Dispatcher, Store<Score, ScoreAction>, Store<Text, TextAction>, RecorderMiddleware
    ) {
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
    // Ten thousand synchronous dispatches (a thousand under a sanitizer, whose load starved other suites) and a
    // flush, off the cooperative pool (see `onOwnThread`).
    let count = isSanitized ? 1_000 : 10_000
    let failures = await onOwnThread {
      let failures = (0..<count).filter { step in
        let result =
          step % 3 == 0
          ? dispatchSync(dispatcher, TextAction.append(String(step % 10)))
          : dispatchSync(dispatcher, ScoreAction.add(step))
        return !result.isSuccess
      }
      recorder.flush()
      return failures
    }
    #expect(failures.isEmpty)
    #expect(recorder.persistenceError == nil)
    #expect(file.lines.count == count + 3)  // The header and a first-model snapshot per store.

    // Loading, resuming and verifying the records: off the pool too.
    let url = file.url
    let (recordCount, fresh, verified) = try await onOwnThread {
      [codecs] () throws -> (Int, (Score, Text, Int), Score) in
      let session = try Session.load(from: url, codecs: codecs)
      let (freshDispatcher, freshScore, freshText, freshRecorder) = try makeApp()
      try freshRecorder.resume(session, in: freshDispatcher)
      let (verifying, verifiedScore, _, _) = try makeApp()
      try session.verify(against: verifying)
      let resumed = (freshScore.model, freshText.model, freshRecorder.records.count)
      return (session.recordCount, resumed, verifiedScore.model)
    }
    #expect(recordCount == count)
    #expect(fresh.0 == score.model)
    #expect(fresh.1 == text.model)
    #expect(fresh.2 == count)
    #expect(verified == score.model)
  }

  @Test func concurrentDispatchesAreWrittenInRecordOrder() async throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    await onThreads(8) { thread in
      for _ in 0..<200 {
        let result =
          thread % 2 == 0
          ? dispatchSync(app.dispatcher, CounterAction.increase(1))
          : dispatchSync(app.dispatcher, TextAction.append("t"))
        #expect(result.isSuccess)
      }
    }
    app.recorder.flush()
    #expect(app.recorder.persistenceError == nil)
    // Loading checks that every record's index follows the previous one's.
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(try session.records.map(\.index) == Array(0..<1_600))
    #expect(try session.records.map(\.transactionID) == app.recorder.records.map(\.transactionID))
  }

  @Test func saveWritesTheWholeHistoryAlsoWhenOlderRecordsWereDropped() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    app.send(CounterAction.increase(1))
    app.send(TextAction.append("b"))
    try app.recorder.save(to: file.url, codecs: appCodecs())
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.recordCount == 2)

    let bounded = RecordedApp(maxNumberOfRecords: 1)
    bounded.send(CounterAction.increase(1))
    bounded.send(CounterAction.increase(2))
    try bounded.recorder.save(to: file.url, codecs: appCodecs())
    let kept = try Session.load(from: file.url, codecs: appCodecs())
    #expect(kept.firstIndex == 1)
    #expect(kept.recordCount == 1)
    // It verifies from the snapshot of the models before its first record.
    let fresh = RecordedApp()
    try kept.restore(into: fresh.dispatcher)
    #expect(fresh.counter.model.count == 3)
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
      operation.updateModel {
        $0.points += amount
        $0.last = amount
      }
      operation.finish()
    }
  }
}

/// An action whose JSON is `PickyAction`'s: `{"amount":N}`.
struct SpareAction: ActionType, Codable {
  let amount: Int
}

/// An action whose amounts from a million on this app cannot read (a newer app wrote them).
struct PickyAction: ActionType, Codable {
  let amount: Int

  init(amount: Int) { self.amount = amount }

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    amount = try container.decode(Int.self, forKey: .amount)
    guard amount < 1_000_000 else {
      throw DecodingError.dataCorruptedError(forKey: .amount, in: container, debugDescription: "too large")
    }
  }
}
