import Foundation
import Testing

@testable import DispatchStore

/// Verify compares a line that holds its lists whole by copying the JSON of the elements changed since the lists were
/// last written whole from the session's change lines (``RecordedElements``), where those are the re-run's.
@Suite("Recorded elements", .timeLimit(.minutes(2)), .watchdog)
struct RecordedElementsTests {
  typealias CatalogAction = LargeModelRecordingTests.CatalogAction

  /// Records `count` restocks of products chosen by `product` among `products`, and returns, for each line of whole
  /// lists after the first, its record index and how many products changed since the one before but not in it.
  static func session(
    _ count: Int, of products: Int, to file: TemporaryFile, product: (Int) -> Int
  ) throws -> [(index: Int, copyable: Int)] {
    let records = try ListFormsSessionTests.recordRestocks(count, of: products, to: file, product: product)
    var result: [(index: Int, copyable: Int)] = []
    var changed: Set<Int> = []
    for record in records {
      // `amount` is the offset + 1 of the dispatch that recorded it.
      let id = product(record.amount - 1)
      if record.whole {
        if record.index > 0 { result.append((record.index, changed.subtracting([id]).count)) }
        changed = []
      } else {
        changed.insert(id)
      }
    }
    return result
  }

  static func verifier(products: Int) throws -> Dispatcher {
    let verifying = Dispatcher()
    try verifying.register(store: LargeModelRecordingTests.makeStore(count: products))
    return verifying
  }

  /// Each line of whole lists copies the elements changed since the lists were last written whole, but for the one
  /// its own dispatch changed, and every record still compares by its bytes.
  @Test func aLineOfWholeListsCopiesTheElementsTheChangeLinesRecorded() throws {
    let file = TemporaryFile()
    let wholeLines = try Self.session(2_100, of: 300, to: file) { $0 * 7 % 300 }
    #expect(wholeLines.count == 2)
    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    var counts = Session.VerifyCounts()
    try session.verify(against: try Self.verifier(products: 300), mode: .sync, counts: &counts)
    #expect(counts.recordedElements == wholeLines.map(\.copyable).reduce(0, +))
    #expect(counts.recordedElements > 500)
    #expect(counts.byBytes == session.recordCount)
    #expect(counts.decoded == 0)
  }

  /// A line of whole lists that holds, for the product its own dispatch restocked, that product as the change line
  /// before recorded it: verify throws there, naming the field, although those bytes are the session's own.
  @Test func anElementTheLineOfWholeListsChangedItselfIsComparedAsTheReRunHasIt() throws {
    let file = TemporaryFile()
    // Product 1 is restocked every 100 records, the line of whole lists at record 1,001 among them.
    let wholeLines = try Self.session(1_100, of: 100, to: file) { $0 % 100 }
    let whole = try #require(wholeLines.first)
    #expect(whole.index == 1_001)
    var objects = file.lines.map(ListFormsTests.object)
    let line = try #require(objects.firstIndex { $0.contains(#""i":1001,"#) })
    // The product as the change line 100 records before recorded it.
    let earlier = try #require(objects.firstIndex { $0.contains(#""i":901,"#) })
    let pattern = #/"id":1,"name":"Product 1","stock":\d+\}/#
    let recorded = try #require(objects[earlier].firstMatch(of: pattern)).output
    #expect(objects[line].firstMatch(of: pattern) != nil)
    objects[line] = objects[line].replacing(pattern, with: recorded)
    writeSession(objects, to: file.url)

    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    var counts = Session.VerifyCounts()
    #expect {
      try session.verify(against: try Self.verifier(products: 100), mode: .sync, counts: &counts)
    } throws: { error in
      guard case .diverged(let index, _, _, _, let differences) = error as? SessionError else { return false }
      return index == 1_001 && differences.count == 1 && differences.first?.path.hasSuffix("stock") == true
    }
  }

  /// Two stores whose records alternate: each line of whole lists reads back its own store's chain.
  @Test func storesWhoseRecordsAlternateCopyFromTheirOwnChanges() throws {
    let file = TemporaryFile()
    func app() throws -> Dispatcher {
      let dispatcher = Dispatcher()
      for identifier in ["first", "second"] {
        let store = LargeModelRecordingTests.makeStore(count: 150)
        try dispatcher.register(
          store: Store(identifier: identifier, model: store.model) { (action: CatalogAction, model) in
            guard case .restock(let id, let amount) = action else { return }
            model.products[id: id]?.stock += amount
          })
      }
      return dispatcher
    }
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "first", model: LargeModelRecordingTests.Catalog.self, action: CatalogAction.self)
    codecs.register(storeIdentifier: "second", model: LargeModelRecordingTests.Catalog.self, action: CatalogAction.self)
    let dispatcher = try app()
    let recorder = RecorderMiddleware(maxNumberOfRecords: 10)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    for offset in 0..<2_300 {
      try dispatcher.dispatchSync(
        action: CatalogAction.restock(id: offset * 7 % 150, amount: offset % 2 + 1),
        to: offset % 2 == 0 ? "first" : "second")
    }
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    let session = try Session.load(from: file.url, codecs: codecs)
    var counts = Session.VerifyCounts()
    try session.verify(against: try app(), mode: .sync, counts: &counts)
    // Each store's line of whole lists, after 1,000 changes of its own: the first store restocks the 75 even ids,
    // the second the 75 odd ones, each but the one its line's own dispatch restocks.
    #expect(counts.recordedElements == 2 * 74)
    #expect(counts.byBytes == session.recordCount)
    #expect(counts.decoded == 0)
  }

  /// Change lines are read back only while they set elements: one that removes or adds an element ends the reading,
  /// and the elements changed before it are encoded, even where the order is the same again by the line of whole
  /// lists.
  @Test func changeLinesAreReadBackOnlyWhileTheySetElements() throws {
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    try dispatcher.register(store: LargeModelRecordingTests.makeStore(count: 200))
    let recorder = RecorderMiddleware(maxNumberOfRecords: 10)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: LargeModelRecordingTests.codecs)
    // Product 199, the last, restocked, removed and added again at the end: the order is as it was, and the line
    // that restocked it holds it as it was before.
    func action(_ offset: Int) -> CatalogAction {
      switch offset {
      case 300: .restock(id: 199, amount: 5)
      case 500: .discontinue(id: 199)
      case 600: .add(id: 199)
      default: .restock(id: offset * 13 % 199, amount: 1)
      }
    }
    for offset in 0..<1_100 { try dispatcher.dispatchSync(action: action(offset)) }
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    let lines = file.lines
    #expect(lines.contains { $0.contains(#""i":1001,"#) && $0.contains(#""~all""#) })
    #expect(lines.contains { $0.contains(#""i":600,"#) && $0.contains(#""~order""#) })
    // Copied at record 1,001: the products restocked after the line that added one back, but for its own.
    let expected = Set((601...1_000).map { $0 * 13 % 199 }).subtracting([1_001 * 13 % 199]).count

    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    var counts = Session.VerifyCounts()
    try session.verify(against: try Self.verifier(products: 200), mode: .sync, counts: &counts)
    #expect(counts.recordedElements == expected)
    #expect(counts.decoded == 0)
  }
}

/// ``JSONBytes``, which reads change lines where they lie in a session file.
@Suite("JSON bytes", .watchdog)
struct JSONBytesTests {
  static func valueEnd(_ text: String) -> Int? {
    Array(text.utf8).withUnsafeBytes { JSONBytes.valueEnd($0, from: 0, end: $0.count) }
  }

  @Test(arguments: [
    (#""a\"b" tail"#, 6), (#""a\\" tail"#, 5), (#"{"a":[1,{"b":"]"}]} tail"#, 19), ("[[[]]],", 6), ("12.5e3,", 6),
    ("true]", 4), ("null}", 4),
  ])
  func aValueEndsAfterItsLastByte(text: String, end: Int) {
    #expect(Self.valueEnd(text) == end)
  }

  @Test(arguments: [
    #""open"#, "[1,2", #"{"a":[1}]"#, "[}", ",", String(repeating: "[", count: 65) + String(repeating: "]", count: 65),
  ])
  func aValueThatDoesNotCloseOrNestsTooDeepHasNoEnd(text: String) {
    #expect(Self.valueEnd(text) == nil)
  }

  /// The form at a path: read by the common line's shortcut and by the general reader alike; refused where a key is
  /// given twice, or the form does more than set elements.
  @Test(arguments: [
    (#"{"rows":{"~set":[[1,{"id":1}],["b",{"id":"b"}]]}}"#, #"["rows"]"#, 2),
    (#"{"a":{"b":{"~set":[[1,{"x":[1,2]}]]}}}"#, #"["a","b"]"#, 1),
    (#"{"count":3,"rows":{"~set":[[1,{}]]}}"#, #"["rows"]"#, 1),
    (#"{ "rows" : { "~set" : [ [ 1 , { } ] ] } }"#, #"["rows"]"#, 1),
    (#"{"rows":{}}"#, #"["rows"]"#, 0),
    (#"{"sections":[{"rows":{"~set":[[1,{}]]}}]}"#, #"["sections",0,"rows"]"#, 1),
    (#"{"rows":{"~set":[[1,{}]]},"rows":{"~set":[]}}"#, #"["rows"]"#, -1),
    (#"{"rows":{"~remove":[2],"~set":[[1,{}]]}}"#, #"["rows"]"#, -1),
    (#"{"rows":{"~set":[[1,{}],[2]]}}"#, #"["rows"]"#, -1),
    (#"{"rows":{"~set":[[1,{}]]}"#, #"["rows"]"#, -1),
    (#"{"other":{"~set":[[1,{}]]}}"#, #"["rows"]"#, -1),
  ])
  func theSetPairsOfAFormAreReadWhereTheyLie(model: String, path: String, pairs: Int) {
    let model = Array(model.utf8)
    let path = Array(path.utf8)
    let (general, shortcut) = model.withUnsafeBytes { bytes in
      path.withUnsafeBytes { path in Self.read(bytes, at: path) }
    }
    #expect((general?.count ?? -1) == pairs)
    if let shortcut {
      // The shortcut reads only what the general reader reads.
      #expect(general?.map(\.id) == shortcut.map(\.id))
      #expect(general?.map(\.element) == shortcut.map(\.element))
    }
  }

  /// The pairs the general reader and the shortcut read at `path` in `bytes`; `nil` for a reader that refused.
  static func read(
    _ bytes: UnsafeRawBufferPointer, at path: UnsafeRawBufferPointer
  ) -> (general: [(id: Range<Int>, element: Range<Int>)]?, shortcut: [(id: Range<Int>, element: Range<Int>)]?) {
    guard let components = JSONBytes.elements(of: path, in: 0..<path.count) else { return (nil, nil) }
    var general: [(id: Range<Int>, element: Range<Int>)] = []
    var reader = JSONBytes.Reader(bytes: bytes, position: 0, end: bytes.count)
    let read = reader.value(at: components[...], path: path, then: { $0.setPairs(into: &general) }) && reader.atEnd
    var shortcut: [(id: Range<Int>, element: Range<Int>)] = []
    var fast = JSONBytes.Reader(bytes: bytes, position: 0, end: bytes.count)
    let quick = fast.onlySetPairs(at: path, into: &shortcut)
    return (read ? general : nil, quick ? shortcut : nil)
  }

  /// Change lines cut short or with bytes changed at random: read without a trap, and the shortcut reads only what
  /// the general reader reads.
  @Test func changedOrTruncatedLinesAreReadWithoutATrap() {
    var random = SplitMix(seed: 27)
    let lines = [
      #"{"rows":{"~set":[[1,{"id":1,"title":"a\"b"}],[2,{"id":2,"tags":[1,[2]]}]]}}"#,
      #"{"a":{"b":{"~set":[["x",{"id":"x"}]]}}}"#,
      #"{"count":2,"rows":{"~set":[[3,{"id":3}]]}}"#,
    ].map { Array($0.utf8) }
    let alphabet = Array(#"{}[]",:\ ~set0a"#.utf8)
    let paths = [#"["rows"]"#, #"["a","b"]"#].map { Array($0.utf8) }
    var read = 0
    for _ in 0..<3_000 {
      var line = lines[Int.random(in: 0..<lines.count, using: &random)]
      switch Int.random(in: 0..<3, using: &random) {
      case 0: line.removeLast(Int.random(in: 1...line.count, using: &random))
      case 1:
        for _ in 0..<Int.random(in: 1...3, using: &random) {
          line[Int.random(in: 0..<line.count, using: &random)] = alphabet.randomElement(using: &random)!
        }
      default: line.insert(alphabet.randomElement(using: &random)!, at: Int.random(in: 0...line.count, using: &random))
      }
      for path in paths {
        let (general, shortcut) = line.withUnsafeBytes { bytes in path.withUnsafeBytes { Self.read(bytes, at: $0) } }
        if general != nil { read += 1 }
        if let shortcut {
          #expect(general?.map(\.id) == shortcut.map(\.id), "\(String(decoding: line, as: UTF8.self))")
          #expect(general?.map(\.element) == shortcut.map(\.element))
        }
      }
    }
    // Some changes leave a line that still reads (a changed letter in a title).
    #expect(read > 0)
  }
}
