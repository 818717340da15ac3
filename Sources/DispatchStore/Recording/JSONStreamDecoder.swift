import Foundation

/// Decodes `Decodable` values from JSON bytes as `JSONDecoder` with its default strategies does: the reader of
/// session lines, the counterpart of ``JSONStreamEncoder``.
///
/// `JSONDecoder` costs about a microsecond per value, and a whole list of 10,000 rows is 30,000 values (proposal 0017
/// has the measurements). This decoder reads the bytes once into a flat map of offsets (`map`), then decodes from it
/// with one reused `Decoder` whose containers are small structs: no tree of boxed values, no coding path array per
/// value.
///
/// It decodes exactly what `JSONDecoder` decodes, or refuses: anything past the JSON a writer makes (an integer in
/// exponent or fraction form, an integer out of its type's range, `Data`, `URL`, `Decimal`, invalid UTF-8, a
/// document nested deeper than 512) is ``Unsupported``, and the caller decodes with `JSONDecoder` instead
/// (``decode(_:from:)`` returns `nil`). An error thrown by the value's own `init(from:)` is thrown as it is, and the
/// caller also decodes again with `JSONDecoder`, for its message: a failed decode costs twice, a decode that works
/// costs once.
///
/// Known differences that only code catching this decoder's errors can see: a `null` read as a number or a string
/// is a type mismatch here (`valueNotFound` there), an error's coding path stops at the container, and an unkeyed
/// container's `decodeIfPresent` past the end does not move `currentIndex`. A value that keeps its decoder after
/// `init(from:)` returns must not use it: the bytes are the caller's for the call only.
///
/// One per decode: it is a class with state, not `Sendable`.
final class JSONStreamDecoder {
  /// JSON this decoder does not read as `JSONDecoder` would, or a use of the `Decoder` protocol it does not follow.
  struct Unsupported: Error {}

  /// The deepest nesting read; `JSONDecoder` refuses deeper documents.
  static let maximumDepth = 512

  /// Decodes `type` from `bytes`; `nil` if the JSON or the value's decoding is ``Unsupported`` here, for the caller to
  /// decode with `JSONDecoder`.
  /// - Throws: The error the value's `init(from:)` threw (a `DecodingError` of this decoder's, or its own).
  static func decode<T: Decodable>(
    _ type: T.Type, from bytes: UnsafeRawBufferPointer, userInfo: [CodingUserInfoKey: Any]
  ) throws -> T? {
    var scanner = Scanner(bytes: bytes)
    guard (try? scanner.scanDocument()) != nil else { return nil }
    let reader = Reader(bytes: bytes, map: scanner.map, userInfo: userInfo)
    let value: T
    do {
      value = try reader.decode(type, at: 0)
    } catch {
      if reader.unsupported { return nil }
      throw error
    }
    // Refused somewhere a `try?` in the value's own code caught it: `JSONDecoder` might have read something there.
    return reader.unsupported ? nil : value
  }

  /// The text of a string's bytes between its quotes, its escapes resolved; `nil` for invalid UTF-8, an unpaired
  /// surrogate, or escapes the scanner has not checked.
  static func text(_ raw: UnsafeRawBufferPointer) -> String? {
    var utf8: [UInt8] = []
    utf8.reserveCapacity(raw.count)
    var index = 0
    func hex(_ at: Int) -> UInt16 {
      var value: UInt16 = 0
      for offset in 0..<4 { value = value << 4 | Scanner.hexValue(raw[at + offset])! }
      return value
    }
    while index < raw.count {
      let byte = raw[index]
      guard byte == UInt8(ascii: "\\") else {
        utf8.append(byte)
        index += 1
        continue
      }
      let escape = raw[index + 1]
      index += 2
      switch escape {
      case UInt8(ascii: "b"): utf8.append(0x08)
      case UInt8(ascii: "f"): utf8.append(0x0C)
      case UInt8(ascii: "n"): utf8.append(0x0A)
      case UInt8(ascii: "r"): utf8.append(0x0D)
      case UInt8(ascii: "t"): utf8.append(0x09)
      case UInt8(ascii: "u"):
        var scalar = UInt32(hex(index))
        index += 4
        if (0xD800..<0xDC00).contains(scalar) {
          // A high surrogate must be followed by an escaped low one; anything else is left to `JSONDecoder`.
          guard raw.count - index >= 6, raw[index] == UInt8(ascii: "\\"), raw[index + 1] == UInt8(ascii: "u")
          else { return nil }
          let low = UInt32(hex(index + 2))
          guard (0xDC00..<0xE000).contains(low) else { return nil }
          scalar = 0x10000 + (scalar - 0xD800) << 10 + (low - 0xDC00)
          index += 6
        }
        guard let unicode = Unicode.Scalar(scalar) else { return nil }
        utf8.append(contentsOf: UTF8.encode(unicode)!)
      default: utf8.append(escape)  // `"`, `\` and `/`, as the scanner checked.
      }
    }
    return String(validating: utf8, as: UTF8.self)
  }

  // MARK: - The map

  /// The kinds of values in the map; each entry starts with its kind.
  ///
  /// - `null`, `true`, `false`: the kind alone.
  /// - `number`, `string` (ASCII without escapes), `escapedString` (with escapes or other characters): the kind,
  ///   then the first and past-the-end offsets of its bytes (a string's without the quotes).
  /// - `array`, `object`: the kind, the count of elements (members), the map offset past the container, then each
  ///   element (each member's key, a string, and its value).
  enum Kind: Int {
    case null, `true`, `false`, number, string, escapedString, array, object
  }

  /// Reads JSON text into the map, checking its grammar.
  struct Scanner {
    let bytes: UnsafeRawBufferPointer
    var position = 0
    var map: [Int] = []

    init(bytes: UnsafeRawBufferPointer) {
      self.bytes = bytes
      map.reserveCapacity(bytes.count / 4)
    }

    mutating func scanDocument() throws(Unsupported) {
      skipSpace()
      try scanValue(depth: 0)
      skipSpace()
      guard position == bytes.count else { throw Unsupported() }
    }

    /// Appends an entry of three (an array literal here would be allocated each time).
    private mutating func append(_ kind: Kind, _ first: Int, _ second: Int) {
      map.append(kind.rawValue)
      map.append(first)
      map.append(second)
    }

    private mutating func skipSpace() {
      while position < bytes.count {
        switch bytes[position] {
        case 0x20, 0x09, 0x0A, 0x0D: position += 1
        default: return
        }
      }
    }

    private mutating func expect(_ literal: StaticString) throws(Unsupported) {
      let count = literal.utf8CodeUnitCount
      guard bytes.count - position >= count else { throw Unsupported() }
      let pointer = literal.utf8Start
      for offset in 0..<count where bytes[position + offset] != pointer[offset] { throw Unsupported() }
      position += count
    }

    private mutating func scanValue(depth: Int) throws(Unsupported) {
      guard position < bytes.count, depth < JSONStreamDecoder.maximumDepth else { throw Unsupported() }
      switch bytes[position] {
      case UInt8(ascii: "{"):
        try scanContainer(.object, depth: depth)
      case UInt8(ascii: "["):
        try scanContainer(.array, depth: depth)
      case UInt8(ascii: "\""):
        try scanString()
      case UInt8(ascii: "t"):
        try expect("true")
        map.append(Kind.true.rawValue)
      case UInt8(ascii: "f"):
        try expect("false")
        map.append(Kind.false.rawValue)
      case UInt8(ascii: "n"):
        try expect("null")
        map.append(Kind.null.rawValue)
      default:
        try scanNumber()
      }
    }

    /// An object (each member a key, a colon and a value) or an array, up to its closing bracket.
    private mutating func scanContainer(_ kind: Kind, depth: Int) throws(Unsupported) {
      let close = kind == .object ? UInt8(ascii: "}") : UInt8(ascii: "]")
      let start = map.count
      append(kind, 0, 0)
      position += 1
      skipSpace()
      var count = 0
      if position < bytes.count, bytes[position] == close {
        position += 1
      } else {
        while true {
          if kind == .object {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw Unsupported() }
            try scanString()
            skipSpace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw Unsupported() }
            position += 1
            skipSpace()
          }
          try scanValue(depth: depth + 1)
          count += 1
          skipSpace()
          guard position < bytes.count else { throw Unsupported() }
          if bytes[position] == UInt8(ascii: ",") {
            position += 1
            skipSpace()
          } else if bytes[position] == close {
            position += 1
            break
          } else {
            throw Unsupported()
          }
        }
      }
      map[start + 1] = count
      map[start + 2] = map.count
    }

    /// A string, checked whole: its escapes and its UTF-8 (keys and values, read or not, as a refusal is safe and
    /// a string `JSONDecoder` refuses is never read here).
    private mutating func scanString() throws(Unsupported) {
      position += 1
      let start = position
      var escaped = false
      var ascii = true
      while true {
        guard position < bytes.count else { throw Unsupported() }
        let byte = bytes[position]
        if byte == UInt8(ascii: "\"") { break }
        guard byte >= 0x20 else { throw Unsupported() }
        if byte >= 0x80 { ascii = false }
        if byte == UInt8(ascii: "\\") {
          escaped = true
          position += 1
          guard position < bytes.count else { throw Unsupported() }
          switch bytes[position] {
          case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            position += 1
          case UInt8(ascii: "u"):
            guard bytes.count - position > 4 else { throw Unsupported() }
            for offset in 1...4 where Self.hexValue(bytes[position + offset]) == nil { throw Unsupported() }
            position += 5
          default:
            throw Unsupported()
          }
        } else {
          position += 1
        }
      }
      if escaped || !ascii {
        guard JSONStreamDecoder.text(UnsafeRawBufferPointer(rebasing: bytes[start..<position])) != nil else {
          throw Unsupported()
        }
      }
      append(escaped || !ascii ? Kind.escapedString : Kind.string, start, position)
      position += 1
    }

    /// A number in JSON's grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    private mutating func scanNumber() throws(Unsupported) {
      let start = position
      func digits(_ scanner: inout Scanner) -> Int {
        let first = scanner.position
        while scanner.position < scanner.bytes.count, (0x30...0x39).contains(scanner.bytes[scanner.position]) {
          scanner.position += 1
        }
        return scanner.position - first
      }
      if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
      guard position < bytes.count, (0x30...0x39).contains(bytes[position]) else { throw Unsupported() }
      if bytes[position] == UInt8(ascii: "0") {
        position += 1
      } else {
        _ = digits(&self)
      }
      if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
        position += 1
        guard digits(&self) > 0 else { throw Unsupported() }
      }
      if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
        position += 1
        if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
          position += 1
        }
        guard digits(&self) > 0 else { throw Unsupported() }
      }
      append(Kind.number, start, position)
    }

    static func hexValue(_ byte: UInt8) -> UInt16? {
      switch byte {
      case 0x30...0x39: UInt16(byte - 0x30)
      case 0x41...0x46: UInt16(byte - 0x41 + 10)
      case 0x61...0x66: UInt16(byte - 0x61 + 10)
      default: nil
      }
    }
  }

  // MARK: - Reading the map

  /// The one `Decoder` of a decode: a nested value is decoded by the same reader, its position and coding path set
  /// for the call and put back after it.
  final class Reader: Decoder {
    let bytes: UnsafeRawBufferPointer
    let map: [Int]
    let userInfo: [CodingUserInfoKey: Any]
    /// The map offset of the value being decoded.
    var current = 0
    /// The coding path of the value being decoded, innermost last, built into an array only when asked for.
    var path = Path.root
    /// Whether this reader refused something (``Unsupported``), even if the value's code caught the error.
    var unsupported = false

    init(bytes: UnsafeRawBufferPointer, map: [Int], userInfo: [CodingUserInfoKey: Any]) {
      (self.bytes, self.map, self.userInfo) = (bytes, map, userInfo)
    }

    indirect enum Path {
      case root
      case key(any CodingKey, Path)

      var keys: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node = self
        while case .key(let key, let parent) = node {
          keys.append(key)
          node = parent
        }
        return keys.reversed()
      }
    }

    var codingPath: [any CodingKey] { path.keys }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
      guard map[current] == Kind.object.rawValue else { throw mismatch(at: current, expected: [String: Any].self) }
      return KeyedDecodingContainer(KeyedReader<Key>(reader: self, object: current, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
      guard map[current] == Kind.array.rawValue else { throw mismatch(at: current, expected: [Any].self) }
      return UnkeyedReader(reader: self, array: current, path: path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
      SingleValueReader(reader: self, value: current, path: path)
    }

    /// Refuses, remembering it: the decode is then done again by `JSONDecoder`.
    func refuse() -> Unsupported {
      unsupported = true
      return Unsupported()
    }

    func mismatch(at value: Int, expected: Any.Type) -> DecodingError {
      .typeMismatch(
        expected, DecodingError.Context(codingPath: path.keys, debugDescription: "Expected \(expected) here."))
    }

    /// The map offset past the value at `value`.
    func end(of value: Int) -> Int {
      switch map[value] {
      case Kind.null.rawValue, Kind.true.rawValue, Kind.false.rawValue: value + 1
      case Kind.number.rawValue, Kind.string.rawValue, Kind.escapedString.rawValue: value + 3
      default: map[value + 2]
      }
    }

    /// Decodes `type` from the value at `value`, with `key` appended to `path`.
    func decode<T: Decodable>(_ type: T.Type, at value: Int, path: Path = .root) throws -> T {
      if T.self == Data.self || T.self == URL.self || T.self == Decimal.self { throw refuse() }
      let saved = (current, self.path)
      (current, self.path) = (value, path)
      defer { (current, self.path) = saved }
      return try T(from: self)
    }

    func isNull(_ value: Int) -> Bool { map[value] == Kind.null.rawValue }

    func bool(at value: Int) throws -> Bool {
      switch map[value] {
      case Kind.true.rawValue: return true
      case Kind.false.rawValue: return false
      default: throw mismatch(at: value, expected: Bool.self)
      }
    }

    func string(at value: Int) throws -> String {
      let kind = map[value]
      guard kind == Kind.string.rawValue || kind == Kind.escapedString.rawValue else {
        throw mismatch(at: value, expected: String.self)
      }
      let raw = UnsafeRawBufferPointer(rebasing: bytes[map[value + 1]..<map[value + 2]])
      if kind == Kind.string.rawValue { return String(decoding: raw, as: UTF8.self) }  // ASCII: valid as it is.
      guard let text = JSONStreamDecoder.text(raw) else { throw refuse() }
      return text
    }

    /// Whether the string at `value` is `key` as `String`'s `==` has it (canonical equivalence): byte for byte where
    /// both are ASCII, otherwise as strings.
    func string(at value: Int, equals key: String) throws -> Bool {
      if map[value] == Kind.string.rawValue {
        let start = map[value + 1]
        let count = map[value + 2] - start
        let same = key.utf8.withContiguousStorageIfAvailable { utf8 -> Bool? in
          if utf8.count == count {
            var offset = 0
            while offset < count, utf8[offset] == bytes[start + offset] { offset += 1 }
            if offset == count { return true }
          }
          // Different bytes: different strings, unless the key has non-ASCII characters (the Kelvin sign is "K").
          for byte in utf8 where byte >= 0x80 { return nil }
          return false
        }
        if let same, let same { return same }
      }
      return try string(at: value) == key
    }

    /// An integer written as one (digits, with a minus sign), in range; anything else is left to `JSONDecoder`.
    func integer<I: FixedWidthInteger>(_: I.Type, at value: Int) throws -> I {
      guard map[value] == Kind.number.rawValue else { throw mismatch(at: value, expected: I.self) }
      var index = map[value + 1]
      let end = map[value + 2]
      let negative = bytes[index] == UInt8(ascii: "-")
      if negative {
        guard I.isSigned else { throw refuse() }
        index += 1
      }
      var result: I = 0
      while index < end {
        let digit = bytes[index] &- 0x30
        guard digit < 10 else { throw try notAnInteger(I.self, at: value) }
        let (times, overflowed) = result.multipliedReportingOverflow(by: 10)
        let (sum, overflowedAgain) =
          negative
          ? times.subtractingReportingOverflow(I(digit)) : times.addingReportingOverflow(I(digit))
        guard !overflowed, !overflowedAgain else {
          // Digits followed by a fraction or an exponent (`1000e-1`) may still be whole and in range.
          if bytes[index..<end].contains(where: { $0 &- 0x30 >= 10 }) { throw try notAnInteger(I.self, at: value) }
          // Out of range: it fails in `JSONDecoder` too.
          throw DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: path.keys, debugDescription: "The number is out of \(I.self)'s range."))
        }
        result = sum
        index += 1
      }
      return result
    }

    /// The error for a number with a fraction or an exponent read as an integer: a number that is not whole fails
    /// in `JSONDecoder` too; one that may be (`1.0`, `1e2`) is left to it.
    private func notAnInteger<I: FixedWidthInteger>(_: I.Type, at value: Int) throws -> DecodingError {
      guard let number = try? floatingPoint(Double.self, at: value), number.rounded(.towardZero) != number else {
        throw refuse()
      }
      return .dataCorrupted(
        DecodingError.Context(codingPath: path.keys, debugDescription: "The number \(number) is not an \(I.self)."))
    }

    /// A number in range: `JSONDecoder` refuses one that reads as infinite, or as zero though its digits are not.
    func floatingPoint<F: BinaryFloatingPoint & LosslessStringConvertible>(_: F.Type, at value: Int) throws -> F {
      guard map[value] == Kind.number.rawValue else { throw mismatch(at: value, expected: F.self) }
      let digits = UnsafeRawBufferPointer(rebasing: bytes[map[value + 1]..<map[value + 2]])
      guard let number = F(String(decoding: digits, as: UTF8.self)), number.isFinite else { throw refuse() }
      if number == 0,
        digits.prefix(while: { $0 | 0x20 != UInt8(ascii: "e") }).contains(where: { (0x31...0x39).contains($0) })
      {
        throw refuse()  // Underflowed.
      }
      return number
    }

    /// Decodes a primitive the containers read directly, or any other value through its `init(from:)`.
    func value<T: Decodable>(_ type: T.Type, at value: Int, path: Path) throws -> T {
      switch type {
      case is String.Type: return try string(at: value) as! T
      case is Int.Type: return try integer(Int.self, at: value) as! T
      case is Bool.Type: return try bool(at: value) as! T
      case is Double.Type: return try floatingPoint(Double.self, at: value) as! T
      default: return try decode(type, at: value, path: path)
      }
    }
  }

  /// The coding key of an element of an array, as `JSONDecoder` names it ("Index 3").
  struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue!)" }
    init(index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
  }

  struct KeyedReader<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let reader: Reader
    let object: Int
    let path: Reader.Path
    /// For objects with many members, each key's first value (`JSONDecoder` keeps the first of a repeated key).
    private let index: [String: Int]?

    init(reader: Reader, object: Int, path: Reader.Path) {
      (self.reader, self.object, self.path) = (reader, object, path)
      guard reader.map[object + 1] > 8 else {
        index = nil
        return
      }
      var index: [String: Int] = [:]
      index.reserveCapacity(reader.map[object + 1])
      var member = object + 3
      for _ in 0..<reader.map[object + 1] {
        if let key = try? reader.string(at: member), index[key] == nil { index[key] = member + 3 }
        member = reader.end(of: member + 3)
      }
      self.index = index
    }

    var codingPath: [any CodingKey] { path.keys }

    var allKeys: [Key] {
      let count = reader.map[object + 1]
      var keys: [Key] = []
      var member = object + 3
      if let index {
        // Many members: each name's first, found in the index.
        for _ in 0..<count {
          if let name = try? reader.string(at: member), index[name] == member + 3, let key = Key(stringValue: name) {
            keys.append(key)
          }
          member = reader.end(of: member + 3)
        }
        return keys
      }
      // A few (an enum's case, most often alone): a repeated name found among those before it, without a set.
      let first = member
      for _ in 0..<count {
        if let name = try? reader.string(at: member) {
          var earlier = first
          var repeated = false
          while earlier != member, !repeated {
            repeated = (try? reader.string(at: earlier, equals: name)) == true
            earlier = reader.end(of: earlier + 3)
          }
          if !repeated, let key = Key(stringValue: name) { keys.append(key) }
        }
        member = reader.end(of: member + 3)
      }
      return keys
    }

    /// The map offset of `key`'s value, the first if the key repeats; `nil` if the object lacks it.
    private func find(_ key: Key) throws -> Int? {
      if let index { return index[key.stringValue] }
      let name = key.stringValue
      var member = object + 3
      for _ in 0..<reader.map[object + 1] {
        if try reader.string(at: member, equals: name) { return member + 3 }
        member = reader.end(of: member + 3)
      }
      return nil
    }

    private func require(_ key: Key) throws -> Int {
      guard let value = try find(key) else {
        throw DecodingError.keyNotFound(
          key, DecodingError.Context(codingPath: path.keys, debugDescription: "No value for \(key.stringValue)."))
      }
      return value
    }

    func contains(_ key: Key) -> Bool { (try? find(key)) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { reader.isNull(try require(key)) }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try reader.bool(at: require(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try reader.string(at: require(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
      try reader.floatingPoint(type, at: require(key))
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
      try reader.floatingPoint(type, at: require(key))
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try reader.integer(type, at: require(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try reader.integer(type, at: require(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try reader.integer(type, at: require(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try reader.integer(type, at: require(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try reader.integer(type, at: require(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try reader.integer(type, at: require(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try reader.integer(type, at: require(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try reader.integer(type, at: require(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try reader.integer(type, at: require(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try reader.integer(type, at: require(key)) }

    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { throw reader.refuse() }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { throw reader.refuse() }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
      try reader.value(type, at: require(key), path: .key(key, path))
    }

    func nestedContainer<NestedKey: CodingKey>(
      keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
      let value = try require(key)
      guard reader.map[value] == Kind.object.rawValue else {
        throw reader.mismatch(at: value, expected: [String: Any].self)
      }
      return KeyedDecodingContainer(KeyedReader<NestedKey>(reader: reader, object: value, path: .key(key, path)))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
      let value = try require(key)
      guard reader.map[value] == Kind.array.rawValue else { throw reader.mismatch(at: value, expected: [Any].self) }
      return UnkeyedReader(reader: reader, array: value, path: .key(key, path))
    }

    func superDecoder() throws -> any Decoder { throw reader.refuse() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw reader.refuse() }
  }

  struct UnkeyedReader: UnkeyedDecodingContainer {
    let reader: Reader
    let path: Reader.Path
    let count: Int?
    private(set) var currentIndex = 0
    /// The map offset of the next element.
    private var next: Int

    init(reader: Reader, array: Int, path: Reader.Path) {
      (self.reader, self.path) = (reader, path)
      count = reader.map[array + 1]
      next = array + 3
    }

    var codingPath: [any CodingKey] { path.keys }
    var isAtEnd: Bool { currentIndex >= count! }

    /// Reads the next element with `read`, and moves past it only if that worked (as `JSONDecoder` does: a value's
    /// code may try one type, then another).
    private mutating func next<T>(_ type: Any.Type, _ read: (Reader, Int) throws -> T) throws -> T {
      guard !isAtEnd else {
        throw DecodingError.valueNotFound(
          type, DecodingError.Context(codingPath: path.keys, debugDescription: "Unkeyed container is at end."))
      }
      let value = try read(reader, next)
      next = reader.end(of: next)
      currentIndex += 1
      return value
    }

    mutating func decodeNil() throws -> Bool {
      guard !isAtEnd else {
        throw DecodingError.valueNotFound(
          Any?.self, DecodingError.Context(codingPath: path.keys, debugDescription: "Unkeyed container is at end."))
      }
      guard reader.isNull(next) else { return false }
      return try next(Any?.self) { _, _ in true }
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) { try $0.bool(at: $1) } }
    mutating func decode(_ type: String.Type) throws -> String { try next(type) { try $0.string(at: $1) } }
    mutating func decode(_ type: Double.Type) throws -> Double {
      try next(type) { try $0.floatingPoint(type, at: $1) }
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
      try next(type) { try $0.floatingPoint(type, at: $1) }
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type) { try $0.integer(type, at: $1) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) { try $0.integer(type, at: $1) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type) { try $0.integer(type, at: $1) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type) { try $0.integer(type, at: $1) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type) { try $0.integer(type, at: $1) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) { try $0.integer(type, at: $1) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type) { try $0.integer(type, at: $1) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 {
      try next(type) { try $0.integer(type, at: $1) }
    }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 {
      try next(type) { try $0.integer(type, at: $1) }
    }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 {
      try next(type) { try $0.integer(type, at: $1) }
    }

    mutating func decode(_ type: Int128.Type) throws -> Int128 { throw reader.refuse() }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { throw reader.refuse() }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
      let path = Reader.Path.key(IndexKey(index: currentIndex), path)
      return try next(type) { try $0.value(type, at: $1, path: path) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
      keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
      let path = Reader.Path.key(IndexKey(index: currentIndex), path)
      return try next(KeyedDecodingContainer<NestedKey>.self) { reader, value in
        guard reader.map[value] == Kind.object.rawValue else {
          throw reader.mismatch(at: value, expected: [String: Any].self)
        }
        return KeyedDecodingContainer(KeyedReader<NestedKey>(reader: reader, object: value, path: path))
      }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
      let path = Reader.Path.key(IndexKey(index: currentIndex), path)
      return try next((any UnkeyedDecodingContainer).self) { reader, value in
        guard reader.map[value] == Kind.array.rawValue else { throw reader.mismatch(at: value, expected: [Any].self) }
        return UnkeyedReader(reader: reader, array: value, path: path)
      }
    }

    mutating func superDecoder() throws -> any Decoder { throw reader.refuse() }
  }

  struct SingleValueReader: SingleValueDecodingContainer {
    let reader: Reader
    let value: Int
    let path: Reader.Path

    var codingPath: [any CodingKey] { path.keys }

    func decodeNil() -> Bool { reader.isNull(value) }
    func decode(_ type: Bool.Type) throws -> Bool { try reader.bool(at: value) }
    func decode(_ type: String.Type) throws -> String { try reader.string(at: value) }
    func decode(_ type: Double.Type) throws -> Double { try reader.floatingPoint(type, at: value) }
    func decode(_ type: Float.Type) throws -> Float { try reader.floatingPoint(type, at: value) }
    func decode(_ type: Int.Type) throws -> Int { try reader.integer(type, at: value) }
    func decode(_ type: Int8.Type) throws -> Int8 { try reader.integer(type, at: value) }
    func decode(_ type: Int16.Type) throws -> Int16 { try reader.integer(type, at: value) }
    func decode(_ type: Int32.Type) throws -> Int32 { try reader.integer(type, at: value) }
    func decode(_ type: Int64.Type) throws -> Int64 { try reader.integer(type, at: value) }
    func decode(_ type: UInt.Type) throws -> UInt { try reader.integer(type, at: value) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try reader.integer(type, at: value) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try reader.integer(type, at: value) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try reader.integer(type, at: value) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try reader.integer(type, at: value) }

    func decode(_ type: Int128.Type) throws -> Int128 { throw reader.refuse() }
    func decode(_ type: UInt128.Type) throws -> UInt128 { throw reader.refuse() }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
      try reader.value(type, at: value, path: path)
    }
  }
}
