import Foundation
import Testing

@testable import DispatchStore

/// How verify finds the fields of a record line: a long model's fields after it are read from the line's end
/// (`RecordFields.fromEnd`), and must be those a full scan finds.
@Suite(.watchdog, .offThePool) struct RecordFieldsTests {
  /// A model of `RecordFields.longModel` bytes or more, with the characters that make reading backwards hard:
  /// escaped quotes and backslashes, commas, colons and brackets in strings, and keys the line's fields have.
  static let longModel: String = {
    let items = (0..<120).map { index in
      #"{"id":\#(index),"l":[["x\",\"e\":\"y"]],"n":"a\\\\","e":"\"],\"c\":true","t":[1,-2.5e3,true,null]}"#
    }
    return #"{"items":["# + items.joined(separator: ",") + #"],"n":7}"#
  }()

  static let prefix = #"{"k":"r","i":5,"t":12,"d":11,"s":"catalog","z":4,"a":{"restock":{"id":1}},"m":"#

  /// The fields a writer may write after the model, each alone and all together.
  static let tails: [String] = [
    #","l":[["products"],["nested",3,"inner \"q\""]]"#,
    #","e":"failed: \"quoted\" \\ ,\"l\":[[\"x\"]],\"m\":{}""#,
    #","c":true"#, #","u":true"#, #","b":true"#, #","n":3"#, #","f":1234"#,
  ]

  static func line(model: String, tail: String) -> [UInt8] {
    Array((prefix + model + tail + #","h":"0123456789abcdef"}"#).utf8)
  }

  static func fields(_ line: [UInt8], fromEnd: Bool) -> RecordFields? {
    line.withUnsafeBytes { RecordFields($0, range: 0..<$0.count, readingLongModelsFromTheEnd: fromEnd) }
  }

  static func same(_ lhs: RecordFields, _ rhs: RecordFields) -> Bool {
    lhs.transaction == rhs.transaction && lhs.dispatch == rhs.dispatch && lhs.action == rhs.action
      && lhs.model == rhs.model && lhs.error == rhs.error && lhs.change == rhs.change
      && lhs.cancelled == rhs.cancelled && lhs.rollback == rhs.rollback && lhs.lists == rhs.lists
  }

  @Test(arguments: [[]] + tails.indices.map { [$0] } + [Array(tails.indices)])
  func fieldsReadFromTheEndOfALongModelAreTheFieldsAFullScanFinds(tail indices: [Int]) throws {
    #expect(Self.longModel.utf8.count >= RecordFields.longModel)
    let line = Self.line(model: Self.longModel, tail: indices.map { Self.tails[$0] }.joined())
    let scanned = try #require(Self.fields(line, fromEnd: false))
    let read = try #require(Self.fields(line, fromEnd: true))
    #expect(read.fromEnd)
    #expect(!scanned.fromEnd)
    #expect(Self.same(read, scanned))
    let model = try #require(read.model)
    #expect(String(decoding: line[model], as: UTF8.self) == Self.longModel)
  }

  /// A short model is scanned; a long one that is itself an array, which reading backwards takes for a value, gives
  /// the same fields.
  @Test func aShortModelIsScannedAndAnArrayModelReadsTheSame() throws {
    let short = Self.line(model: #"{"n":1}"#, tail: Self.tails.joined())
    #expect(try #require(Self.fields(short, fromEnd: true)).fromEnd == false)
    let array = "[" + String(repeating: #""a\"],","#, count: 500) + #""z"]"#
    let line = Self.line(model: array, tail: Self.tails.joined())
    let read = try #require(Self.fields(line, fromEnd: true))
    #expect(Self.same(read, try #require(Self.fields(line, fromEnd: false))))
    #expect(String(decoding: line[try #require(read.model)], as: UTF8.self) == array)
  }

  /// An object-valued field after the model, which no writer writes, ends the reading from the end.
  ///
  /// The model found takes it in, and the fields before it are missed: verify checks such a line before acting on it
  /// (below).
  @Test func anObjectValuedFieldAfterTheModelIsTakenIntoTheModel() throws {
    let line = Self.line(model: Self.longModel, tail: #","e":"boom","x":{"y":1},"n":3"#)
    let read = try #require(Self.fields(line, fromEnd: true))
    let scanned = try #require(Self.fields(line, fromEnd: false))
    #expect(read.fromEnd)
    #expect(read.change == scanned.change)
    #expect(read.error == nil && scanned.error != nil)
    let model = try #require(read.model)
    #expect(String(decoding: line[model], as: UTF8.self) == Self.longModel + #","e":"boom","x":{"y":1}"#)
  }

  /// A record's transaction, dispatch and change, which decide what leaving it out of a history drops, are the full
  /// scan's, whatever follows a long model.
  @Test(arguments: [
    (#","n":2,"o":{},"t":7"#, 7, 7, 2), (#","n":2,"t":7,"x":{}"#, 7, 7, 2), (#","d":3,"n":1,"t":9"#, 9, 3, 1),
  ])
  func aRecordsIdentityIsTheFullScans(tail: String, transaction: UInt64, dispatch: UInt64, change: UInt64) throws {
    let prefix = #"{"k":"r","i":5,"s":"catalog","a":{"restock":{"id":1}},"m":"#
    let line = Array((prefix + Self.longModel + tail + "}").utf8)
    let identity = try #require(line.withUnsafeBytes { RecordFields.identity(in: $0, range: 0..<$0.count) })
    #expect(identity.transaction == TransactionID(rawValue: transaction))
    #expect(identity.dispatch == TransactionID(rawValue: dispatch))
    #expect(identity.change == change)
  }

  /// Tails no writer writes: escaped quotes where a value would close, keys twice, the action after the model.
  static let hostileTails: [String] = [
    #","x":"\","e":"}""#, #","e":"a\""#, #","n":0,"n":2"#, #","c":false,"c":true"#, #","a":{"go":2},"x":{}"#,
    #","x":{},"a":{"go":2}"#, #","e":"\\\"""#, #","l":[["a\"]]"#, #","l":[["a"],{"b":"]"}]"#, #","n":-"#,
    #","c":tru"#, #","f":1e"#,
  ]

  /// Where the fields read from the end could be taken for the line's (the model found is the one a full scan finds,
  /// so it would compare equal by its bytes), they are the full scan's; where the full scan refuses the line, the model
  /// found is not the line's model alone.
  static func readingFromTheEndIsSafe(model: String, tail: String) throws {
    let line = line(model: model, tail: tail)
    guard let read = fields(line, fromEnd: true), read.fromEnd else { return }
    let modelRange = prefix.utf8.count..<(prefix.utf8.count + model.utf8.count)
    if let scanned = fields(line, fromEnd: false), scanned.model == read.model {
      #expect(same(read, scanned), "\(tail)")
    } else {
      #expect(read.model != modelRange, "\(tail)")
    }
  }

  @Test(arguments: hostileTails)
  func aTailNoWriterWritesIsReadAsAFullScanReadsItOrNotTakenForTheLines(tail: String) throws {
    try Self.readingFromTheEndIsSafe(model: Self.longModel, tail: tail)
  }

  @Test func randomTailsAreReadAsAFullScanReadsThemOrNotTakenForTheLines() throws {
    var random = SplitMix(seed: 4_096)
    let pieces = [
      "\"", "\\", ",", ":", "[", "]", "{", "}", "e", "l", "n", "c", "a", "1", "-", "true", "null", #""n":"#, #""e":"#,
      #""a":"#, #""c":"#, #""m":"#, #""x":"#, " ",
    ]
    for _ in 0..<3_000 {
      let count = Int.random(in: 1...12, using: &random)
      let tail = "," + (0..<count).map { _ in pieces.randomElement(using: &random)! }.joined()
      try Self.readingFromTheEndIsSafe(model: Self.longModel, tail: tail)
    }
  }

  /// The products of the catalogs recorded: 1,000 under a sanitizer (lines still ten times `RecordFields.longModel`),
  /// where ten thousand took minutes of CI's sanitizer runs, and five thousand three and a half under ThreadSanitizer.
  static let products = isSanitized ? 1_000 : 10_000

  /// A recorded catalog of ``products`` products, whose first record line holds the list whole.
  private static func recordedCatalog() throws -> (file: TemporaryFile, objects: [String]) {
    let file = TemporaryFile()
    let app = try ListFormsTests.RecordedCatalog(file: file, count: Self.products)
    try app.send(.restock(id: 1, amount: 1))
    try app.send(.restock(id: 2, amount: 1))
    app.recorder.flush()
    #expect(app.recorder.persistenceError == nil)
    let objects = file.lines.map(ListFormsTests.object)
    try #require(objects.count == 4)
    #expect(objects[2].utf8.count > RecordFields.longModel)
    return (file, objects)
  }

  private static func verify(_ file: TemporaryFile) throws {
    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    let verifying = Dispatcher()
    try verifying.register(store: LargeModelRecordingTests.makeStore(count: Self.products))
    try session.verify(against: verifying)
  }

  @Test func aLongLineWithAnUnknownObjectFieldAfterItsModelStillVerifies() throws {
    var (file, objects) = try Self.recordedCatalog()
    try Self.verify(file)
    objects[2] = objects[2].replacingOccurrences(of: #"}},"l":"#, with: #"}},"x":{"y":[1]},"l":"#)
    #expect(objects[2].contains(#""x":{"y":[1]}"#))
    writeSession(objects, to: file.url)
    try Self.verify(file)
  }

  /// A line whose action is after its model, hidden from the reading from the end by an object-valued field, is
  /// scanned in full, as before.
  @Test func aLongLineWithItsActionAfterAnUnknownObjectFieldStillVerifies() throws {
    var (file, objects) = try Self.recordedCatalog()
    let action = try #require(objects[2].firstRange(of: #/"a":\{"restock":\{[^}]*\}\},/#))
    let moved = String(objects[2][action].dropLast())
    objects[2].removeSubrange(action)
    objects[2] = objects[2].replacingOccurrences(of: #"}},"l":"#, with: #"}},"# + moved + #","x":{"y":[1]},"l":"#)
    #expect(objects[2].contains(moved + #","x":{"y":[1]}"#))
    writeSession(objects, to: file.url)
    try Self.verify(file)
  }

  /// The field of the format between the model and the object-valued field is missed when read from the end: the
  /// check against a full scan refuses the line, rather than verify acting on the fields it missed.
  @Test func aLongLineWithAFormatFieldBeforeAnUnknownObjectFieldIsRefused() throws {
    var (file, objects) = try Self.recordedCatalog()
    objects[2] = objects[2].replacingOccurrences(of: #"}},"l":"#, with: #"}},"c":true,"x":{"y":[1]},"l":"#)
    #expect(objects[2].contains(#""c":true,"x":{"y":[1]}"#))
    writeSession(objects, to: file.url)
    let refused = SessionError.corruptLine(line: 3, reason: "a field after the model is not one a recorder writes")
    #expect(throws: refused) { try Self.verify(file) }
  }

  /// A field given twice, which a decoder reads as its first and this reading as its last, or a key spelt with
  /// escapes or other than ASCII, which a decoder reads as the key it stands for: not read here, before or after a
  /// long model.
  @Test(arguments: [
    (#"{"i":1}"#, #","m":{"n":2}"#), (#"{"i":1}"#, #","\u006d":{"n":2}"#),
    (Self.longModel, #","l":[["a"]],"l":[["b"]]"#), (Self.longModel, #","\u006c":[["b"]]"#),
    (Self.longModel, #","c":true,"c":false"#), (#"{"i":1}"#, #","é":1"#),
  ])
  func aFieldGivenTwiceOrAKeySpeltOtherwiseIsNotRead(model: String, tail: String) {
    let line = Self.line(model: model, tail: tail)
    #expect(Self.fields(line, fromEnd: true) == nil)
    #expect(Self.fields(line, fromEnd: false) == nil)
  }

  /// A record line with two models, the first not the re-run's: verify refuses it rather than comparing the second by
  /// its bytes and passing a line that decodes to the first.
  @Test func aLineWithTwoModelsIsRefused() throws {
    var (file, objects) = try Self.recordedCatalog()
    try Self.verify(file)
    let model = try #require(objects[3].firstRange(of: #/"m":\{.*?\}\]\]\}\}/#))
    let recorded = String(objects[3][model])
    let other = recorded.replacing(#/"stock":\d+/#, with: #""stock":999"#)
    #expect(other != recorded)
    objects[3].replaceSubrange(model, with: other + "," + recorded)
    writeSession(objects, to: file.url)
    #expect(throws: SessionError.self) { try Self.verify(file) }
  }

  /// A change line whose model is the writer's, byte for byte, but whose `"l"` names other paths: the decoder reads the
  /// lists at the paths `"l"` names, so verify compares `"l"` too and, where it differs, compares the decoded model.
  @Test(arguments: [#"[["stock"]]"#, #"[]"#, #"[["products",0]]"#])
  func aChangeLineWhoseListPathsAreNotTheWritersIsRefused(paths: String) throws {
    var (file, objects) = try Self.recordedCatalog()
    try Self.verify(file)
    #expect(objects[3].contains(#","l":[["products"]]"#))
    objects[3] = objects[3].replacingOccurrences(of: #","l":[["products"]]"#, with: #","l":"# + paths)
    writeSession(objects, to: file.url)
    #expect(throws: SessionError.self) { try Self.verify(file) }
  }

  /// A line holding its lists whole, spelt as a plain array with an `"l"` that names no list (or none at all), is
  /// refused.
  ///
  /// It decodes to the recorded model, but leaves the next line, which changes the list, no list to rest on. The
  /// session does not load past it, and verify refuses it rather than passing the next line by its bytes.
  @Test(arguments: [#","l":[["nowhere"]]"#, #","l":[]"#, ""])
  func aWholeLineWithoutItsListFormsLeavesTheNextLineNothingToRestOnAndIsRefused(paths: String) throws {
    var (file, objects) = try Self.recordedCatalog()
    objects[2] = objects[2].replacingOccurrences(of: #""products":{"~all":["#, with: #""products":["#)
      .replacing(#/\],"~ids":\[[0-9,]*\]\}/#, with: "]")
      .replacingOccurrences(of: #","l":[["products"]]"#, with: paths)
    #expect(!objects[2].contains("~"))
    #expect(objects[2].contains(#""products":[{"id":0,"#))
    writeSession(objects, to: file.url)
    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    let last = session.firstIndex + 1
    #expect(try session.record(at: session.firstIndex).model as? LargeModelRecordingTests.Catalog != nil)
    #expect(throws: SessionError.self) { try session.record(at: last) }
    #expect(throws: SessionError.self) { try Self.verify(file) }
    // The whole line compared on the other thread, the next here: the base this thread finds for it from the re-run's
    // model must not be taken for the reader's.
    let verifying = Dispatcher()
    try verifying.register(store: LargeModelRecordingTests.makeStore(count: Self.products))
    var counts = Session.VerifyCounts()
    #expect(throws: SessionError.self) {
      try session.verify(against: verifying, mode: .sync, counts: &counts, keepingRuns: true)
    }
  }

  /// A line holding its lists whole whose `"l"` is spelt otherwise but names the list: the reader finds it there, so
  /// the next line rests on it, on either thread.
  @Test(arguments: [#"[ ["products"] ]"#, #"[["\u0070roducts"]]"#, #"[["nowhere"],["products"]]"#])
  func aWholeLineWhoseListPathsAreSpeltOtherwiseLeavesTheNextLineItsList(paths: String) throws {
    var (file, objects) = try Self.recordedCatalog()
    objects[2] = objects[2].replacingOccurrences(of: #","l":[["products"]]"#, with: #","l":"# + paths)
    #expect(objects[2].contains(paths))
    writeSession(objects, to: file.url)
    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    let last = try session.record(at: session.firstIndex + 1)
    #expect((last.model as? LargeModelRecordingTests.Catalog)?.products[id: 2]?.stock == 1)
    try Self.verify(file)
    let verifying = Dispatcher()
    try verifying.register(store: LargeModelRecordingTests.makeStore(count: Self.products))
    var counts = Session.VerifyCounts()
    try session.verify(against: verifying, mode: .sync, counts: &counts, keepingRuns: true)
    #expect(counts.decoded >= 1)
  }

  /// The same paths spelt otherwise (spaces, escapes), or with a path that names no list: the line decodes to the
  /// recorded model, and verify passes it by comparing the decoded model.
  @Test(arguments: [#"[ ["products"] ]"#, #"[["\u0070roducts"]]"#, #"[["products"],["nowhere"]]"#])
  func aChangeLineWhoseListPathsDecodeToTheRecordedModelVerifiesByIt(paths: String) throws {
    var (file, objects) = try Self.recordedCatalog()
    objects[3] = objects[3].replacingOccurrences(of: #","l":[["products"]]"#, with: #","l":"# + paths)
    #expect(objects[3].contains(paths))
    writeSession(objects, to: file.url)
    try Self.verify(file)
  }
}
