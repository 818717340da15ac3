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

  /// Reads `data`.
  ///
  /// Without codecs (the inspector), the header's stores are not checked against an app's, and a version 1 file,
  /// which can only be read by decoding it, is refused.
  static func read(_ data: Data, path: String, codecs: SessionCodecs?) throws(SessionError) -> SessionIndex {
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
      guard let codecs else {
        throw .unsupportedVersion(found: 1, supported: SessionFormat.version, line: 1)
      }
      try index.readVersion1(ranges.dropFirst(), codecs: codecs)
      return index
    }
    let storeBytes = stores.map { (identifier: $0, json: Array((try? JSONEncoder().encode($0)) ?? Data())) }
    // One pass over the bytes in place: no line is copied.
    let failure = data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> SessionError? in
      var previous: UInt64 = 0
      for (offset, range) in ranges.enumerated() {
        let line = Line(number: offset + 1, range: range)
        let bytes = UnsafeRawBufferPointer(rebasing: raw[range.lowerBound..<range.upperBound])
        switch SessionHash.check(bytes, previous: previous) {
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

  /// Adds a version 2 line after the header.
  ///
  /// Checks that it continues the history as a recorder would.
  /// `object` is the line without its hash suffix (and so without its closing brace).
  private mutating func add(
    _ line: Line, object: UnsafeRawBufferPointer, stores: [(identifier: String, json: [UInt8])]
  ) throws(SessionError) {
    guard let fields = LinePrefix(bytes: object) else {
      throw .corruptLine(line: line.number, reason: "the line does not start with its kind")
    }
    switch fields.kind {
    case UInt8(ascii: "r"):
      guard let position = fields.index else { throw .corruptLine(line: line.number, reason: "missing field \"i\"") }
      guard position == cursor + 1, position >= firstIndex else { throw .invalidIndex(position, line: line.number) }
      let field = LinePrefix.storeField(in: object)
      guard let store = stores.first(where: { field.elementsEqual($0.json) })?.identifier else {
        let name = try? JSONDecoder().decode(String.self, from: Data(field))
        throw .unknownStore(identifier: name ?? "?", line: line.number)
      }
      if position - firstIndex < records.count { records.removeSubrange((position - firstIndex)...) }
      if let last = snapshots.last, last.index > position { snapshots.removeAll { $0.index > position } }
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
      guard let dispatch = LinePrefix.unsignedField(LinePrefix.dispatchKey, in: object) else {
        throw .corruptLine(line: line.number, reason: "missing field \"d\"")
      }
      effects[TransactionID(rawValue: dispatch), default: []].append(line)
    default:
      throw .corruptLine(line: line.number, reason: "unknown line kind")
    }
  }
}

/// The start of a version 2 line, `{"k":"r","i":12,`, read without decoding the line or allocating.
private struct LinePrefix {
  static let opening = Array("{\"k\":\"".utf8)
  static let indexKey = Array(",\"i\":".utf8)
  static let storeKey = Array(",\"s\":\"".utf8)
  static let dispatchKey = Array(",\"d\":".utf8)

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
    var position = start + Self.indexKey.count
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

  private static func matches(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer, at start: Int) -> Bool {
    guard start + needle.count <= bytes.count else { return false }
    for offset in needle.indices where bytes[start + offset] != needle[offset] { return false }
    return true
  }

  private static func find(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer) -> Int? {
    var start = 0
    while start + needle.count <= bytes.count {
      if bytes[start] == needle[0], matches(needle, in: bytes, at: start) { return start }
      start += 1
    }
    return nil
  }

  /// The JSON string after `"s":` in a record line, quotes included; empty if there is none.
  static func storeField(in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
    guard let start = find(storeKey, in: bytes) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    let opening = start + storeKey.count - 1
    var position = opening + 1
    while position < bytes.count, bytes[position] != UInt8(ascii: "\"") {
      if bytes[position] == UInt8(ascii: "\\") { position += 1 }
      position += 1
    }
    guard position < bytes.count else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    return UnsafeRawBufferPointer(rebasing: bytes[opening...position])
  }

  /// The unsigned integer after `key` (such as `,"d":`).
  static func unsignedField(_ key: [UInt8], in bytes: UnsafeRawBufferPointer) -> UInt64? {
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

/// The byte ranges of a record line's top-level values, found by scanning the JSON rather than decoding it: what
/// ``Session/verify(against:mode:)`` needs to re-run a record without decoding its model.
struct RecordFields {
  var transaction: Range<Int>?
  var dispatch: Range<Int>?
  var action: Range<Int>?
  var model: Range<Int>?
  var error: Range<Int>?

  /// Scans the object in `bytes[range]`; `nil` if it is not a flat JSON object as a writer makes it.
  init?(_ bytes: UnsafeRawBufferPointer, range: Range<Int>) {
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
    while position < end, bytes[position] == UInt8(ascii: "\"") {
      let keyStart = position + 1
      guard skipString(), position < end, bytes[position] == UInt8(ascii: ":") else { return nil }
      let key = position - keyStart == 2 ? bytes[keyStart] : 0  // one-letter keys only matter
      position += 1
      let valueStart = position
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
      let value = valueStart..<position
      switch key {
      case UInt8(ascii: "t"): transaction = value
      case UInt8(ascii: "d"): dispatch = value
      case UInt8(ascii: "a"): action = value
      case UInt8(ascii: "m"): model = value
      case UInt8(ascii: "e"): error = value
      default: break
      }
      guard position < end else { return nil }
      if bytes[position] == UInt8(ascii: "}") { return }
      position += 1  // ","
    }
    return nil
  }

  /// The unsigned integer in `range`.
  static func unsigned(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>?) -> UInt64? {
    guard let range, !range.isEmpty else { return nil }
    var value: UInt64 = 0
    for position in range {
      let byte = bytes[position]
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
      let (times, overflow) = value.multipliedReportingOverflow(by: 10)
      guard !overflow else { return nil }
      value = times &+ UInt64(byte - UInt8(ascii: "0"))
    }
    return value
  }
}
