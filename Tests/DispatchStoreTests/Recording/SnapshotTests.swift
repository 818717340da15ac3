import Foundation
import Testing

@testable import DispatchStore

/// How many `Tracked` models were decoded, per test (each test uses its own counter through its own store name).
let trackedDecodes = Locked<[String: Int]>([:])

/// A counter whose decoding is counted, to see how much of a session a restore reads.
struct Tracked: ModelType, Codable, Equatable {
  var count = 0
  var tag = ""

  init() {}

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    count = try container.decode(Int.self, forKey: .count)
    tag = try container.decode(String.self, forKey: .tag)
    trackedDecodes.withLock { $0[tag, default: 0] += 1 }
  }
}

final class TrackedReducer: SynchronousReducer<Tracked, CounterAction>, @unchecked Sendable {
  let tag: String

  init(tag: String) {
    self.tag = tag
  }

  override func reduce(_ action: CounterAction, into model: inout Tracked) throws {
    model.tag = tag
    if case .increase(let amount) = action { model.count += amount }
  }
}

func trackedCodecs() -> SessionCodecs {
  var codecs = SessionCodecs()
  codecs.register(storeIdentifier: "tracked", model: Tracked.self, action: CounterAction.self)
  return codecs
}

/// A dispatcher with one tracked store, recorded to `file`; `snapshotAfter` takes a snapshot after those records.
func recordTracked(
  _ count: Int, tag: String, snapshotAfter: Int?, to file: TemporaryFile
) throws -> (Dispatcher, Store<Tracked, CounterAction>, RecorderMiddleware) {
  let dispatcher = Dispatcher()
  let store = Store(identifier: "tracked", model: Tracked(), reducer: TrackedReducer(tag: tag))
  try dispatcher.register(store: store)
  let recorder = RecorderMiddleware(maxNumberOfRecords: 100_000)
  dispatcher.register(middleware: recorder)
  try recorder.attach(appendingTo: file.url, codecs: trackedCodecs())
  for step in 1...count {
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    if step == snapshotAfter { recorder.snapshot() }
  }
  recorder.flush()
  return (dispatcher, store, recorder)
}

func freshTracked(tag: String) throws -> (Dispatcher, Store<Tracked, CounterAction>, RecorderMiddleware) {
  let dispatcher = Dispatcher()
  let store = Store(identifier: "tracked", model: Tracked(), reducer: TrackedReducer(tag: tag))
  try dispatcher.register(store: store)
  let recorder = RecorderMiddleware()
  dispatcher.register(middleware: recorder)
  return (dispatcher, store, recorder)
}

@Suite("Snapshots and compaction", .timeLimit(.minutes(1)), .watchdog)
struct SnapshotTests {
  /// Snapshots taken before and after an undo are saved each at its place, and the saved file loads again.
  ///
  /// The one taken after the undo is at an earlier position than the one before it. The saved file loads, restores
  /// and verifies (a hostile-input hunt found "position 1 is outside the history"). A record that then replaces the
  /// undone one drops the later snapshot, which held the undone history.
  @Test func snapshotsTakenAfterAnUndoAreSavedWhereTheyBelong() throws {
    let file = TemporaryFile()
    let (dispatcher, store, recorder) = try recordTracked(2, tag: "undoneSnapshots", snapshotAfter: 2, to: file)
    _ = try recorder.undo()
    recorder.snapshot()
    recorder.flush()
    for replaced in [false, true] {
      if replaced {
        #expect(dispatchSync(dispatcher, CounterAction.increase(5)).isSuccess)
        recorder.flush()
      }
      let session = try Session.load(from: file.url, codecs: trackedCodecs())
      #expect(session.snapshotIndices == session.snapshotIndices.sorted())
      #expect(session.snapshotIndices.contains(2) == !replaced, "\(session.snapshotIndices)")
      let saved = TemporaryFile()
      try session.save(to: saved.url)
      let reloaded = try Session.load(from: saved.url, codecs: trackedCodecs())
      #expect(reloaded.cursor == session.cursor && reloaded.recordCount == session.recordCount)
      #expect(try reloaded.records.map { $0.model as? Tracked } == session.records.map { $0.model as? Tracked })
      let restoring = Dispatcher()
      let restored = Store(identifier: "tracked", model: Tracked(), reducer: TrackedReducer(tag: "undoneSnapshots"))
      try restoring.register(store: restored)
      try reloaded.restore(into: restoring)
      #expect(restored.model == store.model)
      let verifying = Dispatcher()
      try verifying.register(
        store: Store(identifier: "tracked", model: Tracked(), reducer: TrackedReducer(tag: "undoneSnapshots")))
      try reloaded.verify(against: verifying)
    }
  }

  @Test func restoringFromASnapshotDecodesOnlyTheRecordsAfterIt() throws {
    let withSnapshot = TemporaryFile()
    _ = try recordTracked(1_000, tag: "snap", snapshotAfter: 990, to: withSnapshot)
    let without = TemporaryFile()
    _ = try recordTracked(1_000, tag: "full", snapshotAfter: nil, to: without)
    trackedDecodes.withLock { $0 = [:] }

    let (dispatcher, store, _) = try freshTracked(tag: "snap")
    try Session.load(from: withSnapshot.url, codecs: trackedCodecs()).restore(into: dispatcher)
    #expect(store.model.count == 1_000)
    // The snapshot, then the last record; nothing before the snapshot.
    #expect(trackedDecodes.withLock { $0["snap"] ?? 0 } <= 11)

    let (other, otherStore, _) = try freshTracked(tag: "full")
    try Session.load(from: without.url, codecs: trackedCodecs()).restore(into: other)
    #expect(otherStore.model.count == 1_000)
    #expect(trackedDecodes.withLock { $0["full"] ?? 0 } <= 2)  // The last record alone holds the model.
  }

  /// A store that a snapshot among the records a resumed recorder keeps introduced, and that no record names, is
  /// kept: a save then writes it, and the saved file restores it as the session does (helper-57).
  @Test func aResumedRecorderKeepsAStoreThatOnlyASnapshotIntroduced() throws {
    let lines = try HostileSessionLinesTests.objects([
      .snapshot(index: 0, models: ["counter": Counter(count: 0)], actions: [:]),
      HostileSessionLinesTests.record(0, count: 1), HostileSessionLinesTests.record(1, count: 2),
      .snapshot(index: 2, models: ["text": Text(value: "t")], actions: [:]),
      HostileSessionLinesTests.record(2, count: 3),
    ])
    let file = TemporaryFile()
    writeSession(lines, to: file.url)
    let session = try Session.load(from: file.url, codecs: appCodecs())
    let dispatcher = Dispatcher()
    let counter = makeCounterStore("counter")
    let text = Store(identifier: "text", model: Text(), reducer: TextReducer())
    try dispatcher.register(store: counter)
    try dispatcher.register(store: text)
    let recorder = RecorderMiddleware(maxNumberOfRecords: 2)
    dispatcher.register(middleware: recorder)
    try recorder.resume(session, in: dispatcher)
    #expect(counter.model.count == 3)
    #expect(text.model.value == "t")
    let saved = TemporaryFile()
    try recorder.save(to: saved.url, codecs: appCodecs())
    let app = RecordedApp()
    try Session.load(from: saved.url, codecs: appCodecs()).restore(into: app.dispatcher)
    #expect(app.counter.model.count == 3)
    #expect(app.text.model.value == "t")
  }

  /// Records undone after the cursor are not folded into the snapshot: that would move the cursor, and the compacted
  /// file would restore other models than the session (helper-57).
  @Test func compactingPastOneAfterTheCursorIsRefusedAndLeavesTheFile() throws {
    let file = TemporaryFile()
    let (recording, _, recorder) = try recordTracked(10, tag: "undone", snapshotAfter: nil, to: file)
    try withExtendedLifetime(recording) {
      try recorder.undo()
      try recorder.undo()
      recorder.flush()
    }
    let session = try Session.load(from: file.url, codecs: trackedCodecs())
    #expect(session.cursor == 7)
    let target = TemporaryFile()
    #expect(throws: SessionError.invalidIndex(9, line: 0)) { try session.compact(before: 9, to: target.url) }
    #expect(!FileManager.default.fileExists(atPath: target.url.path))
    // One after the cursor keeps the undone records, and the models restore gives.
    try session.compact(before: 8, to: target.url)
    let compacted = try Session.load(from: target.url, codecs: trackedCodecs())
    #expect(compacted.cursor == 7)
    #expect(compacted.recordCount == 2)
    let (dispatcher, store, _) = try freshTracked(tag: "undone")
    try compacted.restore(into: dispatcher)
    #expect(store.model.count == 8)
  }

  @Test func aCompactedSessionRestoresVerifiesAndUndoesWithinWhatIsKept() throws {
    let file = TemporaryFile()
    let (_, original, _) = try recordTracked(10, tag: "compact", snapshotAfter: nil, to: file)
    let session = try Session.load(from: file.url, codecs: trackedCodecs())
    let compacted = TemporaryFile()
    try session.compact(before: 6, to: compacted.url)
    #expect(compacted.data.count < file.data.count)

    let kept = try Session.load(from: compacted.url, codecs: trackedCodecs())
    #expect(kept.firstIndex == 6)
    #expect(kept.recordCount == 4)
    #expect(kept.cursor == 9)

    let (dispatcher, store, recorder) = try freshTracked(tag: "compact")
    try recorder.resume(kept, in: dispatcher)
    #expect(store.model == original.model)
    try recorder.undo()
    #expect(store.model.count == 9)
    while (try? recorder.undo()) != nil {}
    #expect(recorder.cursor == 5)
    #expect(store.model.count == 6)  // The snapshot: the models after record 5.
    #expect(throws: SessionError.atStartOfHistory) { try recorder.undo() }

    // Verifying starts from the snapshot's models.
    let (verifying, verified, _) = try freshTracked(tag: "compact")
    try kept.verify(against: verifying)
    #expect(verified.model == original.model)
  }

  /// A saved history whose oldest records the bound hides, but has not dropped yet, starts from the models after
  /// them: it restores and verifies.
  @Test func aSavedHistoryStartsAfterTheRecordsTheBoundHides() throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "tracked", model: Tracked(), reducer: TrackedReducer(tag: "bound"))
    try dispatcher.register(store: store)
    // A bound of 100 drops hidden records 6 at a time: 103 records leave 3 hidden.
    let recorder = RecorderMiddleware(maxNumberOfRecords: 100)
    dispatcher.register(middleware: recorder)
    for _ in 0..<103 { #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess) }
    #expect(recorder.records.first?.index == 3)
    let file = TemporaryFile()
    try recorder.save(to: file.url, codecs: trackedCodecs())
    let session = try Session.load(from: file.url, codecs: trackedCodecs())
    let (restoring, restored, _) = try freshTracked(tag: "bound")
    try session.restore(into: restoring)
    #expect(restored.model == store.model)
    let (verifying, verified, _) = try freshTracked(tag: "bound")
    try session.verify(against: verifying)
    #expect(verified.model == store.model)
  }
}
