import Foundation

/// A session file read into lines whose kind, position and store are known, but whose JSON is decoded only when
/// needed: so that restoring the end of a long session decodes the last snapshot and the records after it, not the
/// whole history.
///
/// Reading checks what a recorder writes: the hash chain (format version 2), and the sequence of positions (a
/// record is always one past the cursor, a move stays within the history, a snapshot is at the cursor).
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
  /// Snapshot lines by the position they describe (the models just before record `index`), oldest first.
  var snapshots: [(index: Int, line: Line)] = []
  /// Effect lines, by dispatch.
  var effects: [TransactionID: [Line]] = [:]
  /// A version 1 file's history, decoded when it was read (version 1 has no cheap structure to index).
  var decodedRecords: [Record]?
  var truncatedLine: Int?
  var completeByteCount = 0
  var lastHash: UInt64 = 0

  /// The index the next record gets.
  var nextIndex: Int { records.last.map { $0.index + 1 } ?? firstIndex }

  /// The line's bytes, newline excluded.
  func bytes(of line: Line) -> Data {
    data.subdata(in: line.range)
  }

  // MARK: - Reading

  static func read(_ data: Data, path: String, codecs: SessionCodecs) throws(SessionError) -> SessionIndex {
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
    if version == 1 {
      try index.readVersion1(ranges.dropFirst(), codecs: codecs)
      return index
    }
    var previous: UInt64 = 0
    let storeBytes = stores.map { (identifier: $0, json: Array((try? JSONEncoder().encode($0)) ?? Data())) }
    for (offset, range) in ranges.enumerated() {
      let line = Line(number: offset + 1, range: range)
      guard let (object, hash) = SessionHash.split(data[range]) else {
        throw .corruptLine(line: line.number, reason: "the line has no hash")
      }
      guard SessionHash.line(object, previous: previous) == hash else {
        throw .integrityCheckFailed(line: line.number)
      }
      previous = hash
      if offset == 0 { continue }
      try index.add(line, object: object, stores: storeBytes)
    }
    index.lastHash = previous
    return index
  }

  private struct Version: Decodable {
    let format: String
    let version: Int
  }

  /// Checks the header line; returns the format version and the stores it lists.
  private static func readHeader(
    _ line: Data, path: String, codecs: SessionCodecs
  ) throws(SessionError) -> (Int, [String]) {
    guard let version = try? JSONDecoder().decode(Version.self, from: line), version.format == SessionFormat.name
    else {
      throw .missingHeader(path: path)
    }
    guard version.version == 1 || version.version == SessionFormat.version else {
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

  /// Adds a version 2 line after the header, checking that it continues the history as a recorder would.
  private mutating func add(
    _ line: Line, object: Data, stores: [(identifier: String, json: [UInt8])]
  ) throws(SessionError) {
    let fields = object.withUnsafeBytes { LinePrefix(bytes: $0) }
    guard let fields else { throw .corruptLine(line: line.number, reason: "the line does not start with its kind") }
    switch fields.kind {
    case UInt8(ascii: "r"):
      guard let position = fields.index else { throw .corruptLine(line: line.number, reason: "missing field \"i\"") }
      guard position == cursor + 1, position >= firstIndex else { throw .invalidIndex(position, line: line.number) }
      let store = object.withUnsafeBytes { bytes in
        stores.first { LinePrefix.storeField(in: bytes) == $0.json[...] }?.identifier
      }
      guard let store else {
        throw .unknownStore(identifier: LinePrefix.storeName(in: object) ?? "?", line: line.number)
      }
      records.removeSubrange((position - firstIndex)...)
      snapshots.removeAll { $0.index > position }
      records.append(RecordLine(line: line, index: position, store: store))
      cursor = position
    case UInt8(ascii: "m"):
      guard let position = fields.index else { throw .corruptLine(line: line.number, reason: "missing field \"i\"") }
      guard position >= firstIndex - 1, position < nextIndex, position != cursor else {
        throw .invalidIndex(position, line: line.number)
      }
      cursor = position
    case UInt8(ascii: "s"):
      guard let position = fields.index else { throw .corruptLine(line: line.number, reason: "missing field \"i\"") }
      if records.isEmpty && cursor == -1 && snapshots.isEmpty {
        firstIndex = position
        cursor = position - 1
      }
      guard position == cursor + 1 else { throw .invalidIndex(position, line: line.number) }
      snapshots.append((position, line))
    case UInt8(ascii: "e"):
      guard let dispatch = LinePrefix.unsignedField("d", in: object) else {
        throw .corruptLine(line: line.number, reason: "missing field \"d\"")
      }
      effects[TransactionID(rawValue: dispatch), default: []].append(line)
    default:
      throw .corruptLine(line: line.number, reason: "unknown line kind")
    }
  }
}

/// The start of a version 2 line, `{"k":"r","i":12,`, read without decoding the line.
private struct LinePrefix {
  let kind: UInt8
  let index: Int?

  init?(bytes: UnsafeRawBufferPointer) {
    let opening = Array("{\"k\":\"".utf8)
    guard bytes.count > opening.count + 2, bytes.starts(with: opening) else { return nil }
    kind = bytes[opening.count]
    guard bytes[opening.count + 1] == UInt8(ascii: "\"") else { return nil }
    let field = Array(",\"i\":".utf8)
    let rest = bytes[(opening.count + 2)...]
    guard rest.starts(with: field) else {
      index = nil
      return
    }
    var position = rest.startIndex + field.count
    var negative = false
    if position < bytes.count, bytes[position] == UInt8(ascii: "-") {
      negative = true
      position += 1
    }
    var value = 0
    var digits = 0
    while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9"),
      digits < 18
    {
      value = value * 10 + Int(bytes[position] - UInt8(ascii: "0"))
      position += 1
      digits += 1
    }
    index = digits == 0 ? nil : (negative ? -value : value)
  }

  /// The JSON string after `"s":` in a record line, quotes included.
  static func storeField(in bytes: UnsafeRawBufferPointer) -> ArraySlice<UInt8> {
    let key = Array(",\"s\":\"".utf8)
    guard let start = find(key, in: bytes) else { return [] }
    var position = start + key.count
    while position < bytes.count, bytes[position] != UInt8(ascii: "\"") {
      if bytes[position] == UInt8(ascii: "\\") { position += 1 }
      position += 1
    }
    guard position < bytes.count else { return [] }
    return ArraySlice(bytes[(start + key.count - 1)...position])
  }

  /// The store named by a record line, for an error message.
  static func storeName(in object: Data) -> String? {
    let field = object.withUnsafeBytes { storeField(in: $0) }
    return try? JSONDecoder().decode(String.self, from: Data(field))
  }

  /// The unsigned integer after `"name":`.
  static func unsignedField(_ name: String, in object: Data) -> UInt64? {
    object.withUnsafeBytes { bytes -> UInt64? in
      let key = Array(",\"\(name)\":".utf8)
      guard let start = find(key, in: bytes) else { return nil }
      var position = start + key.count
      var value: UInt64 = 0
      var digits = 0
      while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9"),
        digits < 20
      {
        let (times, overflow) = value.multipliedReportingOverflow(by: 10)
        guard !overflow else { return nil }
        value = times &+ UInt64(bytes[position] - UInt8(ascii: "0"))
        position += 1
        digits += 1
      }
      return digits == 0 ? nil : value
    }
  }

  private static func find(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer) -> Int? {
    guard bytes.count >= needle.count else { return nil }
    var start = 0
    while start + needle.count <= bytes.count {
      if bytes[start] == needle[0], bytes[start..<(start + needle.count)].elementsEqual(needle) { return start }
      start += 1
    }
    return nil
  }
}
