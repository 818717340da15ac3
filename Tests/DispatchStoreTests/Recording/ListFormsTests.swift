import Foundation
import Testing

@testable import DispatchStore

/// Format 3's list forms: a record line holds an `IdentifiedList` as the changes from the store's previous record
/// line, and everything a session does still works from them (proposal 0017, step 3), at 10,000 products.
@Suite(
  "List forms", .timeLimit(.minutes(5)), .watchdog, .offThePool,
  .disabled(
    if: isSanitized,
    "one thread and the writer's; under a sanitizer its load starved the all-or-nothing suite"))
struct ListFormsTests {
  typealias Product = LargeModelRecordingTests.Product
  typealias Catalog = LargeModelRecordingTests.Catalog
  typealias CatalogAction = LargeModelRecordingTests.CatalogAction

  /// 10,000 products; 1,000 under a sanitizer, where these single-threaded tests are several times slower.
  static let count = isSanitized ? 1_000 : 10_000

  /// A recorded catalog of `count` products, writing to `file`.
  struct RecordedCatalog {
    let dispatcher = Dispatcher()
    let store: Store<Catalog, CatalogAction>
    let recorder = RecorderMiddleware(maxNumberOfRecords: 100_000)

    init(file: TemporaryFile, count: Int = ListFormsTests.count) throws {
      store = LargeModelRecordingTests.makeStore(count: count)
      try dispatcher.register(store: store)
      dispatcher.register(middleware: recorder)
      try recorder.attach(appendingTo: file.url, codecs: LargeModelRecordingTests.codecs)
    }

    func send(_ action: CatalogAction) throws {
      try dispatcher.dispatchSync(action: action)
    }
  }

  /// The line as an object without its hash, to change and chain again with `writeSession`.
  static func object(_ line: String) -> String {
    String(line.dropLast(SessionHash.suffixLength)) + "}"
  }

  @Test func aOneElementChangeOfATenThousandElementListIsASmallLineNamingItsBase() throws {
    let file = TemporaryFile()
    let app = try RecordedCatalog(file: file)
    try app.send(.restock(id: 1, amount: 1))
    let middle = Self.count / 2
    try app.send(.restock(id: middle, amount: 2))
    try app.send(.add(id: 20_000))
    try app.send(.discontinue(id: 7))
    app.recorder.flush()
    #expect(app.recorder.persistenceError == nil)

    // The header, the store's first model (a snapshot: the list as a plain array), then the records.
    let lines = file.lines
    try #require(lines.count == 6)
    #expect(lines[1].hasPrefix(#"{"k":"s","i":0,"m":{"catalog":{"edits":0,"products":[{"id":0,"#))
    // The first record holds the list whole, with its ids; the others, its changes from the record before.
    #expect(lines[2].contains(#""products":{"~all":[{"id":0,"#))
    #expect(lines[2].contains(#"}],"~ids":[0,1,2,"#))
    #expect(lines[2].contains(#""l":[["products"]]"#))
    #expect(!lines[2].contains(#""z":"#))
    for (offset, line) in lines[3...].enumerated() {
      #expect(line.utf8.count < 2_048, "\(line.utf8.count) bytes: \(line.prefix(300))")
      #expect(line.contains(#""s":"catalog","z":\#(offset),"a":"#))
      #expect(line.contains(#""l":[["products"]]"#))
    }
    #expect(
      lines[3].contains(#""products":{"~set":[[\#(middle),{"id":\#(middle),"name":"Product \#(middle)","stock":2}]]}"#))
    #expect(lines[4].contains(#""~order":[[\#(Self.count),0,[20000]]],"~set":[[20000,{"id":20000,"#))
    #expect(lines[5].contains(#""products":{"~order":[[7,1,[]]],"~remove":[7]}"#))
  }

  /// Every way of reading a record gives the model its transaction made: all records at once, one record at a time
  /// in any order (each decodes the lines its changes rest on), restore, verify, and saving again.
  ///
  /// The products are added at either end, moved to the front, removed, renamed and restocked.
  @Test func recordsWrittenAsChangesReadBackExactlyEveryWay() throws {
    let file = TemporaryFile()
    let app = try RecordedCatalog(file: file)
    var random = SplitMix(seed: 27)
    var live = Array(0..<Self.count)
    var next = 20_000
    for step in 0..<60 {
      let id = live[Int.random(in: 0..<live.count, using: &random)]
      switch Int.random(in: 0..<8, using: &random) {
      case 0:
        try app.send(.add(id: next))
        live.append(next)
        next += 1
      case 1:
        try app.send(.discontinue(id: id))
        live.removeAll { $0 == id }
      case 2:
        try app.send(.rename(id: id, name: "Renamed \(step) \"ü\" \\"))
      case 4:
        try app.send(.feature(id: id))
      case 5:
        try app.send(.addFirst(id: next))
        live.append(next)
        next += 1
      default:
        try app.send(.restock(id: id, amount: step))
      }
      if step % 17 == 16 {
        // Moving back and dispatching again drops records; the next record's lists are written whole.
        try app.recorder.undo()
        try app.recorder.undo()
      }
    }
    app.recorder.flush()
    #expect(app.recorder.persistenceError == nil)
    let recorded = app.recorder.records
    let final = app.store.model

    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    #expect(session.recordCount == recorded.count)
    var order = Array(recorded.indices)
    order.shuffle(using: &random)
    for offset in order {
      let record = try session.record(at: recorded[offset].index)
      #expect(record.model as? Catalog == recorded[offset].model as? Catalog, "record \(recorded[offset].index)")
    }
    let all = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs).records
    #expect(all.map { $0.model as? Catalog } == recorded.map { $0.model as? Catalog })

    let reductions = Locked(0)
    let restoring = Dispatcher()
    let restored = LargeModelRecordingTests.makeStore(count: Self.count, reductions: reductions)
    try restoring.register(store: restored)
    try session.restore(into: restoring)
    #expect(restored.model == final)
    #expect(reductions.withLock { $0 } == 0)

    let verifying = Dispatcher()
    try verifying.register(store: LargeModelRecordingTests.makeStore(count: Self.count, reductions: reductions))
    try session.verify(against: verifying)

    let saved = TemporaryFile()
    try session.save(to: saved.url)
    let reloaded = try Session.load(from: saved.url, codecs: LargeModelRecordingTests.codecs)
    #expect(reloaded.formatVersion == 3)
    #expect(try reloaded.records.map { $0.model as? Catalog } == recorded.map { $0.model as? Catalog })
    #expect(saved.lines.dropFirst(3).allSatisfy { $0.utf8.count < 2_048 })
  }

  @Test func verifyNamesTheFieldOfTheElementThatDiverged() throws {
    let file = TemporaryFile()
    let app = try RecordedCatalog(file: file)
    for id in [3, 9, 400] { try app.send(.restock(id: id, amount: 5)) }
    app.recorder.flush()
    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)

    let verifying = Dispatcher()
    let initial = LargeModelRecordingTests.initial(count: Self.count)
    let changed = Store<Catalog, CatalogAction>(identifier: "catalog", model: initial) { action, model in
      model.edits += 1
      if case .restock(let id, let amount) = action {
        model.products[id: id]?.stock += id == 400 ? amount + 1 : amount
      }
    }
    try verifying.register(store: changed)
    #expect {
      try session.verify(against: verifying)
    } throws: { error in
      guard case .diverged(let index, _, _, _, let differences) = error as? SessionError else { return false }
      return index == 2 && differences.map(\.path) == ["products[400].stock"]
    }
  }

  @Test func aLineWhoseChangesDoNotRestOnTheStoresPreviousRecordIsACorruptLine() throws {
    let file = TemporaryFile()
    let app = try RecordedCatalog(file: file, count: 100)
    for id in [3, 9, 40, 41] { try app.send(.restock(id: id, amount: 5)) }
    app.recorder.flush()
    let objects = file.lines.map(Self.object)
    #expect(objects[4].contains(#""z":1,"#))

    // A base that is not the store's previous record line: refused when the file loads.
    var edited = objects
    edited[4] = edited[4].replacingOccurrences(of: #""z":1,"#, with: #""z":0,"#)
    writeSession(edited, to: file.url)
    #expect {
      try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    } throws: { error in
      guard case .corruptLine(let line, _) = error as? SessionError else { return false }
      return line == 5
    }

    // Changes that do not fit their base (an id removed that is not there): refused when the record is decoded,
    // naming the line; the records before it still read.
    edited = objects
    edited[5] = edited[5].replacingOccurrences(of: #""~set":"#, with: #""~remove":[12345],"~set":"#)
    writeSession(edited, to: file.url)
    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    #expect(try session.record(at: 2).index == 2)
    #expect {
      try session.record(at: 3)
    } throws: { error in
      guard case .corruptLine(let line, _) = error as? SessionError else { return false }
      return line == 6
    }
    #expect(throws: SessionError.self) { try session.records }
    #expect(throws: SessionError.self) { try session.restore(into: Dispatcher()) }
  }

  /// A process that dies mid-write leaves a file whose complete lines load; restore reaches the last whole record.
  @Test func aFileCutMidLineLoadsItsCompleteRecordsAndRestoresTheLast() throws {
    let file = TemporaryFile()
    let app = try RecordedCatalog(file: file)
    var models: [Catalog] = []
    for id in 0..<6 {
      try app.send(.restock(id: id * Self.count / 10, amount: id + 1))
      models.append(app.store.model)
    }
    app.recorder.flush()
    let whole = file.data
    let lastLineStart = whole.dropLast().lastIndex(of: UInt8(ascii: "\n"))! + 1
    for cut in [lastLineStart + 1, lastLineStart + 40, whole.count - 2] {
      file.write(String(decoding: whole.prefix(cut), as: UTF8.self))
      let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
      #expect(session.truncatedLine == 8)
      #expect(session.recordCount == 5)
      let restoring = Dispatcher()
      let restored = LargeModelRecordingTests.makeStore(count: Self.count)
      try restoring.register(store: restored)
      try session.restore(into: restoring)
      #expect(restored.model == models[4])
    }
  }

  /// Version 2 files load, restore and verify; a recorder appends version 2 lines to them (lists as plain arrays),
  /// so that the file stays readable by the release that wrote it.
  @Test func aVersionTwoFileLoadsAndARecorderAppendsVersionTwoLinesToIt() throws {
    let file = TemporaryFile()
    var encoder = SessionFormat.Encoder(codecs: LargeModelRecordingTests.codecs)
    encoder.writesListForms = false
    var objects = [Self.object(String(decoding: try encoder.header().dropLast(), as: UTF8.self))]
    objects[0] = objects[0].replacingOccurrences(of: #""version":3"#, with: #""version":2"#)
    let store = LargeModelRecordingTests.makeStore(count: 50)
    let dispatcher = Dispatcher()
    try dispatcher.register(store: store)
    for (index, id) in [4, 8].enumerated() {
      try dispatcher.dispatchSync(action: CatalogAction.restock(id: id, amount: 1))
      let transaction = TransactionID.next()
      let line = try encoder.encode(
        .record(
          Record(
            index: index, dispatchID: transaction, transactionID: transaction, storeIdentifier: "catalog",
            action: CatalogAction.restock(id: id, amount: 1), model: store.model)))
      objects.append(Self.object(String(decoding: line.dropLast(), as: UTF8.self)))
    }
    writeSession(objects, to: file.url)
    #expect(!file.lines.joined().contains("~"))

    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    #expect(session.formatVersion == 2)
    #expect(try session.records.last?.model as? Catalog == store.model)
    let verifying = Dispatcher()
    try verifying.register(store: LargeModelRecordingTests.makeStore(count: 50))
    try session.verify(against: verifying)
    _ = try SessionInspector.page(forSessionAt: file.url)

    let recorder = RecorderMiddleware()
    try recorder.resume(session, in: dispatcher)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: LargeModelRecordingTests.codecs)
    try dispatcher.dispatchSync(action: CatalogAction.restock(id: 9, amount: 1))
    try dispatcher.dispatchSync(action: CatalogAction.restock(id: 10, amount: 1))
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    #expect(file.lines.count == 5)
    #expect(!file.lines.joined().contains("~"))
    let appended = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    #expect(appended.formatVersion == 2)
    #expect(try appended.records.last?.model as? Catalog == store.model)
  }

  struct Loose: Identifiable, Codable, Sendable, Equatable {
    let id: Int
    var title: String
    /// Equal by id alone, as some apps define it: the session must still record a changed title.
    static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id }
  }

  /// A model that encodes itself as its list: the list's path is the model's own, empty.
  struct Shelf: ModelType, Codable, Equatable {
    var items: IdentifiedList<Loose>
    init(items: IdentifiedList<Loose>) { self.items = items }
    init(from decoder: any Decoder) throws { items = try decoder.singleValueContainer().decode(IdentifiedList.self) }
    func encode(to encoder: any Encoder) throws {
      var container = encoder.singleValueContainer()
      try container.encode(items)
    }
    static func == (lhs: Self, rhs: Self) -> Bool {
      lhs.items.map { [$0.id: $0.title] } == rhs.items.map { [$0.id: $0.title] }
    }
  }

  enum ShelfAction: ActionType, Codable {
    case retitle(id: Int, title: String)
    case add(id: Int)
  }

  /// Changes are found by the elements' stored bytes, not their `==`, and a list may be the whole model.
  @Test func aChangeThatEqualityIgnoresIsRecordedAndAListMayBeTheModel() throws {
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    let store = Store<Shelf, ShelfAction>(
      identifier: "shelf", model: Shelf(items: IdentifiedList((0..<100).map { Loose(id: $0, title: "Item \($0)") }))
    ) { action, model in
      switch action {
      case .retitle(let id, let title): model.items[id: id]?.title = title
      case .add(let id): model.items.append(Loose(id: id, title: "New"))
      }
    }
    try dispatcher.register(store: store)
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "shelf", model: Shelf.self, action: ShelfAction.self)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    try dispatcher.dispatchSync(action: ShelfAction.retitle(id: 3, title: "first"))
    try dispatcher.dispatchSync(action: ShelfAction.retitle(id: 3, title: "second"))
    try dispatcher.dispatchSync(action: ShelfAction.add(id: 500))
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    #expect(file.lines[3].contains(#""m":{"~set":[[3,{"id":3,"title":"second"}]]},"l":[[]]"#))

    let session = try Session.load(from: file.url, codecs: codecs)
    let titles = try session.records.map { ($0.model as? Shelf)?.items[id: 3]?.title }
    #expect(titles == ["first", "second", "second"])
    #expect((try session.record(at: 2).model as? Shelf)?.items.last?.id == 500)
  }

  /// Crafted lines whose hashes hold are typed errors naming their lines, never a crash.
  ///
  /// An order change past any list, a changed element under another id, a chain of bases longer than a writer
  /// writes.
  @Test func craftedListFormsAreCorruptLinesNamingThem() throws {
    let file = TemporaryFile()
    let app = try RecordedCatalog(file: file, count: 10)
    try app.send(.restock(id: 3, amount: 5))
    try app.send(.restock(id: 4, amount: 5))
    app.recorder.flush()
    let objects = file.lines.map(Self.object)
    #expect(objects[3].contains(#""~set":[[4,"#))
    for (edit, what) in [
      (#""products":{"~order":[[9223372036854775807,1,[]]],"#, "a huge position"),
      (#""products":{"~order":[[-1,1,[]]],"#, "a negative position"),
      (#""products":{"~order":[[2,9223372036854775807,[]]],"#, "a huge count"),
    ] {
      var edited = objects
      edited[3] = edited[3].replacingOccurrences(of: #""products":{"#, with: edit)
      writeSession(edited, to: file.url)
      let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
      #expect(throws: SessionError.self, "\(what)") { try session.record(at: 1) }
    }
    // A count past the list's end is named with the position.
    var removing = objects
    removing[3] = removing[3].replacingOccurrences(of: #""products":{"#, with: #""products":{"~order":[[2,99,[]]],"#)
    writeSession(removing, to: file.url)
    #expect {
      try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs).record(at: 1)
    } throws: { error in
      guard case .corruptLine(_, let reason) = error as? SessionError else { return false }
      return reason.contains("removing 99 at 2 does not fit a list of 10")
    }
    var edited = objects
    edited[3] = edited[3].replacingOccurrences(of: #""~set":[[4,"#, with: #""~set":[[5,"#)
    writeSession(edited, to: file.url)
    #expect {
      try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs).records
    } throws: { error in
      guard case .corruptLine(let line, _) = error as? SessionError else { return false }
      return line == 4
    }

    // 1,001 records in a row, each changing the lists of the one before: one more than a writer writes.
    var long = Array(objects.prefix(3))
    for index in 1...(SessionFormat.Encoder.maximumChain + 1) {
      long.append(
        #"{"k":"r","i":\#(index),"t":\#(1_000 + index),"s":"catalog","z":\#(index - 1),"a":{"add":{"id":\#(100 + index)}},"#
          + #""m":{"edits":\#(index),"products":{}},"l":[["products"]]}"#)
    }
    writeSession(long, to: file.url)
    #expect {
      try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    } throws: { error in
      guard case .corruptLine(let line, _) = error as? SessionError else { return false }
      return line == 3 + SessionFormat.Encoder.maximumChain + 1
    }
  }

}
