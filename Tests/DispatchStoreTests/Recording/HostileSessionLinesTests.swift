import Foundation
import Testing

@testable import DispatchStore

/// Lines no writer writes, each chained with valid hashes: loading, restore and the inspector read them as the
/// decoders do, or refuse them with a typed error; none is taken for another store's record, and none costs more
/// than its size.
@Suite("Hostile session lines", .timeLimit(.minutes(2)), .watchdog)
struct HostileSessionLinesTests {
  /// The header and each line as a JSON object without its hash, as `writeSession` takes them.
  static func objects(_ lines: [SessionFormat.Line], codecs: SessionCodecs = appCodecs()) throws -> [String] {
    var encoder = SessionFormat.Encoder(codecs: codecs)
    func object(_ line: Data) -> String {
      String(decoding: line.dropLast(SessionHash.suffixLength + 1), as: UTF8.self) + "}"
    }
    var header = SessionFormat.Encoder(codecs: appCodecs())
    var objects = [object(try header.header())]
    for line in lines { objects.append(object(try encoder.encode(line))) }
    return objects
  }

  static func record(_ index: Int, count: Int) -> SessionFormat.Line {
    let id = TransactionID.next()
    return .record(
      Record(
        index: index, dispatchID: id, transactionID: id, storeIdentifier: "counter", action: CounterAction.increase(1),
        model: Counter(count: count)))
  }

  /// A field before the store whose value holds `"s":"text"` is skipped whole: the record is the counter's, for the
  /// index as for the decoder, and restore puts its model there.
  @Test func aStoreInsideAnotherFieldIsNotTheRecords() throws {
    var lines = try Self.objects([Self.record(0, count: 7)])
    let store = #","s":"counter""#
    #expect(lines[1].contains(store))
    lines[1] = lines[1].replacingOccurrences(of: store, with: #","x":{"y":0,"s":"text"}"# + store)
    let file = TemporaryFile()
    writeSession(lines, to: file.url)
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(try session.records.map(\.storeIdentifier) == ["counter"])
    let app = RecordedApp()
    try session.restore(into: app.dispatcher)
    #expect(app.counter.model.count == 7)
    #expect(app.text.model.value == "")
  }

  /// A key spelt with an escape before the store (`"\u0073"`, which decoders read as `"s"`, and which repeated takes
  /// the first value) is refused: the index would otherwise read the store after it.
  @Test func anEscapedKeyBeforeTheStoreIsRefused() throws {
    var lines = try Self.objects([Self.record(0, count: 7)])
    let store = #","s":"counter""#
    lines[1] = lines[1].replacingOccurrences(of: store, with: #","\u0073":"text""# + store)
    let file = TemporaryFile()
    writeSession(lines, to: file.url)
    do {
      _ = try Session.load(from: file.url, codecs: appCodecs())
      Issue.record("loaded")
    } catch {
      guard case .corruptLine(let line, let reason) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(line == 2)
      #expect(reason.contains("escape"))
    }
  }

  /// A snapshot's store the header does not list (a resumed recorder may keep one its privacy settings now leave
  /// out) does not stand in for a listed one: restore still finds `text` in the first snapshot, and leaves the other
  /// out.
  @Test func aSnapshotsStoreTheHeaderDoesNotListIsLeftOut() throws {
    var codecs = appCodecs()
    codecs.register(storeIdentifier: "extra", model: Counter.self, action: CounterAction.self)
    let lines = try Self.objects(
      [
        .snapshot(index: 0, models: ["counter": Counter(count: 0), "text": Text(value: "t")], actions: [:]),
        Self.record(0, count: 1),
        .snapshot(index: 1, models: ["extra": Counter(count: 5)], actions: [:]),
        Self.record(1, count: 2),
      ], codecs: codecs)
    let file = TemporaryFile()
    writeSession(lines, to: file.url)
    let session = try Session.load(from: file.url, codecs: codecs)
    let app = RecordedApp()
    #expect(app.text.restore(model: Text(value: "the app's"), action: nil, event: nil))
    try session.restore(into: app.dispatcher)
    #expect(app.counter.model.count == 2)
    #expect(app.text.model.value == "t")
  }

  /// A redaction mark after the model, where no writer writes it and loading does not look, is refused when the
  /// record is read: restore would otherwise put the redacted value back as the app's.
  @Test func aRedactionMarkAfterTheModelIsRefused() throws {
    var lines = try Self.objects([Self.record(0, count: 7)])
    lines[1] = String(lines[1].dropLast()) + #","p":"m"}"#
    let file = TemporaryFile()
    writeSession(lines, to: file.url)
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(throws: SessionError.self) { try session.records }
    #expect(throws: SessionError.self) { try session.restore(into: RecordedApp().dispatcher) }
  }

  /// A transaction id past 2^64 is refused, not read as the small one it wraps around to.
  @Test func aTransactionIDPastSixtyFourBitsIsRefused() throws {
    var lines = try Self.objects([
      Self.record(0, count: 7), .read(transactionID: TransactionID(rawValue: 3), store: "counter", index: 0),
    ])
    #expect(lines[2].contains(#""t":3,"#))
    lines[2] = lines[2].replacingOccurrences(of: #""t":3,"#, with: #""t":18446744073709551619,"#)
    let file = TemporaryFile()
    writeSession(lines, to: file.url)
    #expect(throws: SessionError.self) { try Session.load(from: file.url, codecs: appCodecs()) }
  }

  /// A record's transaction, dispatch or change past 2^64 gives the line no identity, rather than the small number it
  /// wraps around to (18446744073709551619 read as 3): the index, resume and verify then treat it as the decoder does,
  /// as a line no writer makes.
  @Test func aRecordNumberPastSixtyFourBitsIsNoNumber() throws {
    func unsigned(_ text: String) -> UInt64? {
      Array(text.utf8).withUnsafeBytes { RecordFields.unsigned($0, 0..<$0.count) }
    }
    #expect(unsigned("18446744073709551615") == UInt64.max)
    #expect(unsigned("18446744073709551616") == nil)
    #expect(unsigned("18446744073709551619") == nil)
    #expect(unsigned("184467440737095516150") == nil)
    let line = try Self.objects([Self.record(0, count: 7)])[1]
    for field in ["t", "d", "n"] {
      let (pattern, huge) = (#""\#(field)":\d+"#, #""\#(field)":18446744073709551619"#)
      let edited =
        line.range(of: pattern, options: .regularExpression) != nil
        ? line.replacingOccurrences(of: pattern, with: huge, options: .regularExpression)
        : String(line.dropLast()) + "," + huge + "}"
      let identity = Array(edited.utf8).withUnsafeBytes { RecordFields.identity(in: $0, range: 0..<$0.count) }
      #expect(identity == nil, "\(field)")
    }
    let intact = Array(line.utf8).withUnsafeBytes { RecordFields.identity(in: $0, range: 0..<$0.count) }
    #expect(intact != nil)
    // A change number the decoder refuses (it reads a `UInt32`): no identity either.
    let pastChanges = String(line.dropLast()) + #","n":4294967296}"#
    #expect(Array(pastChanges.utf8).withUnsafeBytes { RecordFields.identity(in: $0, range: 0..<$0.count) } == nil)
  }

  /// Snapshots placed before thousands of others at a later position, after a move back, are each placed without
  /// moving those (helper-64: an array kept in order moved all of them for each), and keep the order of position,
  /// then of reading; a record drops those after it, and the inspector lists those it dropped in that order.
  @Test func snapshotsPlacedBeforeThousandsOfOthersKeepTheirOrder() throws {
    let snapshot = { (position: Int, count: Int) in
      try Self.objects([.snapshot(index: position, models: ["counter": Counter(count: count)], actions: [:])])[1]
    }
    var lines = try Self.objects([Self.record(0, count: 1), Self.record(1, count: 2)])
    let moveToZero = try Self.objects([.move(0)])[1]
    let moveToMinusOne = try Self.objects([.move(-1)])[1]
    lines += (0..<3_000).map { _ in try! snapshot(2, 20) }
    lines.append(moveToZero)
    lines += (0..<3_000).map { _ in try! snapshot(1, 10) }
    lines.append(moveToMinusOne)
    lines += (0..<3).map { _ in try! snapshot(0, 0) }
    let file = TemporaryFile()
    writeSession(lines, to: file.url)
    let loaded = try Session.load(from: file.url, codecs: appCodecs())
    let expected = Array(repeating: 0, count: 3) + Array(repeating: 1, count: 3_000) + Array(repeating: 2, count: 3_000)
    #expect(loaded.snapshotIndices == expected)
    // A record at 0 drops the snapshots at 1 and 2, and keeps those at 0.
    lines.append(try Self.objects([Self.record(0, count: 5)])[1])
    writeSession(lines, to: file.url)
    #expect(try Session.load(from: file.url, codecs: appCodecs()).snapshotIndices == [0, 0, 0])
  }

  /// A position far below the history of a session that starts past 0 is refused, not subtracted into an overflow.
  @Test func aRecordPositionFarBelowTheHistoryIsRefused() throws {
    let lines = try Self.objects([
      .snapshot(index: 3, models: ["counter": Counter(count: 0)], actions: [:]), Self.record(3, count: 1),
    ])
    let file = TemporaryFile()
    writeSession(lines, to: file.url)
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.firstIndex == 3)
    for position in [Int.min, -1, 2, 4, Int.max] {
      #expect(throws: SessionError.invalidIndex(position, line: 0)) { try session.record(at: position) }
    }
    #expect(try session.record(at: 3).model as? Counter == Counter(count: 1))
  }

  /// Positions count from 0: a first snapshot at -5 would make -1, "before the first record", a record's position.
  @Test func aNegativeFirstPositionIsRefused() throws {
    let lines = try Self.objects([.snapshot(index: 0, models: ["counter": Counter(count: 0)], actions: [:])])
    let file = TemporaryFile()
    writeSession([lines[0], lines[1].replacingOccurrences(of: #""i":0,"#, with: #""i":-5,"#)], to: file.url)
    #expect(throws: SessionError.invalidIndex(-5, line: 2)) { try Session.load(from: file.url, codecs: appCodecs()) }
  }

  /// Snapshots after the cursor (an app may take one after every dispatch, then jump back) are each placed by
  /// halving, and a record drops them from the end: thousands load, and the record after the jump leaves one.
  @Test func thousandsOfSnapshotsAfterTheCursorLoadAndARecordDropsThem() throws {
    let snapshot = try Self.objects([.snapshot(index: 2, models: ["counter": Counter(count: 0)], actions: [:])])[1]
    var lines = try Self.objects([Self.record(0, count: 1), Self.record(1, count: 2), .move(0)])
    let move = lines.removeLast()
    lines += Array(repeating: snapshot, count: 5_000) + [move]
    lines.append(snapshot.replacingOccurrences(of: #""i":2,"#, with: #""i":1,"#))
    let file = TemporaryFile()
    writeSession(lines, to: file.url)
    let loaded = try Session.load(from: file.url, codecs: appCodecs())
    #expect(loaded.snapshotIndices == [1] + Array(repeating: 2, count: 5_000))
    lines.append(try Self.objects([Self.record(1, count: 9)])[1])
    writeSession(lines, to: file.url)
    let replaced = try Session.load(from: file.url, codecs: appCodecs())
    #expect(replaced.snapshotIndices == [1])
    let app = RecordedApp()
    try replaced.restore(into: app.dispatcher)
    #expect(app.counter.model.count == 9)
  }

  /// The inspector's error page never replaces its own input, also when the output is a symbolic link to it.
  @Test func theInspectorsErrorPageNeverReplacesItsInputThroughALink() throws {
    let file = TemporaryFile()
    try writeSmallSession(to: file)
    var lines = file.lines
    lines[0] = "{" + lines[0].dropFirst(2)
    file.write(lines.joined(separator: "\n") + "\n")
    let before = file.data
    let link = FileManager.default.temporaryDirectory.appendingPathComponent("link-\(UUID()).html")
    try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file.url)
    defer { try? FileManager.default.removeItem(at: link) }
    #expect(throws: SessionError.self) { try SessionInspector.writePage(forSessionAt: file.url, to: link) }
    #expect(file.data == before)
  }
}
