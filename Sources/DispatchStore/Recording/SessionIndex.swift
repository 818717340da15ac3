import Foundation

/// A session file read into lines whose kind, position and store are known, but whose JSON is decoded only when
/// needed: so that restoring the end of a long session decodes the last snapshot and the records after it, not the
/// whole history.
///
/// Reading checks what a recorder writes: the hash chain (format versions 2 and 3), and the sequence of positions (a
/// record is always one past the cursor, a move stays within the history, a snapshot is at the cursor). Reading for
/// the inspector also checks that each line is the JSON object of its kind (``LineCheck``), and keeps what the kept
/// history leaves out: moves, and the records and snapshots a later record dropped (``Inspection``).
struct SessionIndex: Sendable {
  /// A line of the file, not decoded.
  struct Line: Sendable {
    /// 1-based line number in the file.
    let number: Int
    /// The byte range of the line, newline excluded.
    let range: Range<Int>
  }

  /// A record line of the kept history.
  struct RecordLine: Sendable {
    let line: Line
    let index: Int
    let store: String
    /// The record whose lists this one's list changes apply to (`"z"`, format 3): the store's previous record line.
    var base: Int? = nil
  }

  let data: Data
  let formatVersion: Int
  let storeIdentifiers: [String]
  /// The kept history, oldest first: records dropped by a later record after a move back are gone.
  var records: [RecordLine] = []
  /// The index of the first record the file holds (0, unless it was started from a recorder that had dropped
  /// older records).
  var firstIndex = 0
  var cursor = -1
  /// Snapshot lines by the position they describe (the models just before record `index`), in order of position.
  var snapshots: [(index: Int, line: Line)] = []
  /// The snapshot lines while the file is read, put in order into ``snapshots`` once it is read.
  private var readSnapshots = SnapshotHeap()
  /// Effect lines, by dispatch.
  var effects: [TransactionID: [Line]] = [:]
  /// The outcomes of operations whose records were filed at their changes and that then failed or were cancelled,
  /// by transaction (outcome lines, decoded: they are few).
  var outcomes: [TransactionID: Outcome] = [:]

  /// An outcome line: the error and cancellation of every record of its transaction.
  struct Outcome: Sendable, Decodable {
    let t: UInt64
    let e: String?
    let c: Bool?
  }
  /// The outcome lines, in the order of the file, for the inspector.
  var outcomeLines: [Line] = []
  /// Read lines, by the transaction that read (`ActionOperation.model(of:as:)`), in the order of the file.
  ///
  /// What verify gives the re-run. A read of a record that a later record replaced (a dispatch after moving back)
  /// is dropped with it.
  var reads: [TransactionID: [IndexedRead]] = [:]

  /// A read line: the store read, the record whose model it held, and the line.
  struct IndexedRead: Sendable {
    let read: RecordedRead
    let line: Line
    /// The number of the record line it read, when that record is in the history: a later record at its position
    /// replaces what it read.
    var recordLine: Int? = nil
  }
  /// The stores whose values a recorder's privacy settings redacted in some line (`"p"`), and what it redacted.
  var redactions: [String: RedactionMark] = [:]
  /// Per store, its latest record line since the last move line: the only base (`"z"`) its next record line may
  /// name.
  private var possibleBases: [String: (index: Int, chain: Int)] = [:]
  /// A version 1 file's history, decoded when it was read (a version 1 file can only be read by decoding it).
  var decodedRecords: [Record]?
  /// What the inspector shows besides the kept history; `nil` unless read for the inspector.
  var inspection: Inspection?
  var truncatedLine: Int?
  var completeByteCount = 0
  var lastHash: UInt64 = 0

  /// The index the next record gets.
  var nextIndex: Int { records.last.map { $0.index + 1 } ?? firstIndex }

  /// The line's bytes, newline excluded.
  func bytes(of line: Line) -> Data {
    data.subdata(in: line.range)
  }

  /// The lines of a version 2 or 3 file that the kept history leaves out, in the order of the file.
  struct Inspection: Sendable {
    /// Cursor moves (undo, redo, jumps), with the position each moved to.
    var moves: [(line: Line, index: Int)] = []
    /// Records dropped by a later record at their position or before it (a dispatch after moving back), each with
    /// the line number of that record.
    var replacedRecords: [(record: RecordLine, replacedBy: Int)] = []
    /// Snapshots dropped with them, each with the line number of the record that dropped it.
    var droppedSnapshots: [(index: Int, line: Line, droppedBy: Int)] = []
  }

  // MARK: - Reading

  /// Reads `data`.
  ///
  /// Without codecs (the inspector), the header's stores are not checked against an app's, and a version 1 file,
  /// which can only be read by decoding it, is refused. With `inspecting`, each line after the header must also be
  /// the JSON object of its kind (``LineCheck``: one more pass over its bytes, which loading leaves to the decoder
  /// of the records it needs), and ``inspection`` keeps the moves and the records and snapshots that were dropped.
  static func read(
    _ data: Data, path: String, codecs: SessionCodecs?, inspecting: Bool = false
  ) throws(SessionError) -> SessionIndex {
    // Line ranges, without their newlines; whatever follows the last newline is a line the writer did not finish.
    var ranges: [Range<Int>] = []
    var start = 0
    data.withUnsafeBytes { bytes in
      for offset in 0..<bytes.count where bytes[offset] == 0x0A {
        ranges.append(start..<offset)
        start = offset + 1
      }
    }
    let truncatedLine = start < data.count ? ranges.count + 1 : nil
    guard let headerRange = ranges.first else { throw .missingHeader(path: path) }
    let (version, stores) = try readHeader(data.subdata(in: headerRange), path: path, codecs: codecs)
    var index = SessionIndex(data: data, formatVersion: version, storeIdentifiers: stores.sorted())
    index.truncatedLine = truncatedLine
    index.completeByteCount = start
    if inspecting { index.inspection = Inspection() }
    if version == 1 {
      guard let codecs else {
        throw .unsupportedVersion(found: 1, supported: SessionFormat.version, line: 1)
      }
      try index.readVersion1(ranges.dropFirst(), codecs: codecs)
      return index
    }
    // Spelt as the writer spells a line's store (`JSONText`, which leaves `/` unescaped), not as `JSONEncoder` does.
    let storeBytes = stores.map { identifier in
      var json: [UInt8] = []
      JSONText.append(identifier, to: &json)
      return (identifier: identifier, json: json)
    }
    // One pass over the bytes in place: no line is copied.
    let failure = data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> SessionError? in
      var previous: UInt64 = 0
      for (offset, range) in ranges.enumerated() {
        let line = Line(number: offset + 1, range: range)
        let bytes = UnsafeRawBufferPointer(rebasing: raw[range.lowerBound..<range.upperBound])
        switch SessionHash.check(bytes, previous: previous) {
        case .missing where bytes.last == UInt8(ascii: "\r"):
          // Lines end in a newline alone: an editor or a transfer that wrote CRLF line ends changed every line.
          return .corruptLine(line: line.number, reason: "the line ends in a carriage return (CRLF line ends)")
        case .missing: return .corruptLine(line: line.number, reason: "the line has no hash")
        case .mismatch: return .integrityCheckFailed(line: line.number)
        case .valid(let hash): previous = hash
        }
        if offset == 0 { continue }
        do throws(SessionError) {
          let object = UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count - SessionHash.suffixLength)])
          try index.add(line, object: object, stores: storeBytes)
        } catch {
          return error
        }
      }
      index.lastHash = previous
      return nil
    }
    if let failure { throw failure }
    index.dropReadsOfReplacedRecords()
    index.snapshots = index.readSnapshots.inOrder()
    index.readSnapshots = SnapshotHeap()
    return index
  }

  private struct Version: Decodable {
    let format: String
    let version: Int
  }

  /// Checks the header line; returns the format version and the stores it lists.
  private static func readHeader(
    _ line: Data, path: String, codecs: SessionCodecs?
  ) throws(SessionError) -> (Int, [String]) {
    guard let version = try? JSONDecoder().decode(Version.self, from: line), version.format == SessionFormat.name
    else {
      throw .missingHeader(path: path)
    }
    guard (1...SessionFormat.version).contains(version.version) else {
      throw .unsupportedVersion(found: version.version, supported: SessionFormat.version, line: 1)
    }
    let header: SessionFormat.Header
    do {
      header = try JSONDecoder().decode(SessionFormat.Header.self, from: line)
    } catch let error as DecodingError {
      throw .corruptLine(line: 1, reason: error.shortDescription)
    } catch {
      throw .corruptLine(line: 1, reason: "\(error)")
    }
    for store in header.stores {
      guard let codecs else { continue }
      guard let codec = codecs.codecs[store.identifier] else {
        throw .unknownStore(identifier: store.identifier, line: 1)
      }
      if codec.modelTypeName != store.model {
        throw .typeMismatch(
          storeIdentifier: store.identifier, recorded: store.model, registered: codec.modelTypeName, line: 1)
      }
      if codec.actionTypeName != store.action {
        throw .typeMismatch(
          storeIdentifier: store.identifier, recorded: store.action, registered: codec.actionTypeName, line: 1)
      }
    }
    return (version.version, header.stores.map(\.identifier))
  }

  /// Reads the lines of a version 1 file: records (each its own dispatch) and cursor moves, decoded at once.
  private mutating func readVersion1(_ ranges: ArraySlice<Range<Int>>, codecs: SessionCodecs) throws(SessionError) {
    let decoder = JSONDecoder()
    decoder.userInfo[SessionFormat.LineDecoding.codecsKey] = codecs
    var decoded: [Record] = []
    for (offset, range) in ranges.enumerated() {
      let number = offset + 2
      let line: SessionFormat.Line
      do {
        line = try decoder.decode(SessionFormat.LineDecodingV1.self, from: data.subdata(in: range)).line
      } catch let error as SessionFormat.UnknownStore {
        throw .unknownStore(identifier: error.identifier, line: number)
      } catch let error as DecodingError {
        throw .corruptLine(line: number, reason: error.shortDescription)
      } catch {
        throw .corruptLine(line: number, reason: "\(error)")
      }
      switch line {
      case .record(let record):
        guard storeIdentifiers.contains(record.storeIdentifier) else {
          throw .unknownStore(identifier: record.storeIdentifier, line: number)
        }
        guard record.index >= 0, record.index <= decoded.count else { throw .invalidIndex(record.index, line: number) }
        decoded.removeSubrange(record.index...)
        records.removeSubrange(record.index...)
        decoded.append(record)
        records.append(
          RecordLine(line: Line(number: number, range: range), index: record.index, store: record.storeIdentifier))
        cursor = record.index
      case .move(let position):
        guard position >= -1, position < decoded.count else { throw .invalidIndex(position, line: number) }
        cursor = position
      default:
        throw .corruptLine(line: number, reason: "not a version 1 line")
      }
    }
    decodedRecords = decoded
  }

  /// Adds a version 2 or 3 line after the header.
  ///
  /// Checks that it continues the history as a recorder would.
  /// `object` is the line without its hash suffix (and so without its closing brace).
  private mutating func add(
    _ line: Line, object: UnsafeRawBufferPointer, stores: [(identifier: String, json: [UInt8])]
  ) throws(SessionError) {
    guard let fields = LinePrefix(bytes: object) else {
      throw .corruptLine(line: line.number, reason: "the line does not start with its kind")
    }
    if inspection != nil {
      var check = LineCheck(object, line: line.number)
      try check.checkObject(kind: fields.kind, stores: storeIdentifiers)
    }
    switch fields.kind {
    case UInt8(ascii: "r"):
      guard let position = fields.index else { throw .corruptLine(line: line.number, reason: LinePrefix.noPosition) }
      guard position == cursor + 1, position >= firstIndex else { throw .invalidIndex(position, line: line.number) }
      let prefix = LinePrefix.recordPrefix(in: object)
      let store = try Self.store(named: prefix.store, of: stores, line: line)
      if position - firstIndex < records.count {
        if inspection != nil {
          inspection!.replacedRecords += records[(position - firstIndex)...].map { ($0, line.number) }
        }
        if !reads.isEmpty {
          // The reads of the transactions whose first record goes, which keep none, as a recorder drops them.
          data.withUnsafeBytes { bytes in
            for line in records[(position - firstIndex)...] {
              guard let identity = RecordFields.identity(in: bytes, range: line.line.range), identity.change == 0
              else { continue }
              reads.removeValue(forKey: identity.transaction)
            }
          }
        }
        // The reads of the records removed here go once the last line is read (`dropReadsOfReplacedRecords()`):
        // filtering them at each replacement would cost every read kept, each time.
        records.removeSubrange((position - firstIndex)...)
      }
      if let last = readSnapshots.lastPosition, last > position {
        let dropped = readSnapshots.removeAll(after: position)
        if inspection != nil { inspection!.droppedSnapshots += dropped.map { ($0.index, $0.line, line.number) } }
      }
      let base = prefix.base
      let possible = possibleBases[store]
      if let base, base != possible?.index {
        throw .corruptLine(
          line: line.number,
          reason:
            "its lists' base \"z\": \(base) is not the store's previous record line since the last move")
      }
      // As a writer writes them: at most `maximumChain` lines with a base in a row, what reading one decodes.
      let chain = base == nil ? 0 : (possible?.chain ?? 0) + 1
      guard chain <= SessionFormat.Encoder.maximumChain else {
        throw .corruptLine(
          line: line.number,
          reason: "more than \(SessionFormat.Encoder.maximumChain) records in a row change the lists of the one before")
      }
      possibleBases[store] = (position, chain)
      records.append(RecordLine(line: line, index: position, store: store, base: base))
      if let mark = prefix.redaction {
        redactions[store] = mark.union(redactions[store] ?? RedactionMark())
      }
      cursor = position
    case UInt8(ascii: "m"):
      if inspection == nil {
        // Moves are few and short: each is checked whole, as the inspector checks every line.
        var check = LineCheck(object, line: line.number)
        try check.checkObject(kind: fields.kind, stores: storeIdentifiers)
      }
      guard let position = fields.index else {
        throw .corruptLine(line: line.number, reason: LinePrefix.noPosition)
      }
      guard position >= firstIndex - 1, position < nextIndex, position != cursor else {
        throw .invalidIndex(position, line: line.number)
      }
      inspection?.moves.append((line, position))
      cursor = position
      possibleBases.removeAll()
    case UInt8(ascii: "s"):
      guard let position = fields.index else { throw .corruptLine(line: line.number, reason: LinePrefix.noPosition) }
      // Positions count from 0; -1 stands for "before the first record" wherever a position is read.
      guard position >= 0 else { throw .invalidIndex(position, line: line.number) }
      if records.isEmpty && cursor == -1 && readSnapshots.isEmpty {
        firstIndex = position
        cursor = position - 1
      }
      guard position == cursor + 1 else { throw .invalidIndex(position, line: line.number) }
      // A snapshot taken after an undo is at an earlier position than one taken before the undo, which stays (the
      // history it holds is there until a record replaces it): they are put in order of position, after those at the
      // same one, once the file is read; a record drops those after it.
      readSnapshots.insert(line, at: position)
      for (store, mark) in LinePrefix.snapshotRedactions(in: object) {
        redactions[store] = mark.union(redactions[store] ?? RedactionMark())
      }
    case UInt8(ascii: "e"):
      guard let dispatch = LinePrefix.unsignedField(UInt8(ascii: "d"), in: object) else {
        throw .corruptLine(line: line.number, reason: "missing field \"d\"")
      }
      effects[TransactionID(rawValue: dispatch), default: []].append(line)
    case UInt8(ascii: "o"):
      let outcome: Outcome
      do {
        outcome = try JSONDecoder().decode(Outcome.self, from: data.subdata(in: line.range))
      } catch let error as DecodingError {
        throw .corruptLine(line: line.number, reason: error.shortDescription)
      } catch {
        throw .corruptLine(line: line.number, reason: "\(error)")
      }
      outcomes[TransactionID(rawValue: outcome.t)] = outcome
      outcomeLines.append(line)
    case UInt8(ascii: "w"):
      try addRead(line, object: object, position: fields.index, stores: stores)
    default:
      throw .corruptLine(line: line.number, reason: "unknown line kind")
    }
  }

  /// The store a record or read line names (`field`, its `"s"`), one of the header's `stores`, found by its JSON.
  /// - Throws: ``SessionError/unknownStore(identifier:line:)`` for another.
  private static func store(
    named field: UnsafeRawBufferPointer, of stores: [(identifier: String, json: [UInt8])], line: Line
  ) throws(SessionError) -> String {
    guard field.count > 0 else {
      throw .corruptLine(
        line: line.number,
        reason: "it names no store: no top-level field \"s\" before its action and model, or a key before it spelt "
          + "with an escape")
    }
    guard let store = stores.first(where: { field.elementsEqual($0.json) })?.identifier else {
      let name = try? JSONDecoder().decode(String.self, from: Data(field))
      throw .unknownStore(identifier: name ?? "?", line: line.number)
    }
    return store
  }

  /// Adds a read line (format 3): the record it names must be of the store it names, and in the history so far.
  private mutating func addRead(
    _ line: Line, object: UnsafeRawBufferPointer, position: Int?, stores: [(identifier: String, json: [UInt8])]
  ) throws(SessionError) {
    guard formatVersion >= 3 else {
      throw .corruptLine(line: line.number, reason: "a read line in a version \(formatVersion) file")
    }
    guard let position else { throw .corruptLine(line: line.number, reason: LinePrefix.noPosition) }
    // Any record before the history's first, or one in it up to the cursor: the store's model when it was read.
    guard position >= -1, position <= cursor else { throw .invalidIndex(position, line: line.number) }
    let store = try Self.store(named: LinePrefix.storeField(in: object), of: stores, line: line)
    if position >= firstIndex, records[position - firstIndex].store != store {
      throw .corruptLine(
        line: line.number,
        reason: "it reads record \(position) of \"\(store)\", a record of \"\(records[position - firstIndex].store)\"")
    }
    guard let transaction = LinePrefix.unsignedField(UInt8(ascii: "t"), in: object) else {
      throw .corruptLine(line: line.number, reason: "missing field \"t\"")
    }
    reads[TransactionID(rawValue: transaction), default: []].append(
      IndexedRead(
        read: RecordedRead(store: store, index: position), line: line,
        recordLine: position >= firstIndex ? records[position - firstIndex].line.number : nil))
  }

  /// Drops the reads of records that a later record replaced, once, after the last line.
  ///
  /// A read goes when the record at its position is no longer the line it read, or there is none.
  mutating func dropReadsOfReplacedRecords() {
    guard !reads.isEmpty else { return }
    reads = reads.compactMapValues { reads in
      let kept = reads.filter { read in
        guard let line = read.recordLine else { return true }
        let offset = read.read.index - firstIndex
        return offset >= 0 && offset < records.count && records[offset].line.number == line
      }
      return kept.isEmpty ? nil : kept
    }
  }
}

extension SessionIndex {
  /// The transaction an effect line names (`"t"`, proposal 0027), read from its bytes; `nil` for a line written
  /// before effect lines named one.
  func effectTransaction(of line: Line) -> TransactionID? {
    data.withUnsafeBytes { bytes in
      LinePrefix.unsignedField(UInt8(ascii: "t"), in: UnsafeRawBufferPointer(rebasing: bytes[line.range]))
        .map(TransactionID.init(rawValue:))
    }
  }
}

/// The start of a version 2 or 3 line, `{"k":"r","i":12,`, read without decoding the line or allocating.
private struct LinePrefix {
  static let opening = Array("{\"k\":\"".utf8)
  static let indexKey = Array(",\"i\":".utf8)
  static let snapshotRedactionKey = Array(",\"p\":{".utf8)
  /// Why a line of a kind with a position has none.
  static let noPosition = "its position, the field \"i\" right after \"k\", is not an integer of at most 18 digits"

  let kind: UInt8
  let index: Int?

  init?(bytes: UnsafeRawBufferPointer) {
    let opening = Self.opening
    guard bytes.count > opening.count + 2, bytes.starts(with: opening) else { return nil }
    kind = bytes[opening.count]
    guard bytes[opening.count + 1] == UInt8(ascii: "\"") else { return nil }
    let start = opening.count + 2
    guard Self.matches(Self.indexKey, in: bytes, at: start) else {
      index = nil
      return
    }
    index = Self.integer(in: bytes, at: start + Self.indexKey.count)
  }

  /// The JSON integer of at most 18 digits at `start`, if it is the whole value.
  ///
  /// The object ends or goes on after it. Anything else (`1e300`, `1abc`, `1.5`, `01`, 19 digits) is `nil`, read as
  /// a missing field and named by the caller.
  private static func integer(in bytes: UnsafeRawBufferPointer, at start: Int) -> Int? {
    var position = start
    var negative = false
    if position < bytes.count, bytes[position] == UInt8(ascii: "-") {
      negative = true
      position += 1
    }
    let first = position
    var value = 0
    while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
      value = value &* 10 &+ Int(bytes[position] - UInt8(ascii: "0"))
      position += 1
    }
    let digits = position - first
    guard digits > 0, digits <= 18, digits == 1 || bytes[first] != UInt8(ascii: "0"),
      position == bytes.count || bytes[position] == UInt8(ascii: ",")
    else { return nil }
    return negative ? -value : value
  }

  private static func matches(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer, at start: Int) -> Bool {
    guard start + needle.count <= bytes.count else { return false }
    for offset in needle.indices where bytes[start + offset] != needle[offset] { return false }
    return true
  }

  /// The keys a writer writes after a record line's transaction, dispatch, store, redaction mark and base: a field
  /// of those found after them is not the line's as a writer writes it, and is not looked for there.
  static let afterRecordPrefix: [UInt8] = [UInt8(ascii: "a"), UInt8(ascii: "m")]

  /// Calls `body` with each top-level field of a line's object, in order, until it returns `false`.
  ///
  /// `body` gets the field's key if it is one letter (`nil` for a longer one) and where its value is. The object's
  /// closing brace may be cut off with its hash. Each value is skipped whole, so one that holds `"s":` (an object, a
  /// string) is never taken for the line's field. Stops also at a key of `stops`, at a key that is not a plain string
  /// (an escape could spell a field's key in a way a decoder reads and this does not), or where the object is not
  /// JSON.
  static func forEachTopLevelField(
    in bytes: UnsafeRawBufferPointer, stoppingAt stops: [UInt8] = [], _ body: (UInt8?, Range<Int>) -> Bool
  ) {
    guard bytes.count > 1, bytes[0] == UInt8(ascii: "{") else { return }
    var position = 1
    while position < bytes.count, bytes[position] == UInt8(ascii: "\"") {
      guard let keyEnd = endOfString(at: position, in: bytes),
        !bytes[(position + 1)..<(keyEnd - 1)].contains(UInt8(ascii: "\\")),
        keyEnd < bytes.count, bytes[keyEnd] == UInt8(ascii: ":")
      else { return }
      let name: UInt8? = keyEnd - position == 3 ? bytes[position + 1] : nil
      if let name, stops.contains(name) { return }
      let valueStart = keyEnd + 1
      guard let valueEnd = endOfValue(at: valueStart, in: bytes), body(name, valueStart..<valueEnd),
        valueEnd < bytes.count, bytes[valueEnd] == UInt8(ascii: ",")
      else { return }
      position = valueEnd + 1
    }
  }

  /// Where the value of the top-level field `key` (one letter) is, the first if the key repeats, as the decoders
  /// take it; `nil` if ``forEachTopLevelField(in:stoppingAt:_:)`` stops before it.
  static func topLevelValue(
    _ key: UInt8, in bytes: UnsafeRawBufferPointer, stoppingAt stops: [UInt8] = []
  ) -> Range<Int>? {
    var found: Range<Int>?
    forEachTopLevelField(in: bytes, stoppingAt: stops) { name, value in
      guard name == key else { return true }
      found = value
      return false
    }
    return found
  }

  /// A record line's store (its JSON string, quotes included; empty if there is none), redaction mark and base,
  /// read in one pass over the fields a writer writes before the action and model.
  static func recordPrefix(
    in bytes: UnsafeRawBufferPointer
  ) -> (store: UnsafeRawBufferPointer, redaction: RedactionMark?, base: Int?) {
    var store: Range<Int>?
    var redaction: Range<Int>?
    var base: Range<Int>?
    forEachTopLevelField(in: bytes, stoppingAt: afterRecordPrefix) { name, value in
      switch name {
      case UInt8(ascii: "s"): store = store ?? value
      case UInt8(ascii: "p"): redaction = redaction ?? value
      case UInt8(ascii: "z"): base = base ?? value
      default: break
      }
      return true
    }
    return (
      store.map { string(at: $0, in: bytes) } ?? UnsafeRawBufferPointer(start: nil, count: 0),
      redaction.map { Self.redaction(at: $0, in: bytes) }, base.map { Self.base(at: $0, in: bytes) }
    )
  }

  /// The JSON string at `range`, quotes included; empty if the value there is not a string.
  private static func string(at range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
    guard bytes[range.lowerBound] == UInt8(ascii: "\"") else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    return UnsafeRawBufferPointer(rebasing: bytes[range])
  }

  /// The position after the JSON value that starts at `start`: a string, an object or array (its strings skipped
  /// whole), or a number or literal (up to the next `,`, `}` or `]`).
  private static func endOfValue(at start: Int, in bytes: UnsafeRawBufferPointer) -> Int? {
    guard start < bytes.count else { return nil }
    switch bytes[start] {
    case UInt8(ascii: "\""):
      return endOfString(at: start, in: bytes)
    case UInt8(ascii: "{"), UInt8(ascii: "["):
      var depth = 0
      var position = start
      while position < bytes.count {
        switch bytes[position] {
        case UInt8(ascii: "\""):
          guard let end = endOfString(at: position, in: bytes) else { return nil }
          position = end
          continue
        case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
          depth -= 1
          if depth == 0 { return position + 1 }
        default: break
        }
        position += 1
      }
      return nil
    default:
      var position = start
      while position < bytes.count, bytes[position] != UInt8(ascii: ","), bytes[position] != UInt8(ascii: "}"),
        bytes[position] != UInt8(ascii: "]")
      {
        position += 1
      }
      return position > start ? position : nil
    }
  }

  /// The JSON string of a read line's top-level `"s"`, quotes included; empty if there is none.
  static func storeField(in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
    guard let range = topLevelValue(UInt8(ascii: "s"), in: bytes) else {
      return UnsafeRawBufferPointer(start: nil, count: 0)
    }
    return string(at: range, in: bytes)
  }

  /// The base of a record line's list changes (`"z":11`) at `range`; `-1` if it is not a JSON integer of at most 18
  /// digits, or negative.
  private static func base(at range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> Int {
    guard let base = integer(in: bytes, at: range.lowerBound), base >= 0 else { return -1 }
    return base
  }

  /// The redaction mark of a record line (`"p":"am"`) at `range`; a mark that is not a string of one of the three
  /// counts as both: never fail open.
  private static func redaction(at range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> RedactionMark {
    guard bytes[range.lowerBound] == UInt8(ascii: "\"") else { return RedactionMark(model: true, action: true) }
    var position = range.lowerBound + 1
    let textStart = position
    while position < bytes.count, bytes[position] != UInt8(ascii: "\""), position - textStart < 3 { position += 1 }
    return RedactionMark(text: String(decoding: bytes[textStart..<position], as: UTF8.self))
      ?? RedactionMark(model: true, action: true)
  }

  /// The redaction marks right after the position of a snapshot line (`{"k":"s","i":3,"p":{"auth":"m"},…`).
  static func snapshotRedactions(in bytes: UnsafeRawBufferPointer) -> [String: RedactionMark] {
    var position = opening.count + 2 + indexKey.count
    while position < bytes.count, bytes[position] != UInt8(ascii: ",") { position += 1 }
    guard matches(snapshotRedactionKey, in: bytes, at: position) else { return [:] }
    let objectStart = position + snapshotRedactionKey.count - 1
    position = objectStart + 1
    while position < bytes.count, bytes[position] != UInt8(ascii: "}") {
      if bytes[position] == UInt8(ascii: "\""), let end = endOfString(at: position, in: bytes) {
        position = end
      } else {
        position += 1
      }
    }
    guard position < bytes.count,
      let marks = try? JSONDecoder().decode([String: String].self, from: Data(bytes[objectStart...position]))
    else { return [:] }
    return marks.mapValues { RedactionMark(text: $0) ?? RedactionMark(model: true, action: true) }
  }

  /// The position after the JSON string whose opening quote is at `start`.
  private static func endOfString(at start: Int, in bytes: UnsafeRawBufferPointer) -> Int? {
    var position = start + 1
    while position < bytes.count, bytes[position] != UInt8(ascii: "\"") {
      if bytes[position] == UInt8(ascii: "\\") { position += 1 }
      position += 1
    }
    return position < bytes.count ? position + 1 : nil
  }

  /// The unsigned integer of the top-level field `key` (such as `"d"`), if it is one of at most 20 digits.
  static func unsignedField(_ key: UInt8, in bytes: UnsafeRawBufferPointer) -> UInt64? {
    guard let range = topLevelValue(key, in: bytes) else { return nil }
    var position = range.lowerBound
    var value: UInt64 = 0
    var digits = 0
    while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9"),
      digits < 20
    {
      let (times, overflow) = value.multipliedReportingOverflow(by: 10)
      guard !overflow else { return nil }
      let (sum, carry) = times.addingReportingOverflow(UInt64(bytes[position] - UInt8(ascii: "0")))
      guard !carry else { return nil }
      value = sum
      position += 1
      digits += 1
    }
    return digits > 0 && position == range.upperBound ? value : nil
  }
}

/// The byte ranges of a record line's top-level values, found by scanning the JSON rather than decoding it: what
/// ``Session/verify(against:mode:)`` needs to re-run a record without decoding its model.
struct RecordFields {
  var transaction: Range<Int>?
  var dispatch: Range<Int>?
  var action: Range<Int>?
  var model: Range<Int>?
  var error: Range<Int>?
  var change: Range<Int>?
  /// `"c"`: the dispatch was cancelled while the transaction ran.
  var cancelled: Range<Int>?
  /// `"b"`: the record puts the store back after its all-or-nothing dispatch failed.
  var rollback: Range<Int>?
  /// `"u"`: the transaction did not change the model (undo steps over the record).
  var unchanged: Range<Int>?
  /// `"l"`: the paths of the lists written in their list forms (format 3).
  var lists: Range<Int>?
  /// Whether the fields after a long model were read back from the line's end rather than found by scanning the
  /// model (``init(_:range:readingLongModelsFromTheEnd:)``).
  private(set) var fromEnd = false

  /// The fewest bytes from the model's start to the line's end for the fields after the model to be read from the
  /// line's end, when that is allowed.
  static let longModel = 4_096

  /// Scans the object in `bytes[range]`; `nil` if it is not a flat JSON object as a writer makes it.
  ///
  /// With `readingLongModelsFromTheEnd`, when the model and what follows it are ``longModel`` bytes or more, the
  /// fields after the model are read backwards from the line's end while they are strings, numbers, literals or
  /// arrays, and the model is taken to end where they begin (``fromEnd``), without a scan of the model. For a line
  /// as a writer makes it, that is exact. For one with an object-valued field after the model, the model found is
  /// that field too and the fields before it are missed: the model's bytes then never equal a JSON value, as a
  /// complete value cannot be followed by more. So the model found and the fields read are the line's once the
  /// model's bytes compared equal to a value's encoding; a reader that acts on them otherwise checks them against a
  /// full scan first.
  init?(_ bytes: UnsafeRawBufferPointer, range: Range<Int>, readingLongModelsFromTheEnd: Bool = false) {
    var position = range.lowerBound
    let end = range.upperBound
    func skipString() -> Bool {
      // At an opening quote; moves past the closing one.
      position += 1
      while position < end {
        switch bytes[position] {
        case UInt8(ascii: "\\"): position += 2
        case UInt8(ascii: "\""):
          position += 1
          return true
        default: position += 1
        }
      }
      return false
    }
    guard position < end, bytes[position] == UInt8(ascii: "{") else { return nil }
    position += 1
    // The one-letter keys read so far: a field given twice is not as a writer writes a line.
    var seen: UInt32 = 0
    while position < end, bytes[position] == UInt8(ascii: "\"") {
      let keyStart = position + 1
      guard skipString(), position < end, bytes[position] == UInt8(ascii: ":"),
        Self.isPlainKey(bytes, keyStart..<(position - 1))
      else { return nil }
      let key = position - keyStart == 2 ? bytes[keyStart] : 0  // one-letter keys only matter
      guard Self.note(key, in: &seen) else { return nil }
      position += 1
      let valueStart = position
      if key == UInt8(ascii: "m"), readingLongModelsFromTheEnd, end - valueStart >= Self.longModel,
        let modelEnd = readFromEnd(bytes, modelStart: valueStart, end: end, seen: seen)
      {
        model = valueStart..<modelEnd
        fromEnd = true
        return
      }
      var depth = 0
      scan: while position < end {
        switch bytes[position] {
        case UInt8(ascii: "\""):
          guard skipString() else { return nil }
          continue
        case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
          if depth == 0 { break scan }
          depth -= 1
        case UInt8(ascii: ","):
          if depth == 0 { break scan }
        default: break
        }
        position += 1
      }
      set(key, valueStart..<position)
      guard position < end else { return nil }
      if bytes[position] == UInt8(ascii: "}") { return }
      position += 1  // ","
    }
    return nil
  }

  /// Whether the key whose bytes, between its quotes, are `key` is spelt as a writer spells keys.
  ///
  /// ASCII, without escapes. A decoder reads a key spelt otherwise as the letter it stands for (`"\u006d"` is `"m"`),
  /// where this reading takes bytes: such a line is not read here.
  private static func isPlainKey(_ bytes: UnsafeRawBufferPointer, _ key: Range<Int>) -> Bool {
    for offset in key where bytes[offset] == UInt8(ascii: "\\") || bytes[offset] >= 0x80 { return false }
    return true
  }

  /// Notes the one-letter key `key` (0 for any other) in `seen`; `false` if it was there: a field given twice, which
  /// a decoder reads as its first and this reading as its last.
  private static func note(_ key: UInt8, in seen: inout UInt32) -> Bool {
    guard key >= UInt8(ascii: "a"), key <= UInt8(ascii: "z") else { return true }
    let bit: UInt32 = 1 << UInt32(key - UInt8(ascii: "a"))
    guard seen & bit == 0 else { return false }
    seen |= bit
    return true
  }

  /// Sets the field of one-letter key `key` (0 for any other key, which is not kept) to `value`.
  private mutating func set(_ key: UInt8, _ value: Range<Int>) {
    switch key {
    case UInt8(ascii: "t"): transaction = value
    case UInt8(ascii: "d"): dispatch = value
    case UInt8(ascii: "a"): action = value
    case UInt8(ascii: "m"): model = value
    case UInt8(ascii: "e"): error = value
    case UInt8(ascii: "n"): change = value
    case UInt8(ascii: "c"): cancelled = value
    case UInt8(ascii: "b"): rollback = value
    case UInt8(ascii: "u"): unchanged = value
    case UInt8(ascii: "l"): lists = value
    default: break
    }
  }

  /// Reads the fields after the model backwards from the line's end, the closing brace at `end - 1`.
  ///
  /// Reads while their values are strings, numbers, literals or arrays, and sets them as the scan forward would (a
  /// key given twice, here or before the model, `seen`, is refused). Returns where the model ends, the comma before
  /// the first field read (or the closing brace); `nil`, having set nothing, if the end is not a sequence of such
  /// fields.
  private mutating func readFromEnd(
    _ bytes: UnsafeRawBufferPointer, modelStart: Int, end: Int, seen keysBefore: UInt32
  ) -> Int? {
    var seen = keysBefore
    var position = end - 1
    guard position > modelStart, bytes[position] == UInt8(ascii: "}") else { return nil }
    // Last first.
    var read: [(key: UInt8, value: Range<Int>)] = []
    while let valueStart = Self.valueStart(bytes, before: position, floor: modelStart) {
      // `"key":` before the value, and the comma before the key.
      guard valueStart - 2 > modelStart, bytes[valueStart - 1] == UInt8(ascii: ":"),
        bytes[valueStart - 2] == UInt8(ascii: "\""),
        let keyStart = Self.stringStart(bytes, closingAt: valueStart - 2, floor: modelStart)
      else { return nil }
      let key = valueStart - 2 - keyStart == 2 ? bytes[keyStart + 1] : 0
      // `"m"` is in `seen`: a second model is refused as any field given twice.
      guard keyStart - 1 > modelStart, bytes[keyStart - 1] == UInt8(ascii: ","),
        Self.isPlainKey(bytes, (keyStart + 1)..<(valueStart - 2)), Self.note(key, in: &seen)
      else { return nil }
      read.append((key, valueStart..<position))
      position = keyStart - 1
    }
    // In the line's order, after those before the model.
    for field in read.reversed() { set(field.key, field.value) }
    return position
  }

  /// Where the string, number, literal or array that ends just before `end` begins; `nil` for an object, or
  /// anything else, or one that begins before `floor`.
  private static func valueStart(_ bytes: UnsafeRawBufferPointer, before end: Int, floor: Int) -> Int? {
    let last = end - 1
    guard last > floor else { return nil }
    switch bytes[last] {
    case UInt8(ascii: "\""):
      return stringStart(bytes, closingAt: last, floor: floor)
    case UInt8(ascii: "0")...UInt8(ascii: "9"):
      var start = last
      while start - 1 > floor {
        switch bytes[start - 1] {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
          UInt8(ascii: "e"), UInt8(ascii: "E"):
          start -= 1
          continue
        default: break
        }
        break
      }
      return start
    case UInt8(ascii: "e"), UInt8(ascii: "l"):
      for literal in ["true", "false", "null"] where last - literal.utf8.count >= floor {
        let start = last + 1 - literal.utf8.count
        if UnsafeRawBufferPointer(rebasing: bytes[start...last]).elementsEqual(literal.utf8) { return start }
      }
      return nil
    case UInt8(ascii: "]"):
      var depth = 0
      var position = last
      while position > floor {
        switch bytes[position] {
        case UInt8(ascii: "]"), UInt8(ascii: "}"): depth += 1
        case UInt8(ascii: "["), UInt8(ascii: "{"):
          depth -= 1
          if depth == 0 { return position }
        case UInt8(ascii: "\""):
          guard let start = stringStart(bytes, closingAt: position, floor: floor) else { return nil }
          position = start
        default: break
        }
        position -= 1
      }
      return nil
    default:
      return nil
    }
  }

  /// Where the string whose closing quote is at `closing` opens: the first quote before it that no backslash
  /// escapes, as a string holds no other; `nil` if there is none after `floor`.
  private static func stringStart(_ bytes: UnsafeRawBufferPointer, closingAt closing: Int, floor: Int) -> Int? {
    // A quote that a backslash escapes closes nothing.
    guard backslashes(bytes, before: closing, floor: floor) % 2 == 0 else { return nil }
    var position = closing - 1
    while position > floor {
      if bytes[position] == UInt8(ascii: "\"") {
        let backslashes = backslashes(bytes, before: position, floor: floor)
        if backslashes % 2 == 0 { return position }
        position -= backslashes
      }
      position -= 1
    }
    return nil
  }

  /// How many backslashes come just before `position`, after `floor`.
  private static func backslashes(_ bytes: UnsafeRawBufferPointer, before position: Int, floor: Int) -> Int {
    var count = 0
    while position - count - 1 > floor, bytes[position - count - 1] == UInt8(ascii: "\\") { count += 1 }
    return count
  }

  /// Whether `range` holds the JSON literal `true`.
  static func isTrue(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>?) -> Bool {
    guard let range, range.count == 4 else { return false }
    return bytes[range.lowerBound] == UInt8(ascii: "t") && bytes[range.lowerBound + 1] == UInt8(ascii: "r")
      && bytes[range.lowerBound + 2] == UInt8(ascii: "u") && bytes[range.lowerBound + 3] == UInt8(ascii: "e")
  }

  /// The unsigned integer in `range`.
  static func unsigned(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>?) -> UInt64? {
    guard let range, !range.isEmpty else { return nil }
    var value: UInt64 = 0
    for position in range {
      let byte = bytes[position]
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
      let (times, overflow) = value.multipliedReportingOverflow(by: 10)
      // The addition too: 1844674407370955161 times 10 fits, plus 9 does not (it would wrap to a small number).
      let (sum, carry) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
      guard !overflow, !carry else { return nil }
      value = sum
    }
    return value
  }

  /// Whether `range` is absent or holds an unsigned integer (``unsigned(_:_:)``) up to `maximum`: an optional field
  /// as a writer writes it.
  static func isUnsignedIfPresent(
    _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>?, maximum: UInt64 = .max
  ) -> Bool {
    guard let range else { return true }
    return unsigned(bytes, range).map { $0 <= maximum } ?? false
  }

  /// The most a record's change number (`"n"`) can be: the decoder reads it as a `UInt32`.
  static let maximumChange = UInt64(UInt32.max)
}

/// Checks that a version 2 or 3 line after the header is the JSON object of its kind: valid JSON (RFC 8259, in UTF-8)
/// whose fields have the types the format gives them, the required ones present and none twice.
///
/// One pass over the line in place, without decoding it. The inspector embeds lines as they are written, so a line
/// whose hash is valid but whose content is not (written by something else, or edited and re-hashed) is refused
/// here rather than breaking the page. Fields the format does not have are allowed, as the decoder allows them.
struct LineCheck {
  /// The deepest nesting of objects and arrays a line may hold, its own object included: as deep as `JSONDecoder`
  /// reads.
  static let maximumDepth = 512

  /// What a value is, as far as the fields of a line care.
  enum Value: Equatable {
    case string, number, object, array, boolean, null
    /// An integer, without fraction or exponent: its sign, its digits, and its magnitude if it fits in 64 bits.
    case integer(negative: Bool, digits: Int, magnitude: UInt64?)

    var isUnsigned: Bool {
      if case .integer(false, _, .some) = self { return true }
      return false
    }

    /// An integer the index reads exactly from the line's start (at most 18 digits).
    var isPosition: Bool {
      if case .integer(_, let digits, .some) = self { return digits <= 18 }
      return false
    }
  }

  /// The fields of version 2 and 3 lines; the raw value is a bit in a set of them.
  private enum Field: UInt32 {
    case k = 1, i = 2, t = 4, d = 8, s = 16, a = 32, m = 64, e = 128, c = 256, f = 512, key = 1024, v = 2048
    case h = 4096, u = 8192, p = 16384, n = 32768, b = 65536, z = 131_072, l = 262_144

    init?(_ name: UnsafeRawBufferPointer) {
      if name.count == 3 {
        guard name[0] == UInt8(ascii: "k"), name[1] == UInt8(ascii: "e"), name[2] == UInt8(ascii: "y") else {
          return nil
        }
        self = .key
        return
      }
      guard name.count == 1 else { return nil }
      switch name[0] {
      case UInt8(ascii: "k"): self = .k
      case UInt8(ascii: "i"): self = .i
      case UInt8(ascii: "t"): self = .t
      case UInt8(ascii: "d"): self = .d
      case UInt8(ascii: "s"): self = .s
      case UInt8(ascii: "a"): self = .a
      case UInt8(ascii: "m"): self = .m
      case UInt8(ascii: "e"): self = .e
      case UInt8(ascii: "c"): self = .c
      case UInt8(ascii: "f"): self = .f
      case UInt8(ascii: "v"): self = .v
      case UInt8(ascii: "h"): self = .h
      case UInt8(ascii: "u"): self = .u
      case UInt8(ascii: "p"): self = .p
      case UInt8(ascii: "n"): self = .n
      case UInt8(ascii: "b"): self = .b
      case UInt8(ascii: "z"): self = .z
      case UInt8(ascii: "l"): self = .l
      default: return nil
      }
    }

    var name: String {
      switch self {
      case .k: "k"
      case .i: "i"
      case .t: "t"
      case .d: "d"
      case .s: "s"
      case .a: "a"
      case .m: "m"
      case .e: "e"
      case .c: "c"
      case .f: "f"
      case .key: "key"
      case .v: "v"
      case .h: "h"
      case .u: "u"
      case .p: "p"
      case .n: "n"
      case .b: "b"
      case .z: "z"
      case .l: "l"
      }
    }
  }

  /// The line's object without its hash suffix, and so without its closing brace (`{"k":"r","i":0,…`).
  private let bytes: UnsafeRawBufferPointer
  private let line: Int
  private var position = 0

  /// - Parameters:
  ///   - object: The line's bytes before its hash suffix, `,"h":"…"}`.
  ///   - line: Its 1-based line number, for errors.
  init(_ object: UnsafeRawBufferPointer, line: Int) {
    self.bytes = object
    self.line = line
  }

  // MARK: - Lines

  /// Checks the line as a line of `kind` (`r`, `m`, `s`, `e`, `o` or `w`; another kind is left to the caller to refuse),
  /// whose stores are among `stores`.
  mutating func checkObject(kind: UInt8, stores: [String]) throws(SessionError) {
    guard bytes.first == UInt8(ascii: "{") else { throw notJSON("expected \"{\"") }
    position = 1
    let required: UInt32
    switch kind {
    case UInt8(ascii: "r"):
      required = Field.i.rawValue | Field.t.rawValue | Field.s.rawValue | Field.a.rawValue | Field.m.rawValue
    case UInt8(ascii: "m"): required = Field.i.rawValue
    case UInt8(ascii: "s"): required = Field.i.rawValue | Field.m.rawValue
    case UInt8(ascii: "e"): required = Field.d.rawValue | Field.key.rawValue
    case UInt8(ascii: "o"): required = Field.t.rawValue
    case UInt8(ascii: "w"): required = Field.i.rawValue | Field.t.rawValue | Field.s.rawValue
    default: required = 0
    }
    var seen: UInt32 = 0
    var storeMaps: [Range<Int>] = []
    // The members, up to the end of the bytes, where the hash suffix continues the object.
    while true {
      skipWhitespace()
      guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
        throw notJSON("expected a field name")
      }
      let nameStart = position + 1
      try string()
      let name = UnsafeRawBufferPointer(rebasing: bytes[nameStart..<(position - 1)])
      // A field named with escapes ("\u0074" is "t") would be read as another field than the one checked.
      guard !name.contains(UInt8(ascii: "\\")) else {
        throw .corruptLine(line: line, reason: "a field name holds an escape at column \(nameStart + 1)")
      }
      let field = Field(name)
      skipWhitespace()
      guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw notJSON("expected \":\"") }
      position += 1
      skipWhitespace()
      let valueStart = position
      let value = try self.value(depth: 2)
      if let field {
        guard seen & field.rawValue == 0, field != .h else {
          throw .corruptLine(line: line, reason: "the field \"\(field.name)\" appears twice")
        }
        seen |= field.rawValue
        if let expected = Self.type(of: field, kind: kind) {
          guard expected.matches(value) else {
            throw .corruptLine(
              line: line, reason: "the field \"\(field.name)\" of \(Self.kindName(kind)) must be \(expected.name)")
          }
          if kind == UInt8(ascii: "s"), field == .m || field == .a || field == .p {
            storeMaps.append(valueStart..<position)
          }
        }
      }
      skipWhitespace()
      if position == bytes.count { break }
      guard bytes[position] == UInt8(ascii: ",") else { throw notJSON("expected \",\" or the end of the object") }
      position += 1
    }
    if seen & required != required {
      let missing = [Field.i, .t, .d, .s, .a, .m, .key, .v].first { required & ~seen & $0.rawValue != 0 }!
      throw .corruptLine(line: line, reason: "\(Self.kindName(kind)) has no field \"\(missing.name)\"")
    }
    if kind == UInt8(ascii: "e") {
      // A value, or the error of a fetch that threw: one of the two.
      switch seen & (Field.v.rawValue | Field.e.rawValue) {
      case 0: throw .corruptLine(line: line, reason: "an effect has no field \"v\" or \"e\"")
      case Field.v.rawValue | Field.e.rawValue:
        throw .corruptLine(line: line, reason: "an effect has both the fields \"v\" and \"e\"")
      default: break
      }
    }
    for map in storeMaps { try checkStoreKeys(in: map, stores: stores) }
  }

  /// The types of the fields of each kind, where the format gives one.
  private enum FieldType {
    case any, string, boolean, object, array, unsigned, position

    var name: String {
      switch self {
      case .any: "a value"
      case .string: "a string"
      case .boolean: "true or false"
      case .object: "an object"
      case .array: "an array"
      case .unsigned: "an unsigned integer"
      case .position: "an integer of at most 18 digits"
      }
    }

    func matches(_ value: Value) -> Bool {
      switch self {
      case .any: true
      case .string: value == .string
      case .boolean: value == .boolean
      case .object: value == .object
      case .array: value == .array
      case .unsigned: value.isUnsigned
      case .position: value.isPosition
      }
    }
  }

  private static func type(of field: Field, kind: UInt8) -> FieldType? {
    switch (kind, field) {
    case (_, .k): .string
    case (UInt8(ascii: "r"), .i), (UInt8(ascii: "m"), .i), (UInt8(ascii: "s"), .i), (UInt8(ascii: "w"), .i): .position
    case (UInt8(ascii: "r"), .t), (UInt8(ascii: "r"), .d), (UInt8(ascii: "r"), .f), (UInt8(ascii: "r"), .n),
      (UInt8(ascii: "r"), .z), (UInt8(ascii: "e"), .d), (UInt8(ascii: "e"), .t), (UInt8(ascii: "o"), .t),
      (UInt8(ascii: "w"), .t):
      .unsigned
    case (UInt8(ascii: "r"), .s), (UInt8(ascii: "r"), .e), (UInt8(ascii: "e"), .key), (UInt8(ascii: "e"), .e),
      (UInt8(ascii: "o"), .e), (UInt8(ascii: "w"), .s):
      .string
    case (UInt8(ascii: "r"), .a), (UInt8(ascii: "r"), .m), (UInt8(ascii: "e"), .v): .any
    case (UInt8(ascii: "r"), .c), (UInt8(ascii: "r"), .u), (UInt8(ascii: "r"), .b), (UInt8(ascii: "o"), .c): .boolean
    case (UInt8(ascii: "s"), .m), (UInt8(ascii: "s"), .a), (UInt8(ascii: "s"), .p): .object
    case (UInt8(ascii: "r"), .p): .string
    case (UInt8(ascii: "r"), .l): .array
    default: nil
    }
  }

  private static func kindName(_ kind: UInt8) -> String {
    switch kind {
    case UInt8(ascii: "r"): "a record"
    case UInt8(ascii: "m"): "a move"
    case UInt8(ascii: "s"): "a snapshot"
    case UInt8(ascii: "e"): "an effect"
    case UInt8(ascii: "o"): "an outcome"
    case UInt8(ascii: "w"): "a read"
    default: "the line"
    }
  }

  /// Checks that the keys of the object in `range`, already checked as JSON, are stores of the header.
  private func checkStoreKeys(in range: Range<Int>, stores: [String]) throws(SessionError) {
    var scan = self
    scan.position = range.lowerBound + 1
    while true {
      scan.skipWhitespace()
      if bytes[scan.position] == UInt8(ascii: "}") { return }
      if bytes[scan.position] == UInt8(ascii: ",") {
        scan.position += 1
        scan.skipWhitespace()
      }
      let nameStart = scan.position
      try scan.string()
      let name = UnsafeRawBufferPointer(rebasing: bytes[nameStart..<scan.position])
      let store = (try? JSONDecoder().decode(String.self, from: Data(name))) ?? ""
      guard stores.contains(store) else { throw .unknownStore(identifier: store, line: line) }
      scan.skipWhitespace()
      scan.position += 1  // ":"
      _ = try scan.value(depth: 3)
    }
  }

  // MARK: - JSON

  private func notJSON(_ what: String) -> SessionError {
    .corruptLine(line: line, reason: "not JSON: \(what) at column \(position + 1)")
  }

  private mutating func skipWhitespace() {
    while position < bytes.count {
      switch bytes[position] {
      case 0x20, 0x09, 0x0A, 0x0D: position += 1
      default: return
      }
    }
  }

  /// Checks the value at `position`, nested in `depth - 1` objects and arrays, and moves past it.
  private mutating func value(depth: Int) throws(SessionError) -> Value {
    guard position < bytes.count else { throw notJSON("expected a value") }
    switch bytes[position] {
    case UInt8(ascii: "\""):
      try string()
      return .string
    case UInt8(ascii: "{"), UInt8(ascii: "["):
      guard depth <= Self.maximumDepth else {
        throw .corruptLine(line: line, reason: "nested deeper than \(Self.maximumDepth) levels")
      }
      return try container(depth: depth)
    case UInt8(ascii: "t"):
      try literal("true")
      return .boolean
    case UInt8(ascii: "f"):
      try literal("false")
      return .boolean
    case UInt8(ascii: "n"):
      try literal("null")
      return .null
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
      return try number()
    default:
      throw notJSON("expected a value")
    }
  }

  /// An object or an array, at its opening bracket.
  private mutating func container(depth: Int) throws(SessionError) -> Value {
    let isObject = bytes[position] == UInt8(ascii: "{")
    let closing = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
    position += 1
    skipWhitespace()
    if position < bytes.count, bytes[position] == closing {
      position += 1
      return isObject ? .object : .array
    }
    while true {
      if isObject {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw notJSON("expected a key") }
        try string()
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw notJSON("expected \":\"") }
        position += 1
        skipWhitespace()
      }
      _ = try value(depth: depth + 1)
      skipWhitespace()
      guard position < bytes.count else { throw notJSON("expected \"\(Character(Unicode.Scalar(closing)))\"") }
      if bytes[position] == closing {
        position += 1
        return isObject ? .object : .array
      }
      guard bytes[position] == UInt8(ascii: ",") else {
        throw notJSON("expected \",\" or \"\(Character(Unicode.Scalar(closing)))\"")
      }
      position += 1
      skipWhitespace()
    }
  }

  private mutating func literal(_ word: StaticString) throws(SessionError) {
    let count = word.utf8CodeUnitCount
    guard position + count <= bytes.count else { throw notJSON("expected a value") }
    for offset in 0..<count where bytes[position + offset] != word.utf8Start[offset] {
      throw notJSON("expected a value")
    }
    position += count
  }

  private mutating func number() throws(SessionError) -> Value {
    var negative = false
    if bytes[position] == UInt8(ascii: "-") {
      negative = true
      position += 1
    }
    let digitsStart = position
    var magnitude: UInt64? = 0
    while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
      if let value = magnitude {
        let (times, overflow) = value.multipliedReportingOverflow(by: 10)
        let (sum, carry) = times.addingReportingOverflow(UInt64(bytes[position] - UInt8(ascii: "0")))
        magnitude = overflow || carry ? nil : sum
      }
      position += 1
    }
    let digits = position - digitsStart
    guard digits > 0 else { throw notJSON("expected a digit") }
    guard digits == 1 || bytes[digitsStart] != UInt8(ascii: "0") else { throw notJSON("a number starts with 0") }
    var integer = true
    if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
      integer = false
      position += 1
      try someDigits()
    }
    if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
      integer = false
      position += 1
      if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
        position += 1
      }
      try someDigits()
    }
    return integer ? .integer(negative: negative, digits: digits, magnitude: magnitude) : .number
  }

  private mutating func someDigits() throws(SessionError) {
    let start = position
    while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
      position += 1
    }
    guard position > start else { throw notJSON("expected a digit") }
  }

  /// A string, at its opening quote: escapes as JSON has them, no control characters, UTF-8 (RFC 3629).
  private mutating func string() throws(SessionError) {
    position += 1
    while position < bytes.count {
      let byte = bytes[position]
      if byte == UInt8(ascii: "\"") {
        position += 1
        return
      }
      if byte == UInt8(ascii: "\\") {
        guard position + 1 < bytes.count else { break }
        switch bytes[position + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
          UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
          position += 2
        case UInt8(ascii: "u"):
          guard position + 6 <= bytes.count,
            (2..<6).allSatisfy({ Character(Unicode.Scalar(bytes[position + $0])).isHexDigit })
          else { throw notJSON("expected four hexadecimal digits") }
          position += 6
        default:
          throw notJSON("an unknown escape")
        }
      } else if byte < 0x20 {
        throw notJSON("a control character in a string")
      } else if byte < 0x80 {
        position += 1
      } else {
        try utf8Sequence(byte)
      }
    }
    throw notJSON("the string does not end")
  }

  /// A UTF-8 sequence of two to four bytes, at its first byte, `lead`.
  private mutating func utf8Sequence(_ lead: UInt8) throws(SessionError) {
    let count: Int
    var low: UInt8 = 0x80
    var high: UInt8 = 0xBF
    switch lead {
    case 0xC2...0xDF: count = 2
    case 0xE0:
      count = 3
      low = 0xA0
    case 0xE1...0xEC, 0xEE...0xEF: count = 3
    case 0xED:
      count = 3
      high = 0x9F
    case 0xF0:
      count = 4
      low = 0x90
    case 0xF1...0xF3: count = 4
    case 0xF4:
      count = 4
      high = 0x8F
    default: throw .corruptLine(line: line, reason: "not UTF-8 at column \(position + 1)")
    }
    guard position + count <= bytes.count, bytes[position + 1] >= low, bytes[position + 1] <= high,
      (2..<count).allSatisfy({ bytes[position + $0] & 0xC0 == 0x80 })
    else { throw .corruptLine(line: line, reason: "not UTF-8 at column \(position + 1)") }
    position += count
  }
}

extension RecordFields {
  /// The transaction, dispatch and change of the record line at `range`, read from its bytes without decoding it;
  /// `nil` if it has no transaction as a writer writes one.
  ///
  /// What a record left out of a history leaves (its transaction's reads, its dispatch's effects) is found by these.
  /// The line is scanned in full: these fields come after the model, and read from a long line's end they may not be
  /// the line's (``init(_:range:readingLongModelsFromTheEnd:)``).
  static func identity(
    in bytes: UnsafeRawBufferPointer, range: Range<Int>
  ) -> (transaction: TransactionID, dispatch: TransactionID, change: UInt64)? {
    guard let fields = RecordFields(bytes, range: range),
      let transaction = unsigned(bytes, fields.transaction),
      isUnsignedIfPresent(bytes, fields.dispatch), isUnsignedIfPresent(bytes, fields.change, maximum: maximumChange)
    else { return nil }
    let dispatch = unsigned(bytes, fields.dispatch) ?? transaction
    return (
      TransactionID(rawValue: transaction), TransactionID(rawValue: dispatch), unsigned(bytes, fields.change) ?? 0
    )
  }
}

/// The snapshot lines of a file being read, by position: a heap whose top is the last position.
///
/// A snapshot placed, and the snapshots after a record's position dropped, cost O(log n) each, in whatever order the
/// file gives them. In an array kept in order, a file with thousands of snapshots at one position, then thousands at
/// an earlier one after a move back, moved the first thousands for each of the others (helper-64).
private struct SnapshotHeap: Sendable {
  /// The heap: each entry's position, with the order it was read in, is at least its children's.
  private var entries: [(index: Int, read: Int, line: SessionIndex.Line)] = []
  private var readCount = 0

  var isEmpty: Bool { entries.isEmpty }

  /// The last position a snapshot is at.
  var lastPosition: Int? { entries.first?.index }

  private static func isAfter(
    _ lhs: (index: Int, read: Int, line: SessionIndex.Line), _ rhs: (index: Int, read: Int, line: SessionIndex.Line)
  ) -> Bool {
    (lhs.index, lhs.read) > (rhs.index, rhs.read)
  }

  mutating func insert(_ line: SessionIndex.Line, at position: Int) {
    entries.append((position, readCount, line))
    readCount += 1
    var child = entries.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard Self.isAfter(entries[child], entries[parent]) else { break }
      entries.swapAt(child, parent)
      child = parent
    }
  }

  /// Removes the snapshots after `position`; returns them in order of position, then of reading.
  mutating func removeAll(after position: Int) -> [(index: Int, line: SessionIndex.Line)] {
    var removed: [(index: Int, read: Int, line: SessionIndex.Line)] = []
    while let top = entries.first, top.index > position {
      removed.append(top)
      entries.swapAt(0, entries.count - 1)
      entries.removeLast()
      var parent = 0
      while true {
        let (left, right) = (2 * parent + 1, 2 * parent + 2)
        var largest = parent
        if left < entries.count, Self.isAfter(entries[left], entries[largest]) { largest = left }
        if right < entries.count, Self.isAfter(entries[right], entries[largest]) { largest = right }
        guard largest != parent else { break }
        entries.swapAt(parent, largest)
        parent = largest
      }
    }
    return removed.reversed().map { ($0.index, $0.line) }
  }

  /// The snapshots in order of position, then of reading.
  func inOrder() -> [(index: Int, line: SessionIndex.Line)] {
    entries.sorted { ($0.index, $0.read) < ($1.index, $1.read) }.map { ($0.index, $0.line) }
  }
}
