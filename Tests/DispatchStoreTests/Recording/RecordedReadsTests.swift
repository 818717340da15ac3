import Foundation
import Testing

@testable import DispatchStore

struct MailCount: ModelType, Codable, Equatable {
  var count = 0
}

enum MailAction: ActionType, Codable, Equatable {
  case received(Int)
}

struct MailBadge: ModelType, Codable, Equatable {
  var unread = 0
}

/// Where the badge's operation for one message stops while it is recorded: the test decides when it reads the inbox
/// and when it changes the badge.
final class ReadScript: Sendable {
  /// Opened by the operation when it starts: the inbox handled the message.
  let started = AsyncGate()
  let mayRead = AsyncGate()
  /// Opened by the operation once it read the inbox.
  let hasRead = AsyncGate()
  let mayChange = AsyncGate()
  /// With `readsTwice`: opened by the operation after its first change; then it waits to read again.
  let changedOnce = AsyncGate()
  let mayReadAgain = AsyncGate()
}

/// An inbox, and a badge that waits for it and counts its messages with `model(of:as:)`, as the new user's program
/// of proposal 0022 did.
enum MailApp {
  static func codecs() -> SessionCodecs {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "inbox", model: MailCount.self, action: MailAction.self)
    codecs.register(storeIdentifier: "badge", model: MailBadge.self, action: MailAction.self)
    return codecs
  }

  /// The app, whose badge's operation stops where `scripts` say for their messages.
  ///
  /// With `readsTwice`, the operation reads the inbox and changes the badge twice.
  static func make(
    scripts: [Int: ReadScript] = [:], readsTwice: Bool = false
  ) throws -> (Dispatcher, Store<MailCount, MailAction>, Store<MailBadge, MailAction>) {
    let dispatcher = Dispatcher()
    let inbox = Store(identifier: "inbox", model: MailCount()) { (_: MailAction, model: inout MailCount) in
      model.count += 1
    }
    let badge = Store(identifier: "badge", model: MailBadge(), waitFor: ["inbox"]) {
      (action: MailAction, operation: ActionOperation<MailBadge, MailAction>) in
      guard case .received(let id) = action else { return }
      let script = scripts[id]
      script?.started.open()
      await script?.mayRead.wait()
      let count = operation.model(of: "inbox", as: MailCount.self)?.count ?? -1
      script?.hasRead.open()
      await script?.mayChange.wait()
      operation.updateModel { $0.unread = count }
      guard readsTwice else { return }
      script?.changedOnce.open()
      await script?.mayReadAgain.wait()
      let again = operation.model(of: "inbox", as: MailCount.self)?.count ?? -1
      operation.updateModel { $0.unread = again }
    }
    try dispatcher.register(store: inbox)
    try dispatcher.register(store: badge)
    return (dispatcher, inbox, badge)
  }

  /// The lines of a session file, each the JSON object without its hash.
  static func objects(of url: URL) throws -> [String] {
    try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map {
      String($0.dropLast(SessionHash.suffixLength)) + "}"
    }
  }
}

@Suite("Recorded reads of other stores", .timeLimit(.minutes(1)), .watchdog)
struct RecordedReadsTests {
  /// Records the program's interleaving, made certain by a script, to a file; returns it.
  static func recordInterleaving() async throws -> TemporaryFile {
    let file = TemporaryFile()
    let recorder = RecorderMiddleware()
    try await playInterleaving(recordedBy: recorder, attachingTo: file.url)
    return file
  }

  /// Plays the program's interleaving on a new app that `recorder` records (in memory, or to `url`).
  ///
  /// The badge's operation for message 1 reads the inbox after message 2 arrived (2 messages), and changes the badge
  /// after message 3 arrived (3).
  static func playInterleaving(recordedBy recorder: RecorderMiddleware, attachingTo url: URL? = nil) async throws {
    let script = ReadScript()
    let (dispatcher, inbox, badge) = try MailApp.make(scripts: [1: script])
    dispatcher.register(middleware: recorder)
    if let url { try recorder.attach(appendingTo: url, codecs: MailApp.codecs()) }
    let first = dispatcher.start(action: MailAction.received(1), mode: .async)
    await script.started.wait()
    try await dispatcher.dispatch(action: MailAction.received(2), mode: .async)
    script.mayRead.open()
    await script.hasRead.wait()
    try await dispatcher.dispatch(action: MailAction.received(3), mode: .async)
    script.mayChange.open()
    try await first.value
    recorder.flush()
    #expect(inbox.model.count == 3)
    // The first message's badge, filed last, holds what it read: two messages.
    #expect(badge.model.unread == 2)
    let last = try #require(recorder.records.last)
    #expect(last.storeIdentifier == "badge" && last.action as? MailAction == .received(1))
  }

  /// Loads the interleaving's session from `url`, checks it holds its three reads, and verifies it: the badge ends
  /// at the two messages its last record read.
  static func verifyInterleaving(at url: URL) throws {
    let session = try Session.load(from: url, codecs: MailApp.codecs())
    #expect(session.index.reads.values.joined().count == 3)
    let (dispatcher, _, badge) = try MailApp.make()
    try session.verify(against: dispatcher)
    #expect(badge.model.unread == 2)
  }

  @Test(arguments: [Dispatcher.Mode.sync, .async, .serial])
  func aStoreReadWhileOtherDispatchesChangedItVerifies(mode: Dispatcher.Mode) async throws {
    let file = try await Self.recordInterleaving()
    let session = try Session.load(from: file.url, codecs: MailApp.codecs())
    // Each badge operation read the inbox once; the first read the record of message 2.
    let reads = session.index.reads.values.flatMap { $0.map(\.read) }
    #expect(reads.count == 3)
    let inboxRecords = try session.records.filter { $0.storeIdentifier == "inbox" }.map(\.index)
    #expect(reads.allSatisfy { $0.store == "inbox" && inboxRecords.contains($0.index) })
    let firstBadge = try #require(try session.records.last)
    let firstReads = try #require(session.index.reads[firstBadge.transactionID]).map(\.read)
    #expect(firstReads == [RecordedRead(store: "inbox", index: inboxRecords[1])])

    let (dispatcher, inbox, badge) = try MailApp.make()
    try session.verify(against: dispatcher, mode: mode)
    // Left at the last record's models: the re-run read two messages where the live inbox held three.
    #expect(inbox.model.count == 3)
    #expect(badge.model.unread == 2)
  }

  /// The control: the same session without its read lines diverges where the program's did.
  @Test func withoutItsReadsTheSameSessionDiverges() async throws {
    let file = try await Self.recordInterleaving()
    let objects = try MailApp.objects(of: file.url)
    let kept = objects.filter { !$0.contains(#""k":"w""#) }
    #expect(objects.count - kept.count == 3)
    writeSession(kept, to: file.url)
    let session = try Session.load(from: file.url, codecs: MailApp.codecs())
    let (dispatcher, _, _) = try MailApp.make()
    let error = #expect(throws: SessionError.self) { try session.verify(against: dispatcher) }
    guard case .diverged(_, _, let store, _, let differences) = error else {
      Issue.record("not a divergence: \(String(describing: error))")
      return
    }
    #expect(store == "badge")
    #expect(differences.map(\.path) == ["unread"])
    #expect(differences.first?.expected == "2" && differences.first?.actual == "3")
  }

  @Test func anOperationThatReadsAndChangesTwiceGetsEachReadInOrder() async throws {
    let file = TemporaryFile()
    let script = ReadScript()
    let (dispatcher, _, badge) = try MailApp.make(scripts: [1: script], readsTwice: true)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: MailApp.codecs())
    let first = dispatcher.start(action: MailAction.received(1), mode: .async)
    await script.started.wait()
    // Messages 2 and 3 reach the inbox alone: the badge changes only in the first message's operation.
    try await dispatcher.dispatch(action: MailAction.received(2), to: "inbox", mode: .async)
    script.mayRead.open()
    script.mayChange.open()
    await script.changedOnce.wait()
    try await dispatcher.dispatch(action: MailAction.received(3), to: "inbox", mode: .async)
    script.mayReadAgain.open()
    try await first.value
    recorder.flush()
    #expect(badge.model.unread == 3)

    let session = try Session.load(from: file.url, codecs: MailApp.codecs())
    let records = try session.records
    // The inbox's records of messages 2 and 3 fall between the badge's two records.
    #expect(records.map(\.storeIdentifier) == ["inbox", "inbox", "badge", "inbox", "badge"])
    let reads = try #require(session.index.reads[records[2].transactionID]).map(\.read)
    #expect(reads == [RecordedRead(store: "inbox", index: 1), RecordedRead(store: "inbox", index: 3)])
    let (fresh, _, freshBadge) = try MailApp.make(readsTwice: true)
    try session.verify(against: fresh)
    #expect(freshBadge.model.unread == 3)
  }

  @Test func savingCompactingAndResumingKeepTheReads() async throws {
    let file = try await Self.recordInterleaving()
    let session = try Session.load(from: file.url, codecs: MailApp.codecs())
    // Saved again, and compacted before the second record: the reads of the transactions kept stay, in order.
    let saved = TemporaryFile()
    try session.save(to: saved.url)
    let compacted = TemporaryFile()
    try session.compact(before: session.firstIndex + 2, to: compacted.url)
    for url in [saved.url, compacted.url] { try Self.verifyInterleaving(at: url) }
    // Resumed by a recorder, whose history is saved again: the reads go with it.
    let (app, _, _) = try MailApp.make()
    let recorder = RecorderMiddleware()
    app.register(middleware: recorder)
    try recorder.resume(session, in: app)
    let resumed = TemporaryFile()
    try recorder.save(to: resumed.url, codecs: MailApp.codecs())
    try Self.verifyInterleaving(at: resumed.url)
  }

  @Test func aRecorderInMemorySavesItsReads() async throws {
    let recorder = RecorderMiddleware()
    try await Self.playInterleaving(recordedBy: recorder)
    let file = TemporaryFile()
    try recorder.save(to: file.url, codecs: MailApp.codecs())
    try Self.verifyInterleaving(at: file.url)
  }

  /// The index a read names is the record whose model the store holds: found among the records filed since the
  /// store's last read, after the bound dropped the store's last record, and after moves back.
  @Test func readsNameTheStoresCurrentRecordAcrossTheBoundAndMoves() async throws {
    let file = TemporaryFile()
    let (dispatcher, _, badge) = try MailApp.make()
    let recorder = RecorderMiddleware(maxNumberOfRecords: 16)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: MailApp.codecs())
    var expected: [Int] = []
    try await dispatcher.dispatch(action: MailAction.received(1), mode: .async)  // inbox #0, badge #1
    expected.append(0)
    // The badge alone, past the bound: the inbox's record #0 is dropped from memory, and stays what it holds.
    for id in 2...31 {
      try await dispatcher.dispatch(action: MailAction.received(id), to: "badge", mode: .async)
      expected.append(0)
    }
    #expect(try #require(recorder.records.first).index > 0)
    // A move forgets what the reads found: the next read searches again, and finds the dropped record.
    try recorder.undo()
    try await dispatcher.dispatch(action: MailAction.received(32), to: "badge", mode: .async)
    expected.append(0)
    // A message to both: the read names the inbox's new record.
    try await dispatcher.dispatch(action: MailAction.received(33), mode: .async)
    let newest = try #require(recorder.records.last { $0.storeIdentifier == "inbox" }).index
    expected.append(newest)
    // Undone: the inbox is back at record #0's model, and the badge reads that.
    try recorder.undo()
    try await dispatcher.dispatch(action: MailAction.received(34), to: "badge", mode: .async)
    expected.append(0)
    #expect(badge.model.unread == 1)
    recorder.flush()

    let session = try Session.load(from: file.url, codecs: MailApp.codecs())
    // The reads of the transactions in the history, in the order of the file: the two dispatches a later record
    // replaced are not there.
    let transactions = Set(try session.records.map(\.transactionID))
    let kept = session.index.reads.filter { transactions.contains($0.key) }.values.joined()
      .sorted { $0.line.number < $1.line.number }.map(\.read.index)
    let replaced = [expected[30], expected[32]]  // The badge dispatch undone first, and the message to both.
    var survivors = expected
    survivors.remove(at: 32)
    survivors.remove(at: 30)
    #expect(replaced == [0, newest])
    #expect(kept == survivors)
    let (fresh, _, freshBadge) = try MailApp.make()
    try session.verify(against: fresh)
    #expect(freshBadge.model.unread == 1)
    // Saved from memory, where the bound dropped the inbox's record: its reads name the model where the history
    // starts, and the file verifies too.
    let saved = TemporaryFile()
    try recorder.save(to: saved.url, codecs: MailApp.codecs())
    let reloaded = try Session.load(from: saved.url, codecs: MailApp.codecs())
    #expect(reloaded.firstIndex > 0)
    #expect(reloaded.index.reads.values.joined().map(\.read.index).allSatisfy { $0 == 0 })
    // One read for each record kept, every one the badge's.
    let records = try reloaded.records
    #expect(records.allSatisfy { $0.storeIdentifier == "badge" })
    #expect(records.allSatisfy { reloaded.index.reads[$0.transactionID]?.count == 1 })
    let (again, _, againBadge) = try MailApp.make()
    try reloaded.verify(against: again)
    #expect(againBadge.model.unread == 1)
  }

  /// An operation reads a record that an undo then leaves after the cursor, and files its own record in its place.
  ///
  /// The read names a record that is gone: saved from memory as in the appended file, the read is left out, and both
  /// load.
  @Test func aReadOfARecordThatAnUndoDroppedIsLeftOutOfTheSavedFile() async throws {
    let file = TemporaryFile()
    let script = ReadScript()
    let (dispatcher, _, _) = try MailApp.make(scripts: [2: script])
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: MailApp.codecs())
    try await dispatcher.dispatch(action: MailAction.received(1), mode: .async)  // inbox #0, badge #1 (reads #0)
    let second = dispatcher.start(action: MailAction.received(2), mode: .async)  // inbox #2
    await script.started.wait()
    script.mayRead.open()
    await script.hasRead.wait()  // The badge read the inbox as record #2 left it.
    try recorder.undo(byRecord: true)  // Record #2 is after the cursor now.
    #expect(recorder.cursor == 1)
    script.mayChange.open()
    try await second.value  // The badge's record takes position #2, and drops the inbox's.
    recorder.flush()
    #expect(recorder.records.map(\.storeIdentifier) == ["inbox", "badge", "badge"])
    let saved = TemporaryFile()
    try recorder.save(to: saved.url, codecs: MailApp.codecs())
    for url in [file.url, saved.url] {
      let session = try Session.load(from: url, codecs: MailApp.codecs())
      let transactions = Set(try session.records.map(\.transactionID))
      let reads = session.index.reads.filter { transactions.contains($0.key) }.values.joined().map(\.read)
      #expect(reads == [RecordedRead(store: "inbox", index: 0)])
      // The badge counted two messages, and the history has the inbox with one where it read: the re-run reads the
      // inbox's own model, and verify says the two differ.
      let (dispatcher, _, _) = try MailApp.make()
      let error = #expect(throws: SessionError.self) { try session.verify(against: dispatcher) }
      guard case .diverged(2, _, "badge", _, let differences) = error else {
        Issue.record("not the badge's divergence: \(String(describing: error))")
        continue
      }
      #expect(differences.first?.expected == "2" && differences.first?.actual == "1")
    }
  }

  /// Compacting before a read's record keeps the read's line only where verify gives it that record's model: the
  /// store's latest before the cut.
  @Test func compactingLeavesOutAReadOfARecordTheCutFoldsIntoALaterModel() async throws {
    let file = try await Self.recordInterleaving()
    let session = try Session.load(from: file.url, codecs: MailApp.codecs())
    // Records: inbox #0, #1, badge #2 (reads #1), inbox #3, badge #4 (reads #3), badge #5 (the first message's,
    // reads #1).
    #expect(try session.records.map(\.storeIdentifier) == ["inbox", "inbox", "badge", "inbox", "badge", "badge"])
    let compacted = TemporaryFile()
    try session.compact(before: 4, to: compacted.url)
    let reloaded = try Session.load(from: compacted.url, codecs: MailApp.codecs())
    // The snapshot holds the inbox as #3 left it: the read of #1 is left out, the read of #3 kept.
    #expect(reloaded.index.reads.values.joined().map(\.read) == [RecordedRead(store: "inbox", index: 3)])
    // The first message's badge then reads the inbox's own model, three messages, where the app read two: verify
    // reports it (the history no longer holds the model the app read).
    let (dispatcher, _, _) = try MailApp.make()
    let error = #expect(throws: SessionError.self) { try reloaded.verify(against: dispatcher) }
    guard case .diverged(let index, _, "badge", _, let differences) = error else {
      Issue.record("not the badge's divergence: \(String(describing: error))")
      return
    }
    #expect(index == 5 && differences.map(\.path) == ["unread"])
    // Resumed by a recorder and saved: the read of #3, before the history, stays (the recorder takes #3 as the
    // record the inbox's first model comes from).
    let (app, _, _) = try MailApp.make()
    let recorder = RecorderMiddleware()
    app.register(middleware: recorder)
    try recorder.resume(reloaded, in: app)
    let resumed = TemporaryFile()
    try recorder.save(to: resumed.url, codecs: MailApp.codecs())
    let again = try Session.load(from: resumed.url, codecs: MailApp.codecs())
    #expect(again.index.reads.values.joined().map(\.read) == [RecordedRead(store: "inbox", index: 3)])
  }

  /// A recorder whose bound dropped the records before the last two saves the same reads as compacting there: the
  /// read of a record the bound folded into a later model is left out.
  @Test func aBoundedRecorderSavesOnlyTheReadsItsHistoryCanGive() async throws {
    let recorder = RecorderMiddleware(maxNumberOfRecords: 2)
    try await Self.playInterleaving(recordedBy: recorder)
    #expect(recorder.records.map(\.index) == [4, 5])
    let file = TemporaryFile()
    try recorder.save(to: file.url, codecs: MailApp.codecs())
    let session = try Session.load(from: file.url, codecs: MailApp.codecs())
    #expect(session.firstIndex == 4)
    // The first message's badge (#5) read #1, which the inbox's #3 replaced before the history; the third's (#4)
    // read #3, where the history starts.
    #expect(session.index.reads.values.joined().map(\.read) == [RecordedRead(store: "inbox", index: 3)])
  }

  /// The codecs list the badge alone: the header does not list the inbox, so no line names it, and the file loads.
  @Test func aReadOfAStoreTheCodecsLeaveOutWritesNoLine() async throws {
    let file = TemporaryFile()
    let (dispatcher, _, _) = try MailApp.make()
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "badge", model: MailBadge.self, action: MailAction.self)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    try await dispatcher.dispatch(action: MailAction.received(1), to: "badge", mode: .async)
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    let session = try Session.load(from: file.url, codecs: codecs)
    #expect(session.recordCount == 1 && session.index.reads.isEmpty)
  }

  /// A session whose badge read an inbox it never saw dispatched, resumed by a recorder that leaves the inbox out: its
  /// header does not list the inbox, so its save writes no line naming it, and the file loads.
  @Test func aRecorderThatLeavesTheStoreReadOutWritesNoLineNamingIt() async throws {
    let file = TemporaryFile()
    let (dispatcher, _, _) = try MailApp.make()
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: MailApp.codecs())
    try await dispatcher.dispatch(action: MailAction.received(1), to: "badge", mode: .async)
    recorder.flush()
    let session = try Session.load(from: file.url, codecs: MailApp.codecs())
    #expect(session.index.reads.values.joined().map(\.read) == [RecordedRead(store: "inbox", index: -1)])
    var privacy = SessionPrivacy()
    privacy.exclude(storeIdentifier: "inbox")
    let (app, _, _) = try MailApp.make()
    let leavingOut = RecorderMiddleware(privacy: privacy)
    app.register(middleware: leavingOut)
    try leavingOut.resume(session, in: app)
    let saved = TemporaryFile()
    try leavingOut.save(to: saved.url, codecs: MailApp.codecs())
    let reloaded = try Session.load(from: saved.url, codecs: MailApp.codecs())
    #expect(reloaded.recordCount == 1 && reloaded.index.reads.isEmpty)
  }

  /// A store the recorder never saw (no record, no model where the history starts) is read live by the re-run; a
  /// store read as it was before the history's first record is tested by compacting, above.
  @Test func aStoreTheRecorderNeverSawIsReadAsTheFreshStoreHoldsIt() async throws {
    let file = TemporaryFile()
    let (dispatcher, inbox, badge) = try MailApp.make()
    try dispatchSync(dispatcher, MailAction.received(1)).get()
    // Registered after the inbox's message: it has no model of the inbox.
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: MailApp.codecs())
    // The badge alone: it reads an inbox the recorder never saw change.
    try await dispatcher.dispatch(action: MailAction.received(2), to: "badge", mode: .async)
    recorder.flush()
    #expect(inbox.model.count == 1 && badge.model.unread == 1)
    let session = try Session.load(from: file.url, codecs: MailApp.codecs())
    #expect(session.index.reads.values.joined().map(\.read) == [RecordedRead(store: "inbox", index: -1)])
    // The history's snapshot holds no inbox: the re-run reads the fresh store's, given one message here.
    let (fresh, _, freshBadge) = try MailApp.make()
    try dispatchSync(fresh, MailAction.received(9), storeIdentifier: "inbox").get()
    try session.verify(against: fresh)
    #expect(freshBadge.model.unread == 1)
  }

  /// An operation that reads and changes twice loses its second record to an undo and a dispatch: the reads of its
  /// record kept stay, in memory as in the file the recorder appended to, so a save from memory holds what loading
  /// the appended file holds.
  @Test func aTransactionThatLostARecordKeepsTheReadsOfTheRecordsKept() async throws {
    let file = TemporaryFile()
    let script = ReadScript()
    let (dispatcher, _, _) = try MailApp.make(scripts: [1: script], readsTwice: true)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: MailApp.codecs())
    let first = dispatcher.start(action: MailAction.received(1), mode: .async)  // inbox #0
    script.mayRead.open()
    script.mayChange.open()
    await script.changedOnce.wait()  // badge #1, which read #0
    script.mayReadAgain.open()
    try await first.value  // badge #2, which read #0 again
    try recorder.undo(byRecord: true)  // Record #2 is after the cursor.
    try await dispatcher.dispatch(action: MailAction.received(2), to: "inbox", mode: .async)  // inbox #2, in its place
    recorder.flush()
    let saved = TemporaryFile()
    try recorder.save(to: saved.url, codecs: MailApp.codecs())
    var reads: [[RecordedRead]] = []
    for url in [file.url, saved.url] {
      let session = try Session.load(from: url, codecs: MailApp.codecs())
      let records = try session.records
      #expect(records.map(\.storeIdentifier) == ["inbox", "badge", "inbox"])
      reads.append(session.index.reads[records[1].transactionID]?.map(\.read) ?? [])
    }
    #expect(reads[0] == reads[1])
    #expect(reads[0].first == RecordedRead(store: "inbox", index: 0))
  }

  /// A transaction whose only record an undo and a dispatch drop keeps no read, in memory as in the appended file:
  /// verify never re-runs it, and an app that undoes and dispatches again and again does not pile them up.
  @Test func aTransactionThatLostItsOnlyRecordLosesItsReads() async throws {
    let file = TemporaryFile()
    let (dispatcher, _, _) = try MailApp.make()
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: MailApp.codecs())
    try await dispatcher.dispatch(action: MailAction.received(1), mode: .async)  // inbox #0, badge #1 (reads #0)
    let badge = try #require(recorder.records.last).transactionID
    try recorder.undo(byRecord: true)
    try await dispatcher.dispatch(action: MailAction.received(2), to: "inbox", mode: .async)  // inbox #1
    recorder.flush()
    let saved = TemporaryFile()
    try recorder.save(to: saved.url, codecs: MailApp.codecs())
    for url in [file.url, saved.url] {
      let session = try Session.load(from: url, codecs: MailApp.codecs())
      #expect(session.index.reads[badge] == nil)
      #expect(try session.records.map(\.storeIdentifier) == ["inbox", "inbox"])
    }
  }

  /// A recorder resumed with a smaller bound than the session's history: a read of a store whose latest record it
  /// left out names that record, as a recorder that dropped it would, and the history it saves verifies.
  @Test func aRecorderResumedWithASmallerBoundNamesTheRecordItLeftOutInItsReads() async throws {
    var codecs = MailApp.codecs()
    codecs.register(storeIdentifier: "counter", model: Counter.self, action: CounterAction.self)
    let file = TemporaryFile()
    do {
      let (dispatcher, _, _) = try MailApp.make()
      try dispatcher.register(store: makeCounterStore("counter"))
      let recorder = RecorderMiddleware()
      dispatcher.register(middleware: recorder)
      try recorder.attach(appendingTo: file.url, codecs: codecs)
      try await dispatcher.dispatch(action: MailAction.received(1), to: "inbox", mode: .async)  // inbox #0
      for amount in 1...29 { _ = dispatchSync(dispatcher, CounterAction.increase(amount)) }  // counter #1 to #29
      recorder.flush()
    }
    let (dispatcher, _, badge) = try MailApp.make()
    try dispatcher.register(store: makeCounterStore("counter"))
    let recorder = RecorderMiddleware(maxNumberOfRecords: 10)
    dispatcher.register(middleware: recorder)
    try recorder.resume(try Session.load(from: file.url, codecs: codecs), in: dispatcher)
    #expect(try #require(recorder.records.first).index == 20)
    try await dispatcher.dispatch(action: MailAction.received(2), to: "badge", mode: .async)
    #expect(badge.model.unread == 1)
    let saved = TemporaryFile()
    try recorder.save(to: saved.url, codecs: codecs)
    let session = try Session.load(from: saved.url, codecs: codecs)
    let last = try #require(try session.records.last)
    #expect(session.index.reads[last.transactionID]?.map(\.read) == [RecordedRead(store: "inbox", index: 0)])
    let (fresh, _, freshBadge) = try MailApp.make()
    try fresh.register(store: makeCounterStore("counter"))
    try session.verify(against: fresh)
    #expect(freshBadge.model.unread == 1)
  }

  static let header =
    #"{"format":"DispatchStore.session","version":3,"stores":[{"identifier":"badge","model":"DispatchStoreTests.MailBadge","action":"DispatchStoreTests.MailAction"},{"identifier":"inbox","model":"DispatchStoreTests.MailCount","action":"DispatchStoreTests.MailAction"}]}"#

  @Test(arguments: [
    (#"{"k":"w","i":0,"t":5,"s":"badge"}"#, "a record of \"inbox\""),
    (#"{"k":"w","i":1,"t":5,"s":"inbox"}"#, "position 1 is outside the history"),
    (#"{"k":"w","i":-2,"t":5,"s":"inbox"}"#, "position -2 is outside the history"),
    (#"{"k":"w","i":0,"t":5,"s":"outbox"}"#, "outbox"),
    (#"{"k":"w","i":0,"s":"inbox"}"#, "missing field \"t\""),
    (#"{"k":"w","t":5,"s":"inbox"}"#, "\"i\""),
  ])
  func aReadLineThatNoRecorderWritesIsRefused(line: String, reason: String) throws {
    let file = TemporaryFile()
    let record = #"{"k":"r","i":0,"t":5,"s":"inbox","a":{"received":{"_0":1}},"m":{"count":1}}"#
    writeSession([Self.header, record, line], to: file.url)
    do {
      _ = try Session.load(from: file.url, codecs: MailApp.codecs())
      Issue.record("loaded \(line)")
    } catch {
      #expect("\(error)".contains(reason), "\(error)")
    }
  }
}
