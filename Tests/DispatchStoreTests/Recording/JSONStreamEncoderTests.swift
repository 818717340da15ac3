import Foundation
import Testing

@testable import DispatchStore

/// Foundation's `JSONEncoder`, as the session format used it before: the oracle these tests compare with.
private func foundationJSON<T: Encodable>(_ value: T) throws -> [UInt8] {
  let encoder = JSONEncoder()
  encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
  return Array(try encoder.encode(value))
}

private func streamJSON<T: Encodable>(_ value: T) throws -> [UInt8] {
  var bytes: [UInt8] = []
  try JSONStreamEncoder().encodeDirectly(value, into: &bytes)
  return bytes
}

/// Everything but floating-point values, whose digits `JSONEncoder` may write differently.
private struct Exact: Codable, Equatable {
  var name = "quote \" backslash \\ slash / newline \n tab \t bell \u{7} é 🚀"
  var flag = true
  var nothing: Int? = nil
  var something: Int? = 7
  var extremes: [Int64] = [.min, .max, 0, -1]
  var unsigned: UInt64 = .max
  var small: Int8 = -128
  var shapes: [Shape] = [.circle(radius: 3), .polygon([Point(x: 1, y: 2), Point(x: -3, y: 4)], closed: true), .empty]
  var tags: [String: Int] = Dictionary(uniqueKeysWithValues: (0..<40).map { ("key\($0)", $0) })
  var byNumber: [Int: String] = [3: "c", 1: "a", 20: "t"]
  var nested: [[Point]] = [[], [Point(x: 0, y: 0)]]
  var data = Data([0, 1, 2, 250, 255])
  var url = URL(string: "https://example.com/a/b?c=d")!
  var zulu: String = "z"
  var alpha: String = "a"
  /// Keys whose order depends on case, digits, punctuation and accents.
  var mixedKeys: [String: Int] = [
    "a": 1, "B": 2, "_b": 3, "aB": 4, "ab": 5, "a10": 6, "a9": 7, "Z": 8, "é": 9, "e": 10, "1": 11, "10": 12, "9": 13,
  ]
}

private struct Floating: Codable, Equatable {
  var values: [Double] = [0.1, 1e-5, -0.0, 1e300, 3, -2.5, .pi]
  var single: Float = 0.1
  var decimal = Decimal(string: "12345.678")!
  var date = Date(timeIntervalSinceReferenceDate: 123_456.789)
}

/// Writes through a `superEncoder`, which the stream encoder leaves to `JSONEncoder`.
private struct WithSuper: Codable, Equatable {
  var base = Point(x: 1, y: 2)
  var extra = 3

  enum CodingKeys: String, CodingKey { case extra }

  init() {}

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    extra = try container.decode(Int.self, forKey: .extra)
    base = try Point(from: container.superDecoder())
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(extra, forKey: .extra)
    try base.encode(to: container.superEncoder())
  }
}

/// Writes to two nested containers in turn: the first is closed when the second opens.
private struct Interleaved: Encodable {
  enum Keys: String, CodingKey { case left, right, value }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: Keys.self)
    var left = container.nestedContainer(keyedBy: Keys.self, forKey: .left)
    var right = container.nestedContainer(keyedBy: Keys.self, forKey: .right)
    try right.encode(2, forKey: .value)
    try left.encode(1, forKey: .value)
  }
}

/// Notes the coding path it is encoded at.
private final class PathProbe: Encodable, @unchecked Sendable {
  var seen: [String] = []

  func encode(to encoder: any Encoder) throws {
    seen = encoder.codingPath.map(\.stringValue)
    var container = encoder.singleValueContainer()
    try container.encode(1)
  }
}

private struct Holder<Value: Encodable>: Encodable {
  var items: [String: [Value]]
}

private struct EncodesNothing: Encodable {
  func encode(to encoder: any Encoder) throws {}
}

@Suite("JSONStreamEncoder", .watchdog)
struct JSONStreamEncoderTests {
  @Test func writesTheSameBytesAsJSONEncoderWithSortedKeys() throws {
    let value = Exact()
    #expect(try streamJSON(value) == foundationJSON(value))
    #expect(try streamJSON(Shape.empty) == foundationJSON(Shape.empty))
    #expect(try streamJSON([Point(x: 1, y: 2)]) == foundationJSON([Point(x: 1, y: 2)]))
    #expect(try streamJSON("fragment") == foundationJSON("fragment"))
    #expect(try streamJSON(Optional<Int>.none) == foundationJSON(Optional<Int>.none))
  }

  /// `UUID`s are written without `UUID.encode(to:)`: as values, in arrays, in optionals and as a dictionary's keys
  /// (which go through their `uuidString`), every hexadecimal digit and byte value among them.
  @Test func uuidsAreWrittenAsJSONEncoderWritesThem() throws {
    var random = SplitMix(seed: 4)
    var uuids: [UUID] = []
    for _ in 0..<200 {
      let halves = (UInt64.random(in: .min ... .max, using: &random), UInt64.random(in: .min ... .max, using: &random))
      uuids.append(UUID(uuid: withUnsafeBytes(of: halves) { $0.load(as: uuid_t.self) }))
    }
    uuids += [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), UUID()]
    uuids.append(UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)))
    #expect(try streamJSON(uuids) == foundationJSON(uuids))
    let optional: [UUID?] = [uuids[0], nil]
    #expect(try streamJSON(optional) == foundationJSON(optional))
    let byID = Dictionary(uniqueKeysWithValues: uuids.prefix(20).map { ($0, 1) })
    #expect(try streamJSON(byID) == foundationJSON(byID))
    #expect(try streamJSON(uuids[1]) == foundationJSON(uuids[1]))
    #expect(try JSONDecoder().decode([UUID].self, from: Data(streamJSON(uuids))) == uuids)
  }

  @Test func readsBackWithJSONDecoder() throws {
    let exact = Exact()
    #expect(try JSONDecoder().decode(Exact.self, from: Data(streamJSON(exact))) == exact)
    let floating = Floating()
    #expect(try JSONDecoder().decode(Floating.self, from: Data(streamJSON(floating))) == floating)
  }

  @Test func floatingPointValuesParseAsJSONEncoderWrites() throws {
    let ours = try JSONSerialization.jsonObject(with: Data(streamJSON(Floating()))) as? NSDictionary
    let theirs = try JSONSerialization.jsonObject(with: Data(foundationJSON(Floating()))) as? NSDictionary
    #expect(ours != nil)
    #expect(ours == theirs)
  }

  @Test func dictionaryKeysAreSortedWhateverTheHashOrder() throws {
    let keys = (0..<200).map { "k\(($0 * 7919) % 1000)" }
    let bytes = try streamJSON(Dictionary(uniqueKeysWithValues: keys.map { ($0, 1) }))
    let text = String(decoding: bytes, as: UTF8.self)
    let written = text.split(separator: ",").map { entry in
      String(entry.split(separator: ":")[0].filter { $0.isLetter || $0.isNumber })
    }
    #expect(written == keys.sorted())
  }

  /// Objects of one type are sorted alike; the next object with as many keys but other ones, or the same keys in
  /// another order, is sorted for its own keys; one encoder writes them all, one value after another.
  @Test func objectsWithTheSameOrOtherKeysInARowAreEachSorted() throws {
    struct Unsorted: Encodable { var zebra = 1, apple: [String: Int] = ["b": 2, "a": 1], mango = "m" }
    struct Other: Encodable { var zulu = 1, alpha = 2, mike = 3 }
    let dictionaries: [[String: Int]] = [
      ["y": 1, "x": 2, "w": 3], ["c": 1, "b": 2, "a": 3], ["x": 0, "w": 1, "y": 2],
    ]
    let encoder = JSONStreamEncoder()
    func stream<T: Encodable>(_ value: T) throws -> [UInt8] {
      var bytes: [UInt8] = []
      try encoder.encodeDirectly(value, into: &bytes)
      return bytes
    }
    for _ in 0..<2 {
      #expect(
        try stream([Unsorted(), Unsorted(zebra: 3, apple: ["d": 0, "c": 1], mango: "n")])
          == foundationJSON([Unsorted(), Unsorted(zebra: 3, apple: ["d": 0, "c": 1], mango: "n")]))
      #expect(try stream(Other()) == foundationJSON(Other()))
      #expect(try stream(dictionaries) == foundationJSON(dictionaries))
      #expect(try stream(Unsorted()) == foundationJSON(Unsorted()))
    }
  }

  @Test func aSuperEncoderOrClosedContainerFallsBackToJSONEncoder() throws {
    let encoder = JSONStreamEncoder()
    var direct: [UInt8] = [1, 2]
    #expect(throws: JSONStreamEncoder.Unsupported.self) { try encoder.encodeDirectly(WithSuper(), into: &direct) }
    #expect(throws: JSONStreamEncoder.Unsupported.self) { try encoder.encodeDirectly(Interleaved(), into: &direct) }
    #expect(direct == [1, 2])

    var bytes: [UInt8] = []
    try encoder.encode(WithSuper(), into: &bytes)
    #expect(bytes == (try foundationJSON(WithSuper())))
    #expect(try JSONDecoder().decode(WithSuper.self, from: Data(bytes)) == WithSuper())
    bytes = []
    try encoder.encode(Interleaved(), into: &bytes)
    #expect(String(decoding: bytes, as: UTF8.self) == #"{"left":{"value":1},"right":{"value":2}}"#)
    // The encoder is usable again afterwards.
    bytes = []
    try encoder.encode(Point(x: 5, y: 6), into: &bytes)
    #expect(String(decoding: bytes, as: UTF8.self) == #"{"x":5,"y":6}"#)
  }

  @Test func nonFiniteNumbersAndEmptyValuesThrowAsWithJSONEncoder() throws {
    #expect(throws: EncodingError.self) { try streamJSON([Double.nan]) }
    #expect(throws: EncodingError.self) { try foundationJSON([Double.nan]) }
    // Written as `NaN`, a line would not read back: refused, whatever `JSONEncoder` does with it.
    #expect(throws: EncodingError.self) { try streamJSON([Decimal.nan]) }
    #expect(throws: EncodingError.self) {
      var bytes: [UInt8] = []
      try JSONStreamEncoder().encode([Decimal.nan], into: &bytes)
    }
    #expect(try streamJSON([Decimal(string: "-12.5")!]) == Array("[-12.5]".utf8))
    #expect(throws: EncodingError.self) { try streamJSON(EncodesNothing()) }
    #expect(throws: EncodingError.self) { try foundationJSON(EncodesNothing()) }
    #expect(try streamJSON([EncodesNothing()]) == foundationJSON([EncodesNothing()]))
  }

  @Test func aValueSeesTheCodingPathJSONEncoderGivesIt() throws {
    let ours = PathProbe()
    _ = try streamJSON(Holder(items: ["list": [ours]]))
    let theirs = PathProbe()
    _ = try foundationJSON(Holder(items: ["list": [theirs]]))
    #expect(ours.seen == ["items", "list", "Index 0"])
    #expect(ours.seen == theirs.seen)
  }

  @Test func appendsToWhatTheBufferHolds() throws {
    var bytes = Array("prefix".utf8)
    try JSONStreamEncoder().encode(Point(x: 1, y: 2), into: &bytes)
    #expect(String(decoding: bytes, as: UTF8.self) == #"prefix{"x":1,"y":2}"#)
  }
}

@Suite(.watchdog) struct JSONTextTests {
  /// Every ASCII byte alone, first, last and between others: read back as written, and escaped as JSON requires.
  @Test(arguments: 0..<128)
  func aStringWithAnyASCIIByteReadsBackTheSame(byte: Int) throws {
    let character = String(UnicodeScalar(UInt8(byte)))
    for string in [character, character + "ab", "ab" + character, "a" + character + "b" + character + character] {
      var bytes: [UInt8] = []
      JSONText.append(string, to: &bytes)
      #expect(try JSONDecoder().decode(String.self, from: Data(bytes)) == string)
      let escaped = bytes.dropFirst().dropLast()
      #expect(!escaped.contains { $0 < 0x20 }, "a control byte is written as an escape")
      #expect(bytes.first == UInt8(ascii: "\"") && bytes.last == UInt8(ascii: "\""))
    }
  }

  @Test func escapesAreTheShortFormsWhereJSONHasThem() {
    var bytes: [UInt8] = []
    JSONText.append("a\"b\\c\nd\re\tf\u{1}g\u{1F}é", to: &bytes)
    #expect(String(decoding: bytes, as: UTF8.self) == #""a\"b\\c\nd\re\tf\u0001g\u001fé""#)
  }

  @Test func stringsAreWrittenAsJSONEncoderWritesThem() throws {
    // Every control character, the characters JSON escapes, and some it does not, against Foundation's own writer
    // with the session format's settings.
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let strings =
      (0..<0x20).map { String(UnicodeScalar(UInt8($0))) } + [
        "\"", "\\", "/", "é", "\u{2028}", "\u{7F}", "a\u{8}b\u{C}c",
      ]
    for string in strings {
      var bytes: [UInt8] = []
      JSONText.append(string, to: &bytes)
      let expected = try encoder.encode([string]).dropFirst().dropLast()
      #expect(bytes == Array(expected), "\(string.unicodeScalars.map { $0.value })")
    }
  }
}
