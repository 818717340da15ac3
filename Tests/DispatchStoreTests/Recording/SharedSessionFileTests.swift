import Foundation
import Testing

@testable import DispatchStore

/// A session file that two recorders (two launches, two processes) take turns with: neither loses the other's lines,
/// and a file that changed since it was loaded is refused with a typed error, left as it is.
@Suite("Session files shared between recorders", .timeLimit(.minutes(1)), .watchdog)
struct SharedSessionFileTests {
  /// A file of three increments, recorded by one launch that then ends.
  static func recordedFile() throws -> TemporaryFile {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    for amount in 1...3 { app.send(CounterAction.increase(amount)) }
    app.recorder.flush()
    return file
  }

  /// A launch that loads the file and resumes it, not yet attached.
  static func resumed(_ file: TemporaryFile, maxNumberOfRecords: Int = 10_000) throws -> RecordedApp {
    let app = RecordedApp(maxNumberOfRecords: maxNumberOfRecords)
    try app.recorder.resume(try Session.load(from: file.url, codecs: appCodecs()), in: app.dispatcher)
    return app
  }

  /// Another launch that resumes `file`, attaches to it, runs `steps` and ends.
  static func anotherLaunch(on file: TemporaryFile, _ steps: (RecordedApp) throws -> Void) throws {
    let other = try resumed(file)
    try other.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    try steps(other)
    other.recorder.flush()
  }

  /// Checks that `app`'s recorder may not save over `file`, which another launch changed by recording an increase of
  /// 10 last: `fileChanged`, and the file left as it is.
  static func expectSaveRefused(by app: RecordedApp, over file: TemporaryFile) throws {
    let before = file.data
    #expect(throws: SessionError.fileChanged(path: file.url.path)) {
      try app.recorder.save(to: file.url, codecs: appCodecs())
    }
    #expect(file.data == before)
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(try session.records.last?.action as? CounterAction == .increase(10))
  }

  @Test func aLaunchThatResumedBeforeAnotherUndidIsRefusedAndTheUndoKept() throws {
    let file = try Self.recordedFile()
    let late = try Self.resumed(file)
    try Self.anotherLaunch(on: file) { other in _ = try other.recorder.undo() }
    let before = file.data
    #expect(throws: SessionError.historyMismatch(fileRecords: 3, recorderRecords: 3)) {
      try late.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    }
    #expect(file.data == before)
    #expect(try Session.load(from: file.url, codecs: appCodecs()).cursor == 1)
  }

  @Test func aLaunchThatResumedBeforeAnotherUndidAndDispatchedIsRefused() throws {
    let file = try Self.recordedFile()
    let late = try Self.resumed(file)
    try Self.anotherLaunch(on: file) { other in
      _ = try other.recorder.undo()
      other.send(CounterAction.increase(10))
    }
    // As many records as when it resumed, but record 2 is another one now.
    #expect(try Session.load(from: file.url, codecs: appCodecs()).recordCount == 3)
    #expect(throws: SessionError.self) { try late.recorder.attach(appendingTo: file.url, codecs: appCodecs()) }
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(try session.records.last?.action as? CounterAction == .increase(10))
  }

  @Test func aMoveBetweenResumingAndAttachingIsRefusedNotDropped() throws {
    let file = try Self.recordedFile()
    let app = try Self.resumed(file)
    _ = try app.recorder.undo()
    let before = file.data
    #expect(throws: SessionError.historyMismatch(fileRecords: 3, recorderRecords: 3)) {
      try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    }
    #expect(file.data == before)
  }

  @Test func resumingACursorBeforeTheRecordsTheRecorderKeepsIsRefused() throws {
    let file = TemporaryFile()
    do {
      let app = RecordedApp()
      try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
      for amount in 1...30 { app.send(CounterAction.increase(amount)) }
      _ = try app.recorder.jump(to: 4)
      app.recorder.flush()
    }
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.cursor == 4)
    let app = RecordedApp(maxNumberOfRecords: 10)
    #expect(throws: SessionError.indexOutOfRange(4, valid: 19...29)) {
      try app.recorder.resume(session, in: app.dispatcher)
    }
    #expect(app.counter.model.count == 0)
    #expect(app.recorder.records.isEmpty)
  }

  @Test func resumingARecorderAttachedToAFileIsRefused() throws {
    let file = try Self.recordedFile()
    let session = try Session.load(from: file.url, codecs: appCodecs())
    let other = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: other.url, codecs: appCodecs())
    #expect(throws: SessionError.recorderAttached(path: other.url.path)) {
      try app.recorder.resume(session, in: app.dispatcher)
    }
    #expect(app.counter.model.count == 0)
  }

  @Test func savingOverTheLoadedFileAfterAnotherRecorderAppendedIsRefused() throws {
    let file = try Self.recordedFile()
    let session = try Session.load(from: file.url, codecs: appCodecs())
    try Self.anotherLaunch(on: file) { other in other.send(CounterAction.increase(10)) }
    let before = file.data
    #expect(throws: SessionError.fileChanged(path: file.url.path)) { try session.save(to: file.url) }
    #expect(throws: SessionError.fileChanged(path: file.url.path)) {
      try session.compact(before: 2, to: file.url)
    }
    #expect(file.data == before)
    #expect(try Session.load(from: file.url, codecs: appCodecs()).recordCount == 4)
    // Unchanged since it was loaded, it is replaced.
    let reloaded = try Session.load(from: file.url, codecs: appCodecs())
    try reloaded.compact(before: 2, to: file.url)
    #expect(try Session.load(from: file.url, codecs: appCodecs()).firstIndex == 2)
  }

  @Test func storesWhoseIdentifiersNeedEscapingLoadAndVerify() throws {
    let identifiers = ["feature/search", "tab\u{8}bar", "quote\"d"]
    let file = TemporaryFile()
    var codecs = SessionCodecs()
    let dispatcher = Dispatcher()
    for identifier in identifiers {
      try dispatcher.register(store: makeCounterStore(identifier))
      codecs.register(storeIdentifier: identifier, model: Counter.self, action: CounterAction.self)
    }
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    for identifier in identifiers {
      try dispatcher.dispatchSync(action: CounterAction.increase(2), to: identifier)
    }
    recorder.flush()
    let session = try Session.load(from: file.url, codecs: codecs)
    #expect(try session.records.map(\.storeIdentifier) == identifiers)
    let verifying = Dispatcher()
    for identifier in identifiers { try verifying.register(store: makeCounterStore(identifier)) }
    try session.verify(against: verifying)
  }

  @Test func aMoveToTheCursorBetweenResumingAndAttachingIsNoMove() throws {
    let file = try Self.recordedFile()
    let app = try Self.resumed(file)
    _ = try app.recorder.jump(to: app.recorder.cursor)
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(10))
    app.recorder.flush()
    #expect(try Session.load(from: file.url, codecs: appCodecs()).recordCount == 4)
  }

  /// The file loaded, reached by another name (a hard link): found by its device and inode.
  @Test func savingOverAHardLinkToTheLoadedFileAfterAnotherRecorderAppendedIsRefused() throws {
    let file = try Self.recordedFile()
    let session = try Session.load(from: file.url, codecs: appCodecs())
    let linked = file.url.deletingLastPathComponent().appendingPathComponent("linked-\(UUID().uuidString).jsonl")
    try FileManager.default.linkItem(at: file.url, to: linked)
    defer { try? FileManager.default.removeItem(at: linked) }
    try Self.anotherLaunch(on: file) { other in other.send(CounterAction.increase(10)) }
    #expect(throws: SessionError.fileChanged(path: linked.path)) { try session.save(to: linked) }
    #expect(try Session.load(from: file.url, codecs: appCodecs()).recordCount == 4)
  }

  /// A recorder that resumed a file, saving over it after another launch appended to it: refused, the file kept.
  @Test func savingTheRecorderOverTheFileItResumedAfterAnotherLaunchAppendedIsRefused() throws {
    let file = try Self.recordedFile()
    let late = try Self.resumed(file)
    late.send(CounterAction.increase(5))
    try Self.anotherLaunch(on: file) { other in other.send(CounterAction.increase(10)) }
    try Self.expectSaveRefused(by: late, over: file)
  }

  /// Unchanged by anybody else, the file a recorder resumed is replaced by each of its saves: the second save checks
  /// against what the first wrote.
  @Test func aRecorderSavesOverTheFileItResumedAgainAndAgain() throws {
    let file = try Self.recordedFile()
    let app = try Self.resumed(file)
    app.send(CounterAction.increase(5))
    try app.recorder.save(to: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(6))
    try app.recorder.save(to: file.url, codecs: appCodecs())
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.recordCount == 5)
    #expect(try session.records.last?.action as? CounterAction == .increase(6))
    // Then changed by another launch: the next save is refused.
    try Self.anotherLaunch(on: file) { other in other.send(CounterAction.increase(10)) }
    #expect(throws: SessionError.fileChanged(path: file.url.path)) {
      try app.recorder.save(to: file.url, codecs: appCodecs())
    }
  }

  /// A recorder that attached to the file it resumed appends to it itself: once released there, saving over it is not
  /// refused for its own lines.
  @Test func aRecorderThatAppendedToTheFileItResumedSavesOverItAfterAttachingElsewhere() throws {
    let file = try Self.recordedFile()
    let elsewhere = TemporaryFile()
    let app = try Self.resumed(file)
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(5))
    try app.recorder.attach(appendingTo: elsewhere.url, codecs: appCodecs())
    app.send(CounterAction.increase(6))
    try app.recorder.save(to: file.url, codecs: appCodecs())
    #expect(try Session.load(from: file.url, codecs: appCodecs()).recordCount == 5)
  }

  /// A recorder that appended to the file it resumed, then attached elsewhere: once another launch appended to the
  /// file, a save over it is refused and the other launch's records kept.
  @Test func aRecorderThatLeftTheFileItResumedRefusesToSaveOverAnotherLaunchsRecords() throws {
    let file = try Self.recordedFile()
    let elsewhere = TemporaryFile()
    let app = try Self.resumed(file)
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(5))
    try app.recorder.attach(appendingTo: elsewhere.url, codecs: appCodecs())
    try Self.anotherLaunch(on: file) { other in other.send(CounterAction.increase(10)) }
    try Self.expectSaveRefused(by: app, over: file)
  }

  /// A recorder that appended to the file it resumed through a hard link: its own lines there are found by the file's
  /// device and inode, and a save over the file after it left is not refused for them.
  @Test func aRecorderThatAppendedThroughAHardLinkSavesOverTheFileAfterLeavingIt() throws {
    let file = try Self.recordedFile()
    let linked = file.url.deletingLastPathComponent().appendingPathComponent("linked-\(UUID().uuidString).jsonl")
    try FileManager.default.linkItem(at: file.url, to: linked)
    defer { try? FileManager.default.removeItem(at: linked) }
    let elsewhere = TemporaryFile()
    let app = try Self.resumed(file)
    try app.recorder.attach(appendingTo: linked, codecs: appCodecs())
    app.send(CounterAction.increase(5))
    try app.recorder.attach(appendingTo: elsewhere.url, codecs: appCodecs())
    try app.recorder.save(to: file.url, codecs: appCodecs())
    #expect(try Session.load(from: file.url, codecs: appCodecs()).recordCount == 4)
  }

  /// The codecs of an app's earlier version: only its counter store.
  static func counterCodecs() -> SessionCodecs {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "counter", model: Counter.self, action: CounterAction.self)
    return codecs
  }

  /// A file of three increments, recorded by the app's earlier version, which had only its counter store; with
  /// `incompleteLastLine`, cut in the middle of a fourth.
  static func fileOfTheEarlierVersion(incompleteLastLine: Bool = false) throws -> TemporaryFile {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: counterCodecs())
    for amount in 1...(incompleteLastLine ? 4 : 3) { app.send(CounterAction.increase(amount)) }
    app.recorder.flush()
    if incompleteLastLine { file.write(String(String(decoding: file.data, as: UTF8.self).dropLast(30))) }
    return file
  }

  /// A line without its hash.
  static func withoutHash(_ line: String) -> String {
    String(line.dropLast(SessionHash.suffixLength))
  }

  /// The next version adds the text store: attaching writes the file's header again to list it, every other line
  /// the same bytes with its hash chained anew, and the session goes on, loads and verifies.
  @Test func aStoreTheAppAddedIsWrittenIntoTheHeaderWhenItAttaches() throws {
    let file = try Self.fileOfTheEarlierVersion()
    let before = file.lines
    #expect(!before[0].contains(#""text""#))
    let app = try Self.resumed(file)
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(TextAction.append("a"))
    app.recorder.flush()
    #expect(app.recorder.persistenceError == nil)
    let lines = file.lines
    #expect(lines[0].contains(#""identifier":"counter""#) && lines[0].contains(#""identifier":"text""#))
    #expect(lines[1..<before.count].map(Self.withoutHash) == before.dropFirst().map(Self.withoutHash))
    // Then the new store's model before its first record, and that record.
    #expect(lines.count == before.count + 2)
    #expect(lines[before.count].hasPrefix(#"{"k":"s","i":3,"m":{"text":"#))
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.recordCount == 4)
    #expect(try session.records.last?.action as? TextAction == .append("a"))
    let verifying = Dispatcher()
    try verifying.register(store: makeCounterStore("counter"))
    try verifying.register(store: Store(identifier: "text", model: Text(), reducer: TextReducer()))
    try session.verify(against: verifying)
  }

  /// An incomplete last line (a crash) is dropped by the rewrite, as attaching drops it.
  @Test func aStoreAddedToAFileWithAnIncompleteLastLineDropsThatLine() throws {
    let file = try Self.fileOfTheEarlierVersion(incompleteLastLine: true)
    #expect(try Session.load(from: file.url, codecs: appCodecs()).truncatedLine != nil)
    let app = try Self.resumed(file)
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(TextAction.append("a"))
    app.recorder.flush()
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.truncatedLine == nil)
    #expect(session.recordCount == 4)
    #expect(try session.records.map(\.storeIdentifier) == ["counter", "counter", "counter", "text"])
  }

  /// While the earlier version's launch holds the file, the next version's attach is refused, and the file is left
  /// as it is; once it is released, the header is written again.
  @Test func aStoreIsNotAddedToAFileAnotherRecorderHolds() throws {
    let file = try Self.fileOfTheEarlierVersion()
    let holder = try Self.resumed(file)
    try holder.recorder.attach(appendingTo: file.url, codecs: Self.counterCodecs())
    let app = try Self.resumed(file)
    let before = file.data
    #expect(throws: SessionError.inUse(path: file.url.path)) {
      try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    }
    #expect(file.data == before)
  }

  /// A recorder that appended through a hard link, then left: another launch that then saved over the file (a new
  /// file at its path) is not overwritten by the recorder's save.
  @Test func aRecorderThatLeftAHardLinkRefusesToSaveOverAFileAnotherLaunchSaved() throws {
    let file = try Self.recordedFile()
    let linked = file.url.deletingLastPathComponent().appendingPathComponent("linked-\(UUID().uuidString).jsonl")
    try FileManager.default.linkItem(at: file.url, to: linked)
    defer { try? FileManager.default.removeItem(at: linked) }
    let elsewhere = TemporaryFile()
    let app = try Self.resumed(file)
    try app.recorder.attach(appendingTo: linked, codecs: appCodecs())
    app.send(CounterAction.increase(5))
    try app.recorder.attach(appendingTo: elsewhere.url, codecs: appCodecs())
    try Self.anotherLaunch(on: file) { other in other.send(CounterAction.increase(10)) }
    try Session.load(from: file.url, codecs: appCodecs()).save(to: file.url)
    let before = file.data
    #expect(throws: SessionError.fileChanged(path: file.url.path)) {
      try app.recorder.save(to: file.url, codecs: appCodecs())
    }
    #expect(file.data == before)
  }

  /// A recorder whose attach wrote the file again (a store added) attaches to it again after attaching elsewhere, as
  /// to any file it appended to.
  @Test func aRecorderAttachesAgainToAFileItsAttachWroteAgain() throws {
    let file = try Self.fileOfTheEarlierVersion()
    let elsewhere = TemporaryFile()
    let app = try Self.resumed(file)
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    try app.recorder.attach(appendingTo: elsewhere.url, codecs: appCodecs())
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(TextAction.append("a"))
    app.recorder.flush()
    #expect(app.recorder.persistenceError == nil)
    #expect(try Session.load(from: file.url, codecs: appCodecs()).recordCount == 4)
  }
}
