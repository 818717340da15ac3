import Foundation
import Testing

@testable import DispatchStore

/// `JSONStreamDecoder`'s value, or `nil` where it refuses; a thrown error as `nil` too.
private func stream<T: Decodable>(_ type: T.Type, _ json: some Collection<UInt8>) -> T? {
  Array(json).withUnsafeBytes { bytes in try? JSONStreamDecoder.decode(type, from: bytes, userInfo: [:]) } ?? nil
}

/// Foundation's `JSONDecoder`: the oracle these tests compare with.
private func foundation<T: Decodable>(_ type: T.Type, _ json: some Collection<UInt8>) -> T? {
  try? JSONDecoder().decode(type, from: Data(json))
}

private func json(_ text: String) -> [UInt8] { Array(text.utf8) }

private struct Everything: Codable, Equatable {
  var name = "quote \" backslash \\ slash / newline \n tab \t bell \u{7} é 🚀 \u{10FFFF}"
  var flag = true
  var nothing: Int? = nil
  var something: Int? = 7
  var extremes: [Int64] = [.min, .max, 0, -1]
  var unsigned: UInt64 = .max
  var small: Int8 = -128
  var sizes: [UInt8] = [0, 255]
  var doubles: [Double] = [0, -0.0, 0.1, 1.5, -2.25e-300, 1e300, .greatestFiniteMagnitude, .leastNonzeroMagnitude]
  var floats: [Float] = [0.1, 3.4028235e38, .leastNonzeroMagnitude, -7.5]
  var optionals: [Int?] = [1, nil, 3]
  var shapes: [Shape] = [.circle(radius: 3), .polygon([Point(x: 1, y: 2), Point(x: -3, y: 4)], closed: true), .empty]
  var tags: [String: Int] = Dictionary(uniqueKeysWithValues: (0..<40).map { ("key\($0)", $0) })
  var byNumber: [Int: String] = [1: "one", -2: "minus two", 300: "three hundred"]
  var nested: [[String: [Point]]] = [["a": [Point(x: 0, y: 0)]], [:]]
}

/// Records the coding path of every value it decodes, as its decoder names it.
private struct PathProbe: Decodable, Equatable {
  var paths: [[String]] = []
  var children: [PathProbe] = []

  enum Key: String, CodingKey { case children }

  init(from decoder: any Decoder) throws {
    paths = [decoder.codingPath.map { $0.intValue.map { "#\($0)" } ?? $0.stringValue }]
    let container = try decoder.container(keyedBy: Key.self)
    if container.contains(.children) {
      children = try container.decode([PathProbe].self, forKey: .children)
    }
  }
}

/// Elements that do not decode as an `Int` are skipped: the element is read again as something else.
private struct LossyInts: Decodable, Equatable {
  var values: [Int] = []

  private struct Skip: Decodable {}

  init(from decoder: any Decoder) throws {
    var container = try decoder.unkeyedContainer()
    while !container.isAtEnd {
      if let value = try? container.decode(Int.self) {
        values.append(value)
      } else if (try? container.decode(String.self)) == nil {
        _ = try container.decode(Skip.self)
      }
    }
  }
}

/// A type whose own code catches a failure to read `Data`, which `JSONDecoder` reads (base64).
private struct OptionalBlob: Decodable, Equatable {
  var blob: Data?
  enum Key: String, CodingKey { case blob }
  init(from decoder: any Decoder) throws {
    blob = try? decoder.container(keyedBy: Key.self).decode(Data.self, forKey: .blob)
  }
}

/// The keys an object's container lists, in the order listed.
private struct KeysProbe: Decodable, Equatable {
  struct AnyKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
  }
  let keys: [String]

  init(from decoder: any Decoder) throws {
    keys = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue)
  }
}

@Suite("JSONStreamDecoder", .watchdog)
struct JSONStreamDecoderTests {
  @Test func decodesWhatTheStreamEncoderWritesAsJSONDecoderDoes() throws {
    var bytes: [UInt8] = []
    try JSONStreamEncoder().encodeDirectly(Everything(), into: &bytes)
    let decoded = try #require(stream(Everything.self, bytes))
    #expect(decoded == Everything())
    #expect(decoded == foundation(Everything.self, bytes))
    // Floating-point values bit for bit, the sign of zero included.
    #expect(decoded.doubles.map(\.bitPattern) == Everything().doubles.map(\.bitPattern))
    #expect(decoded.floats.map(\.bitPattern) == Everything().floats.map(\.bitPattern))
  }

  @Test func readsEscapesAndWhitespaceAsJSONDecoderDoes() throws {
    let text = #" { "a" : "\u00e9\ud83d\ude80\n\t\"\\\/\b\f\r" , "b" :[ 1 ,2 ] } "#
    struct Pair: Decodable, Equatable {
      var a: String
      var b: [Int]
    }
    let decoded = try #require(stream(Pair.self, json(text)))
    #expect(decoded == foundation(Pair.self, json(text)))
    #expect(decoded.a == "é🚀\n\t\"\\/\u{8}\u{C}\r")
  }

  @Test func aRepeatedKeyReadsAsJSONDecoderReadsIt() throws {
    struct One: Decodable, Equatable { var a: Int }
    let few = json(#"{"a":1,"a":2}"#)
    let many = json(#"{"a":1,"b":0,"c":0,"d":0,"e":0,"f":0,"g":0,"h":0,"i":0,"a":2}"#)
    for text in [few, many] {
      #expect(stream(One.self, text) == foundation(One.self, text))
      #expect(stream([String: Int].self, text) == foundation([String: Int].self, text))
    }
  }

  @Test func codingPathsAreJSONDecoders() throws {
    let text = json(#"{"children":[{"children":[{}, {}]}, {}]}"#)
    let decoded = try #require(stream(PathProbe.self, text))
    #expect(decoded == foundation(PathProbe.self, text))
    #expect(decoded.children[0].children[1].paths == [["children", "#0", "children", "#1"]])
  }

  @Test func aValueThatTriesOneTypeThenAnotherReadsTheSameElement() throws {
    let text = json(#"[1, "two", {"x": 3}, 4]"#)
    #expect(stream(LossyInts.self, text)?.values == [1, 4])
    #expect(stream(LossyInts.self, text) == foundation(LossyInts.self, text))
  }

  @Test(arguments: [
    #"{"blob":"AAE="}"#,  // `Data`, which `JSONDecoder` reads from base64
    #"1.0"#, #"1e2"#, #"-0"#,  // integers in forms a writer does not make (the last for an unsigned type)
    #"18446744073709551616"#, #"-9223372036854775809"#,  // out of range
    #"1e400"#,  // infinite as a double
    #""\ud800""#, #""\udc00x""#,  // unpaired surrogates
  ])
  func whatItDoesNotReadAsJSONDecoderWouldIsLeftToJSONDecoder(text: String) throws {
    let bytes = json(text)
    switch text {
    case #"{"blob":"AAE="}"#:
      // Refused even though the type's own code caught the failure.
      #expect(stream(OptionalBlob.self, bytes) == nil)
      #expect(foundation(OptionalBlob.self, bytes)?.blob == Data([0, 1]))
    case #"-0"#:
      #expect(stream(UInt.self, bytes) == nil)
    case #"1e400"#:
      #expect(stream(Double.self, bytes) == nil)
    case _ where text.hasPrefix("\""):
      #expect(stream(String.self, bytes) == nil)
    default:
      #expect(stream(Int.self, bytes) == nil)
      #expect(stream(Int64.self, bytes) == nil)
    }
  }

  @Test(arguments: [
    "", " ", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "tru", "nul", "\"open", "[1 2]", "{\"a\" 1}", "{1:2}",
    "\"tab\there\"", "\"\\x\"", "\"\\u12g4\"", "[1]]", "\u{FEFF}1", "NaN", "+1",
  ])
  func malformedJSONIsRefused(text: String) {
    #expect(stream(JSONValue.self, json(text)) == nil)
  }

  @Test func invalidUTF8InAStringIsRefused() {
    #expect(stream(String.self, [0x22, 0xC3, 0x28, 0x22]) == nil)
    #expect(stream(String.self, [0x22, 0xED, 0xA0, 0x80, 0x22]) == nil)  // an encoded surrogate
    #expect(foundation(String.self, [0x22, 0xC3, 0x28, 0x22]) == nil)
  }

  @Test func aDocumentNestedPastJSONDecodersLimitIsRefused() {
    let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
    #expect(stream(JSONValue.self, json(deep)) == nil)
    let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
    #expect(stream(JSONValue.self, json(fine)) == foundation(JSONValue.self, json(fine)))
  }

  @Test func numbersJSONDecoderReadsItsOwnWayAreLeftToIt() {
    // Digits past an integer's range, then an exponent that brings them back: whole, so maybe readable there.
    #expect(stream(Int8.self, json("1000e-1")) == nil)
    let big = json("100000000000000000000e-5")
    if let value = stream(JSONValue.self, big) { #expect(value == foundation(JSONValue.self, big)) }
    // Digits that underflow to zero: refused there.
    #expect(stream(Double.self, json("1e-400")) == nil)
    #expect(stream(Float.self, json("1e-50")) == nil)
    #expect(stream(Double.self, json("0e-400")) == foundation(Double.self, json("0e-400")))
    #expect(stream(Int128.self, json("5")) == nil)
    #expect(stream(UInt128.self, json("5")) == nil)
  }

  @Test func keysCompareAsStringsDoAndAreCheckedWhole() throws {
    struct Café: Decodable, Equatable {
      var café: Int?
    }
    // The key written decomposed (e and a combining accent), the property's name composed: equal as strings.
    let decomposed = json("{\"cafe\u{301}\":1}")
    #expect(stream(Café.self, decomposed) == foundation(Café.self, decomposed))
    #expect(stream(Café.self, decomposed)?.café == 1)
    // A key of the type's not in ASCII, written in ASCII: the Kelvin sign is canonically "K".
    struct Kelvin: Decodable, Equatable {
      var kelvin: Int?
      enum CodingKeys: String, CodingKey { case kelvin = "\u{212A}" }
    }
    let ascii = json(#"{"Kx":0,"K":2}"#)
    #expect(stream(Kelvin.self, ascii) == foundation(Kelvin.self, ascii))
    #expect(stream(Kelvin.self, ascii)?.kelvin == 2)
    // A key with an unpaired surrogate or invalid UTF-8, after the key read: refused, as there.
    struct A: Decodable { var a: Int }
    #expect(stream(A.self, json(#"{"a":1,"\udc00":2}"#)) == nil)
    #expect(stream(A.self, json(#"{"a":1,""#) + [0xFF] + json(#"":2}"#)) == nil)
  }

  /// A model whose own code catches a failure to read a `URL` (which this decoder leaves to `JSONDecoder`), with a
  /// list recorded as changes: each line is read again by `JSONDecoder` from the same base.
  @Test func aLineReadAgainAfterARefusalReadsFromTheSameBase() throws {
    struct Row: Identifiable, Codable, Equatable, Sendable {
      let id: Int
      var done = false
    }
    struct Linked: ModelType, Codable, Equatable {
      var rows = IdentifiedList((0..<50).map { Row(id: $0) })
      var link: URL? = URL(string: "https://example.com/a")
      enum CodingKeys: String, CodingKey { case rows, link }
      init() {}
      init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        rows = try container.decode(IdentifiedList<Row>.self, forKey: .rows)
        link = try? container.decode(URL.self, forKey: .link)
      }
    }
    enum Toggle: ActionType, Codable { case row(Int) }
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "linked", model: Linked.self, action: Toggle.self)
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    try dispatcher.register(
      store: Store(identifier: "linked", model: Linked()) { (action: Toggle, model) in
        guard case .row(let id) = action else { return }
        model.rows[id: id]?.done.toggle()
      })
    let recorder = RecorderMiddleware(maxNumberOfRecords: 100)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    for id in [3, 7, 3, 40, 12] { try dispatcher.dispatchSync(action: Toggle.row(id)) }
    recorder.flush()
    #expect(file.lines.last?.contains(#""~set""#) == true)  // Written as changes.

    let session = try Session.load(from: file.url, codecs: codecs)
    let expected = recorder.records.map { $0.model as? Linked }
    #expect(try session.records.map { $0.model as? Linked } == expected)
    let last = try Session.load(from: file.url, codecs: codecs).record(at: session.firstIndex + 4)
    #expect(last.model as? Linked == expected.last!)
    #expect((last.model as? Linked)?.link == URL(string: "https://example.com/a"))
  }

  /// Random JSON, and the same with random bytes changed: whatever this decoder reads, `JSONDecoder` reads the same.
  @Test func randomDocumentsAndDamagedOnesReadAsJSONDecoderReadsThemOrAreRefused() async {
    // Off the cooperative pool (see `onOwnThread`); what differs comes back as text.
    let (read, mismatches) = await onOwnThread { Self.readRandomDocuments() }
    #expect(mismatches == [])
    // Documents without fractions are read here, not left to `JSONDecoder` (`JSONValue` tries an integer first).
    #expect(read > 500)
  }

  /// Reads 2,000 random documents and 6,000 damaged ones both ways; returns how many this decoder read whole, and
  /// the documents read differently.
  private static func readRandomDocuments() -> (read: Int, mismatches: [String]) {
    var mismatches: [String] = []
    var random = SplitMix(seed: 27)
    func value(depth: Int) -> String {
      switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &random) {
      case 0: return "null"
      case 1: return Bool.random(using: &random) ? "true" : "false"
      case 2: return String(Int64.random(in: .min ... .max, using: &random))
      case 3: return String(Double.random(in: -1e6...1e6, using: &random))
      case 4:
        let pieces = ["a", "é", "🚀", "\\n", "\\\"", "\\u0041", " ", "\\ud83d\\ude80"]
        return "\""
          + (0..<Int.random(in: 0..<5, using: &random)).map { _ in pieces.randomElement(using: &random)! }
          .joined() + "\""
      case 5:
        return "["
          + (0..<Int.random(in: 0..<4, using: &random)).map { _ in value(depth: depth + 1) }
          .joined(separator: ",") + "]"
      default:
        return "{"
          + (0..<Int.random(in: 0..<12, using: &random)).map { _ in
            "\"k\(Int.random(in: 0..<10, using: &random))\":" + value(depth: depth + 1)
          }.joined(separator: ",") + "}"
      }
    }
    var read = 0
    for _ in 0..<2_000 {
      var bytes = json(value(depth: 0))
      let whole = stream(JSONValue.self, bytes)
      let oracle = foundation(JSONValue.self, bytes)
      if let whole {
        read += 1
        if whole != oracle { mismatches.append(String(decoding: bytes, as: UTF8.self)) }
      }
      for _ in 0..<3 {
        bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
        if let damaged = stream(JSONValue.self, bytes), damaged != foundation(JSONValue.self, bytes) {
          mismatches.append("\(bytes)")
        }
      }
    }
    return (read, mismatches)
  }

  /// An object's keys, each name once (the first of a repeated one, a name spelt two ways that `String` finds equal
  /// once), in a few members and in many (found through the index), as `JSONDecoder` lists them.
  @Test(arguments: [
    #"{}"#, #"{"toggle":{"id":1}}"#, #"{"b":1,"a":2,"b":3}"#, #"{"\u00e9":1,"e\u0301":2,"x":3}"#,
    "{" + (0..<12).map { #""k\#($0 % 9)":\#($0)"# }.joined(separator: ",") + "}",
    "{" + (0..<12).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + #","\u00e9":1,"e\u0301":2}"#,
  ])
  func anObjectListsEachKeyOnce(text: String) throws {
    let keys = try #require(stream(KeysProbe.self, json(text))).keys
    #expect(Set(keys).count == keys.count, "\(keys)")
    #expect(Set(keys) == Set(try #require(foundation(KeysProbe.self, json(text))).keys))
  }

  /// In the order written, each name where it first appears.
  @Test func anObjectListsItsKeysInTheOrderWritten() throws {
    #expect(stream(KeysProbe.self, json(#"{"b":1,"a":2,"b":3,"c":4}"#))?.keys == ["b", "a", "c"])
    let many = "{" + (0..<12).map { #""k\#(11 - $0 % 6)":\#($0)"# }.joined(separator: ",") + "}"
    #expect(stream(KeysProbe.self, json(many))?.keys == (6...11).reversed().map { "k\($0)" })
  }
}
