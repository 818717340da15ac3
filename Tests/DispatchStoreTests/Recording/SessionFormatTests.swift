import Foundation
import Testing

@testable import DispatchStore

/// A small session file written by a recorder: two stores, a failure, a move back and a dispatch after it.
func writeSmallSession(to file: TemporaryFile) throws {
  let app = RecordedApp()
  try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
  app.send(CounterAction.increase(1))
  app.send(TextAction.append("a"))
  _ = dispatchSync(app.dispatcher, CounterAction.fail)
  try app.recorder.undo()
  app.send(CounterAction.increase(2))
  app.recorder.flush()
  #expect(app.recorder.persistenceError == nil)
}

@Suite("Session file format", .timeLimit(.minutes(2)), .watchdog)
struct SessionFormatTests {
  @Test func anEditThatStillParsesIsFoundAndNamesItsLine() throws {
    let file = TemporaryFile()
    try writeSmallSession(to: file)
    var lines = file.lines
    // Line 3 is the counter's first record (after the header and its first-model snapshot); a different digit in
    // its transaction id is still valid JSON.
    #expect(lines[2].hasPrefix("{\"k\":\"r\",\"i\":0,\"t\":"))
    let digit = lines[2].index(lines[2].startIndex, offsetBy: 22)
    let replacement: Character = lines[2][digit] == "1" ? "2" : "1"
    lines[2].replaceSubrange(digit...digit, with: String(replacement))
    file.write(lines.joined(separator: "\n") + "\n")
    let before = file.data
    #expect(throws: SessionError.integrityCheckFailed(line: 3)) {
      try Session.load(from: file.url, codecs: appCodecs())
    }
    #expect(file.data == before)
  }

  @Test func deletedDuplicatedAndSwappedLinesAreFound() throws {
    let file = TemporaryFile()
    try writeSmallSession(to: file)
    let original = file.lines

    var deleted = original
    deleted.remove(at: 4)
    file.write(deleted.joined(separator: "\n") + "\n")
    #expect(throws: SessionError.integrityCheckFailed(line: 5)) {
      try Session.load(from: file.url, codecs: appCodecs())
    }

    var duplicated = original
    duplicated.insert(original[4], at: 5)
    file.write(duplicated.joined(separator: "\n") + "\n")
    #expect(throws: SessionError.integrityCheckFailed(line: 6)) {
      try Session.load(from: file.url, codecs: appCodecs())
    }

    var swapped = original
    swapped.swapAt(4, 5)
    file.write(swapped.joined(separator: "\n") + "\n")
    #expect(throws: SessionError.integrityCheckFailed(line: 5)) {
      try Session.load(from: file.url, codecs: appCodecs())
    }
  }

  @Test func aFileTruncatedAtAnyByteLoadsItsCompleteLinesOrFailsWithATypedErrorAndIsLeftUntouched() async throws {
    let file = TemporaryFile()
    try writeSmallSession(to: file)
    let whole = file.data
    let newlines = whole.indices.filter { whole[$0] == 0x0A }
    /// What loading the first `length` bytes gave: the session's truncated line and record count, or the error.
    struct Outcome: Sendable {
      let length: Int
      let loaded: Result<(truncatedLine: Int?, records: Int), SessionError>
      let leftUntouched: Bool
    }
    // Thousands of loads: on a thread of its own, off the cooperative pool (see `onOwnThread`).
    let url = file.url
    let outcomes = try await onOwnThread { () throws -> [Outcome] in
      try (0...whole.count).map { length in
        let prefix = whole.prefix(length)
        try prefix.write(to: url)
        let loaded = Result { () throws(SessionError) -> (truncatedLine: Int?, records: Int) in
          let session = try Session.load(from: url, codecs: appCodecs())
          return (session.truncatedLine, try session.records.count)
        }
        return Outcome(length: length, loaded: loaded, leftUntouched: try Data(contentsOf: url) == prefix)
      }
    }
    for outcome in outcomes {
      let length = outcome.length
      // What a reader of the bytes expects: the complete lines, and whether a partial one follows.
      let complete = newlines.filter { $0 < length }
      let partial = complete.last.map { $0 + 1 < length } ?? (length > 0)
      let recordLines = complete.indices.filter { index in
        let start = index == 0 ? 0 : complete[index - 1] + 1
        return whole[start...].starts(with: Data("{\"k\":\"r\"".utf8))
      }
      switch outcome.loaded {
      case .success(let (truncatedLine, decoded)):
        #expect(!complete.isEmpty, "length \(length): loaded without a complete header")
        #expect(truncatedLine == (partial ? complete.count + 1 : nil), "length \(length)")
        // Records dropped by the record after the move back are not in the history.
        #expect(decoded <= recordLines.count, "length \(length)")
      case .failure(let error):
        #expect(complete.isEmpty, "length \(length): \(error)")
        #expect(error == .missingHeader(path: file.url.path))
      }
      #expect(outcome.leftUntouched, "length \(length): the file was changed")
    }
  }

  @Test func loadingChecksTheSequenceARecorderWritesEvenWithAValidChain() throws {
    // Written with the library's own encoder, so that every hash is right and only the positions are wrong.
    func write(_ lines: [SessionFormat.Line]) throws -> TemporaryFile {
      let file = TemporaryFile()
      var encoder = SessionFormat.Encoder(codecs: appCodecs())
      var data = try encoder.header()
      for line in lines { data.append(try encoder.encode(line)) }
      try data.write(to: file.url)
      return file
    }
    func record(_ index: Int) -> SessionFormat.Line {
      let id = TransactionID.next()
      return .record(
        Record(
          index: index, dispatchID: id, transactionID: id, storeIdentifier: "counter",
          action: CounterAction.increase(1),
          model: Counter(count: index + 1)))
    }
    let valid = try write([record(0), record(1), .move(0), record(1)])
    #expect(try Session.load(from: valid.url, codecs: appCodecs()).recordCount == 2)

    let skipped = try write([record(0), record(2)])
    #expect(throws: SessionError.invalidIndex(2, line: 3)) { try Session.load(from: skipped.url, codecs: appCodecs()) }
    let repeated = try write([record(0), record(0)])
    #expect(throws: SessionError.invalidIndex(0, line: 3)) { try Session.load(from: repeated.url, codecs: appCodecs()) }
    let outside = try write([record(0), .move(3)])
    #expect(throws: SessionError.invalidIndex(3, line: 3)) { try Session.load(from: outside.url, codecs: appCodecs()) }
  }

  /// A move line is read whole (issue 25, point 3).
  ///
  /// A position that is not a JSON integer of at most 18 digits, or that runs on into other characters, is refused
  /// naming the line, even when the chain of hashes holds. It used to be read from its leading digits: `1e300`
  /// loaded as a move to 1.
  @Test(arguments: [
    "1e300", "1abc", "1.0", "01", "1 ", "\"1\"", "null", "true", "1234567890123456789", "99999999999999999999", "-",
    "", "1,\"i\":0", "{}",
  ])
  func aMoveWithAMalformedPositionIsACorruptLine(position: String) throws {
    let encoder = SessionFormat.Encoder(codecs: appCodecs())
    var header = encoder
    // Each line as an object, without its hash and newline: `writeSession` chains them again.
    func object(_ line: Data) -> String {
      String(decoding: line.dropLast(SessionHash.suffixLength + 1), as: UTF8.self) + "}"
    }
    var lines = [object(try header.header())]
    var records = encoder
    for index in 0..<2 {
      let id = TransactionID.next()
      let line = try records.encode(
        .record(
          Record(
            index: index, dispatchID: id, transactionID: id, storeIdentifier: "counter",
            action: CounterAction.increase(1), model: Counter(count: index + 1))))
      lines.append(object(line))
    }
    lines.append(#"{"k":"m","i":"# + position + "}")
    let file = TemporaryFile()
    writeSession(lines, to: file.url)
    #expect(throws: SessionError.self) { try Session.load(from: file.url, codecs: appCodecs()) }
    do {
      _ = try Session.load(from: file.url, codecs: appCodecs())
    } catch {
      guard case .corruptLine(let line, _) = error else {
        Issue.record("\(position): \(error)")
        return
      }
      #expect(line == 4, "\(position)")
    }
    // The inspector refuses it too.
    #expect(throws: SessionError.self) { try SessionInspector.page(forSessionAt: file.url) }
  }

  @Test func aMoveOutsideTheHistoryIsAnInvalidIndex() throws {
    let file = TemporaryFile()
    var encoder = SessionFormat.Encoder(codecs: appCodecs())
    var data = try encoder.header()
    let id = TransactionID.next()
    data.append(
      try encoder.encode(
        .record(
          Record(
            index: 0, dispatchID: id, transactionID: id, storeIdentifier: "counter", action: CounterAction.increase(1),
            model: Counter(count: 1)))))
    data.append(try encoder.encode(.move(-5)))
    try data.write(to: file.url)
    #expect(throws: SessionError.invalidIndex(-5, line: 3)) { try Session.load(from: file.url, codecs: appCodecs()) }
  }

  @Test func aVersionOneFileLoadsAsOneDispatchPerRecordAndUpgrades() throws {
    // As the recorder of the previous release wrote it (proposal 0003): no hashes, no dispatches.
    let file = TemporaryFile()
    let header =
      #"{"format":"DispatchStore.session","stores":[{"action":"DispatchStoreTests.CounterAction","identifier":"counter","model":"DispatchStoreTests.Counter"},{"action":"DispatchStoreTests.TextAction","identifier":"text","model":"DispatchStoreTests.Text"}],"version":1}"#
    let lines = [
      header,
      #"{"action":{"increase":{"_0":2}},"index":0,"kind":"record","model":{"count":2,"log":["counter+2"]},"store":"counter","timestamp":1795000000.5,"transaction":1795000000500000000}"#,
      #"{"action":{"append":{"_0":"hi"}},"index":1,"kind":"record","model":{"value":"hi"},"store":"text","timestamp":1795000001.5,"transaction":1795000001500000000}"#,
      #"{"cursor":0,"kind":"cursor"}"#,
    ]
    file.write(lines.joined(separator: "\n") + "\n")
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(session.formatVersion == 1)
    #expect(session.cursor == 0)
    let records = try session.records
    #expect(records.map(\.dispatchID) == records.map(\.transactionID))
    #expect(records.map(\.transactionID.rawValue) == [1_795_000_000_500_000_000, 1_795_000_001_500_000_000])

    let upgraded = TemporaryFile()
    try session.save(to: upgraded.url)
    let reloaded = try Session.load(from: upgraded.url, codecs: appCodecs())
    #expect(reloaded.formatVersion == 3)
    #expect(reloaded.cursor == 0)
    #expect(try reloaded.records.map(\.transactionID) == records.map(\.transactionID))
    let app = RecordedApp()
    try reloaded.restore(into: app.dispatcher)
    #expect(app.counter.model.count == 2)
    // Appending to the upgraded file continues its chain.
    try app.recorder.resume(reloaded, in: app.dispatcher)
    try app.recorder.attach(appendingTo: upgraded.url, codecs: appCodecs())
    app.send(CounterAction.increase(3))
    app.recorder.flush()
    #expect(try Session.load(from: upgraded.url, codecs: appCodecs()).recordCount == 2)
  }
}
