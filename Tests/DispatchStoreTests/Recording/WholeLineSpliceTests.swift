import Foundation
import Testing

@testable import DispatchStore

struct SpliceTask: Codable, Equatable, Identifiable, Sendable {
  var id: Int
  var title: String
  var done = false
}

struct SpliceBoard: ModelType, Codable, Equatable {
  var tasks = IdentifiedList((0..<40).map { SpliceTask(id: $0, title: "Task \($0)") })
  var edits = 0
}

enum SpliceAction: ActionType, Codable, Equatable {
  case toggle(Int)
  case rename(Int, String)
  case add(Int)
  case moveToFront(Int)
}

/// Verify checks a line that holds a store's lists whole by its bytes against the lines before it
/// (``WholeLineSplice``), and falls back to encoding the lists when it cannot: either way it finds what differs.
///
/// Five minutes, as the other suites off the pool: a test's limit counts its wait for one of the two threads they
/// share, which a CI run found taken for three minutes by `ListFormsSessionTests`' random sessions.
@Suite("Lines of whole lists checked by their bytes", .timeLimit(.minutes(5)), .watchdog, .offThePool)
struct WholeLineSpliceTests {
  static func reduce(_ action: SpliceAction, _ model: inout SpliceBoard) {
    model.edits += 1
    switch action {
    case .toggle(let id): model.tasks[id: id]?.done.toggle()
    case .rename(let id, let title): model.tasks[id: id]?.title = title
    case .add(let id): model.tasks.append(SpliceTask(id: id, title: "Added \(id)"))
    case .moveToFront(let id):
      if let index = model.tasks.index(id: id) { model.tasks.move(fromOffsets: [index], toOffset: 0) }
    }
  }

  static func makeStore(_ identifier: String) -> Store<SpliceBoard, SpliceAction> {
    Store(identifier: identifier, model: SpliceBoard()) { (action: SpliceAction, model: inout SpliceBoard) in
      reduce(action, &model)
    }
  }

  static var codecs: SessionCodecs {
    var codecs = SessionCodecs()
    for identifier in ["board", "other"] {
      codecs.register(storeIdentifier: identifier, model: SpliceBoard.self, action: SpliceAction.self)
    }
    return codecs
  }

  /// Records `actions(step)` for `count` steps, alternating between two stores when `twoStores`, to a file.
  static func record(
    count: Int, twoStores: Bool = false, _ actions: (Int) -> SpliceAction
  ) throws -> TemporaryFile {
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    for identifier in ["board", "other"] { try dispatcher.register(store: makeStore(identifier)) }
    let recorder = RecorderMiddleware(maxNumberOfRecords: 10)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    for step in 0..<count {
      try dispatcher.dispatchSync(action: actions(step), to: twoStores && step % 2 == 1 ? "other" : "board")
    }
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    return file
  }

  static func verify(_ url: URL) throws -> Session.VerifyCounts {
    let session = try Session.load(from: url, codecs: codecs)
    let verifying = Dispatcher()
    for identifier in ["board", "other"] { try verifying.register(store: makeStore(identifier)) }
    var counts = Session.VerifyCounts()
    try session.verify(against: verifying, mode: .sync, counts: &counts)
    return counts
  }

  /// The record and fields verifying `url` names as diverged; `nil`, recorded as an issue, if it throws no divergence.
  static func divergence(verifying url: URL) -> (index: Int, differences: [FieldDifference])? {
    let error = #expect(throws: SessionError.self) { try verify(url) }
    guard case .diverged(let index, _, _, _, let differences) = error else {
      Issue.record("expected a divergence, got \(String(describing: error))")
      return nil
    }
    return (index, differences)
  }

  /// The record indices of the lines that hold their lists whole, after each store's first.
  static func laterWholeLines(in url: URL) throws -> [Int] {
    var stores: Set<Substring> = []
    return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").compactMap { line -> Int? in
      guard line.contains(#""k":"r""#), line.contains(#""~all""#), let index = recordIndex(of: line),
        let store = line.range(of: #""s":""#).map({ line[$0.upperBound...].prefix { $0 != "\"" } })
      else { return nil }
      return stores.insert(store).inserted ? nil : index
    }
  }

  static func recordIndex(of line: Substring) -> Int? {
    guard let start = line.range(of: #""i":"#)?.upperBound else { return nil }
    return Int(line[start...].prefix { $0.isNumber })
  }

  /// Replaces the first occurrence of `old` with `new` in record line `index`, the hashes chained again.
  static func forge(_ file: TemporaryFile, record index: Int, replacing old: String, with new: String) throws {
    var objects = file.lines.map(ListFormsTests.object)
    let position = try #require(objects.firstIndex { $0.contains(#""k":"r""#) && recordIndex(of: $0[...]) == index })
    let range = try #require(objects[position].range(of: old))
    objects[position].replaceSubrange(range, with: new)
    writeSession(objects, to: file.url)
  }

  /// Records per store: one line of whole lists after the first (two outside a sanitizer, which runs ten times slower).
  static let perStore = isSanitized ? 1_100 : 2_300
  static let laterWholeLinesPerStore = isSanitized ? 1 : 2

  @Test func togglesAndRenamesCheckEveryLaterWholeLineByItsBytes() throws {
    let file = try Self.record(count: Self.perStore) { step in
      step % 3 == 0 ? .rename(step * 7 % 40, "Renamed \(step)") : .toggle(step * 13 % 40)
    }
    let wholeLines = try Self.laterWholeLines(in: file.url)
    #expect(wholeLines.count == Self.laterWholeLinesPerStore)
    let counts = try Self.verify(file.url)
    #expect(counts.spliced == wholeLines.count)
    #expect(counts.byBytes == Self.perStore)
    #expect(counts.decoded == 0)
  }

  @Test func twoStoresInterleavedEachCheckTheirOwnWholeLines() throws {
    let file = try Self.record(count: 2 * Self.perStore, twoStores: true) { .toggle($0 * 11 % 40) }
    let wholeLines = try Self.laterWholeLines(in: file.url)
    #expect(wholeLines.count == 2 * Self.laterWholeLinesPerStore)
    let counts = try Self.verify(file.url)
    #expect(counts.spliced == wholeLines.count)
    #expect(counts.decoded == 0)
  }

  @Test func linesThatAddOrMoveElementsAreComparedByEncodingTheLists() throws {
    let file = try Self.record(count: Self.perStore) { step in
      switch step % 50 {
      case 7: .add(100 + step)
      case 31: .moveToFront(step % 40)
      default: .toggle(step * 13 % 40)
      }
    }
    #expect(try Self.laterWholeLines(in: file.url).count == Self.laterWholeLinesPerStore)
    let counts = try Self.verify(file.url)
    #expect(counts.spliced == 0)
    #expect(counts.byBytes == Self.perStore)
  }

  /// A whole line whose element differs from what the lines before it make: verify names the field.
  @Test func aWholeLineWithAChangedElementDiverges() throws {
    let file = try Self.record(count: 1_200) { .toggle($0 * 13 % 40) }
    let whole = try #require(try Self.laterWholeLines(in: file.url).first)
    try Self.forge(file, record: whole, replacing: #""title":"Task 5""#, with: #""title":"Task 6""#)
    guard let (index, differences) = Self.divergence(verifying: file.url) else { return }
    #expect(index == whole)
    #expect(differences.contains { $0.path.contains("title") })
  }

  /// A whole line whose ids are in another order than the lines before it leave them: verify finds it.
  @Test func aWholeLineWithItsIdsReorderedDiverges() throws {
    let file = try Self.record(count: 1_200) { .toggle($0 * 13 % 40) }
    let whole = try #require(try Self.laterWholeLines(in: file.url).first)
    try Self.forge(file, record: whole, replacing: #""~ids":[0,1,"#, with: #""~ids":[1,0,"#)
    #expect(throws: SessionError.self) { try Self.verify(file.url) }
  }

  /// A change line spelt otherwise (its element's keys in another order) decodes to the same model: the whole line
  /// after it, written as the writer writes, is then compared by encoding the lists, and verify passes.
  @Test func aChangeLineSpeltOtherwiseLeavesTheWholeLineToTheEncoder() throws {
    // The whole line after records 1 to 1,000 is record 1,001; element 5 changes last in record 1,000.
    let file = try Self.record(count: 1_200) { $0 == 1_000 ? .toggle(5) : .toggle(6) }
    #expect(try Self.laterWholeLines(in: file.url) == [1_001])
    try Self.forge(
      file, record: 1_000, replacing: #"{"done":true,"id":5,"title":"Task 5"}"#,
      with: #"{"id":5,"done":true,"title":"Task 5"}"#)
    let counts = try Self.verify(file.url)
    #expect(counts.decoded == 1)
    #expect(counts.spliced == 0)
    #expect(counts.byBytes == 1_199)
  }

  /// A change line forged together with the whole line after it, so that the two agree by their bytes: the whole
  /// line passes its check, and verify names the change line, the first that differs from its re-run.
  @Test func aForgedChangeLineIsNamedEvenWhenTheWholeLineAfterItAgreesWithIt() throws {
    let file = try Self.record(count: 1_200) { $0 == 1_000 ? .toggle(5) : .toggle(6) }
    #expect(try Self.laterWholeLines(in: file.url) == [1_001])
    let forged = #"{"done":true,"id":5,"title":"Forged"}"#
    try Self.forge(file, record: 1_000, replacing: #"{"done":true,"id":5,"title":"Task 5"}"#, with: forged)
    try Self.forge(file, record: 1_001, replacing: #"{"done":true,"id":5,"title":"Task 5"}"#, with: forged)
    guard let (index, differences) = Self.divergence(verifying: file.url) else { return }
    #expect(index == 1_000)
    #expect(differences.contains { $0.path.contains("title") })
  }

  /// A whole line that passes only decoded (an element's keys in another order) is no base for the next one's check.
  ///
  /// The reader's lists may not be its bytes': the next whole line is compared by encoding the lists.
  @Test func aWholeLineThatPassesOnlyDecodedIsNoBase() throws {
    let file = try Self.record(count: 2_100) { $0 == 1_500 ? .toggle(5) : .toggle(6) }
    #expect(try Self.laterWholeLines(in: file.url) == [1_001, 2_002])
    try Self.forge(
      file, record: 1_001, replacing: #"{"done":false,"id":5,"title":"Task 5"}"#,
      with: #"{"id":5,"done":false,"title":"Task 5"}"#)
    let counts = try Self.verify(file.url)
    #expect(counts.decoded == 1)
    #expect(counts.spliced == 0)
    #expect(counts.byBytes == 2_099)
  }
}
