import Foundation
import Testing

@testable import DispatchStore

/// A list written whole again copies the JSON kept for the elements whose stored bytes did not change: the bytes
/// are the ones encoding every element writes, whatever changed in between.
@Suite("List encoding", .watchdog)
struct ListEncodingTests {
  struct Row: Identifiable, Encodable, Equatable {
    let id: Int
    var title: String
    var done = false
    /// An element that uses `superEncoder`, which the stream encoder refuses (the line is then encoded by
    /// `JSONEncoder`).
    var refuses = false

    enum CodingKeys: String, CodingKey { case id, title, done }

    func encode(to encoder: any Encoder) throws {
      var container = encoder.container(keyedBy: CodingKeys.self)
      try container.encode(title, forKey: .title)
      try container.encode(id, forKey: .id)
      try container.encode(done, forKey: .done)
      if refuses { _ = container.superEncoder() }
    }
  }

  struct Holder: Encodable {
    var rows: IdentifiedList<Row>
  }

  /// `model` encoded as a line's model, its lists written whole by `lists`, and the paths of the forms it wrote (what
  /// `"l"` lists).
  static func encoded(_ model: some Encodable, with lists: ListEncoding) throws -> (bytes: [UInt8], paths: [[UInt8]]) {
    let encoder = JSONStreamEncoder()
    lists.begin(base: .none)
    encoder.lists = lists
    var bytes: [UInt8] = []
    try encoder.encodeDirectly(model, into: &bytes)
    return (bytes, lists.paths)
  }

  /// The line's model with its list written whole by `lists`; `nil` if the stream encoder refused it.
  static func whole(_ rows: IdentifiedList<Row>, with lists: ListEncoding) throws -> [UInt8]? {
    do {
      return try encoded(Holder(rows: rows), with: lists).bytes
    } catch is JSONStreamEncoder.Unsupported {
      return nil
    }
  }

  /// A value that opens an array, then has its list write into the same value and catches what that throws.
  struct Swallowing: Encodable {
    var rows: IdentifiedList<Row>

    func encode(to encoder: any Encoder) throws {
      var container = encoder.unkeyedContainer()
      try container.encode(1)
      try? rows.encode(to: encoder)
    }
  }

  /// A list form that cannot open its object leaves the value to `JSONEncoder`, even when the value's own code catches
  /// the error: the line is never written without the list.
  @Test func aListFormRefusedWhereTheValueCatchesTheErrorStillFallsBack() {
    let value = Swallowing(rows: IdentifiedList([Row(id: 1, title: "one")]))
    #expect(throws: JSONStreamEncoder.Unsupported.self) { _ = try Self.encoded(value, with: ListEncoding()) }
  }

  /// Titles past 15 bytes, so that a title made again is stored apart: equal, not the same bytes.
  static func title(_ id: Int, _ suffix: String = "") -> String {
    "a row of the list, number \(id)\(suffix)"
  }

  @Test func aListWrittenWholeAgainIsWhatEncodingEveryElementWrites() throws {
    let kept = ListEncoding()
    var rows = IdentifiedList((0..<1_000).map { Row(id: $0, title: Self.title($0)) })
    #expect(try Self.whole(rows, with: kept) == Self.whole(rows, with: ListEncoding()))
    var generator = SystemRandomNumberGenerator()
    for round in 0..<20 {
      // Changed values, titles made again (equal, stored apart), removals, insertions, moves.
      for _ in 0..<10 {
        let id = rows[Int.random(in: 0..<rows.count, using: &generator)].id
        rows[id: id]?.done.toggle()
      }
      for _ in 0..<5 {
        let id = rows[Int.random(in: 0..<rows.count, using: &generator)].id
        rows[id: id]?.title = Self.title(id)
      }
      for _ in 0..<3 { rows.remove(at: Int.random(in: 0..<rows.count, using: &generator)) }
      for offset in 0..<3 {
        let id = 1_000 + round * 3 + offset
        rows.insert(Row(id: id, title: Self.title(id, " new")), at: Int.random(in: 0...rows.count, using: &generator))
      }
      rows.swapAt(0, rows.count - 1)
      let written = try Self.whole(rows, with: kept)
      #expect(written == (try Self.whole(rows, with: ListEncoding())), "round \(round)")
      #expect(written != nil)
    }
  }

  /// A list with the ids, in the same order, of the list last written whole encodes the elements changed since and
  /// copies the rest, its ids included: the bytes of encoding every element, rounds that change the order between.
  @Test func aListWrittenWholeInTheSameOrderIsWhatEncodingEveryElementWrites() throws {
    let kept = ListEncoding()
    var rows = IdentifiedList((0..<1_000).map { Row(id: $0, title: Self.title($0)) })
    #expect(try Self.whole(rows, with: kept) == Self.whole(rows, with: ListEncoding()))
    var generator = SystemRandomNumberGenerator()
    for round in 0..<30 {
      // Every fifth round changes the order; every third changes no value.
      if round % 5 == 4 { rows.swapAt(0, rows.count - 1) }
      if round % 3 != 0 {
        for _ in 0..<20 {
          let id = rows[Int.random(in: 0..<rows.count, using: &generator)].id
          rows[id: id]?.done.toggle()
        }
        let id = rows[Int.random(in: 0..<rows.count, using: &generator)].id
        rows[id: id]?.title = Self.title(id)
      }
      // The first and the last elements: no run of copied elements before or after them.
      if round % 7 == 6 {
        rows[0].done.toggle()
        rows[rows.count - 1].done.toggle()
      }
      let written = try Self.whole(rows, with: kept)
      #expect(written == (try Self.whole(rows, with: ListEncoding())), "round \(round)")
      #expect(written != nil)
    }
  }

  struct Named: Identifiable, Encodable {
    let id: String
    var note = ""
  }

  struct Names: Encodable {
    var names: IdentifiedList<Named>
  }

  /// An id replaced by an equal one spelt otherwise (`"é"` as `"e\u{301}"`: equal strings, other JSON) in a list
  /// written whole in the same order: its ids are written as they are now, not copied from the last time.
  @Test func anIDReplacedByAnEqualOneSpeltOtherwiseIsWrittenAsItIsNow() throws {
    func whole(_ names: IdentifiedList<Named>, with lists: ListEncoding) throws -> [UInt8] {
      try Self.encoded(Names(names: names), with: lists).bytes
    }
    let kept = ListEncoding()
    var names: IdentifiedList<Named> = [Named(id: "a"), Named(id: "\u{E9}"), Named(id: "b")]
    #expect(try whole(names, with: kept) == whole(names, with: ListEncoding()))
    names.remove(at: 1)
    names.insert(Named(id: "e\u{301}"), at: 1)
    let written = try whole(names, with: kept)
    #expect(written == (try whole(names, with: ListEncoding())))
    #expect(String(decoding: written, as: UTF8.self).contains(#""~ids":["a","e\#u{301}","b"]"#))
  }

  struct Note: Identifiable, Encodable {
    let id: UUID
    var note = ""
  }

  struct Notes: Encodable {
    var notes: IdentifiedList<Note>
  }

  /// `UUID` ids, which the encoder writes without calling their `encode(to:)`, are written as `JSONEncoder` writes
  /// them: in the ids of a list written whole and in the pairs of its changes.
  @Test func uuidIDsAreWrittenAsJSONEncoderWritesThem() throws {
    let ids = (0..<3).map { _ in UUID() }
    var notes = IdentifiedList(ids.map { Note(id: $0) })
    let lists = ListEncoding()
    let whole = String(decoding: try Self.encoded(Notes(notes: notes), with: lists).bytes, as: UTF8.self)
    let idsJSON = String(decoding: try JSONEncoder().encode(ids), as: UTF8.self)
    #expect(whole.contains(#""~ids":\#(idsJSON)"#), "\(whole)")

    notes[id: ids[1]]?.note = "changed"
    let encoder = JSONStreamEncoder()
    lists.begin(base: LineLists(lists: lists.written))
    encoder.lists = lists
    var bytes: [UInt8] = []
    try encoder.encodeDirectly(Notes(notes: notes), into: &bytes)
    let sorted = JSONEncoder()
    sorted.outputFormatting = .sortedKeys
    let idJSON = String(decoding: try JSONEncoder().encode(ids[1]), as: UTF8.self)
    let elementJSON = String(decoding: try sorted.encode(notes[id: ids[1]]), as: UTF8.self)
    #expect(
      String(decoding: bytes, as: UTF8.self) == #"{"notes":{"~set":[[\#(idJSON),\#(elementJSON)]]}}"#,
      "\(String(decoding: bytes, as: UTF8.self))")
  }

  /// A line the stream encoder refused (then encoded by `JSONEncoder`) leaves no JSON kept for the list: the next
  /// line writes what encoding every element writes.
  @Test func aRefusedLineKeepsNoElementJSON() throws {
    let kept = ListEncoding()
    var rows = IdentifiedList((0..<50).map { Row(id: $0, title: Self.title($0)) })
    #expect(try Self.whole(rows, with: kept) != nil)
    rows[id: 25]?.refuses = true
    rows[id: 10]?.done = true
    #expect(try Self.whole(rows, with: kept) == nil)
    rows[id: 25]?.refuses = false
    rows[id: 40]?.done = true
    let written = try Self.whole(rows, with: kept)
    #expect(written != nil)
    #expect(written == (try Self.whole(rows, with: ListEncoding())))
  }

  struct Section: Identifiable, Encodable, Equatable {
    let id: Int
    var rows: IdentifiedList<Row>
  }

  struct Outline: Encodable {
    var sections: IdentifiedList<Section>
  }

  /// The outline written whole by `lists`, and the paths of the forms it wrote (what `"l"` lists).
  static func whole(_ sections: IdentifiedList<Section>, with lists: ListEncoding) throws -> ([UInt8], [[UInt8]]) {
    try encoded(Outline(sections: sections), with: lists)
  }

  struct Tagged: Identifiable, Encodable {
    let id: Int
    var tags: IdentifiedList<Row>?
  }

  struct Board: Encodable {
    var items: IdentifiedList<Tagged>
  }

  /// An element that gains a list in a list written whole in the same order lists that list's form in `"l"`, at its
  /// position; the next whole write, with elements holding lists, copies them with their paths.
  @Test func anElementThatGainsAListInTheSameOrderListsItsForm() throws {
    func whole(_ items: IdentifiedList<Tagged>, with lists: ListEncoding) throws -> ([UInt8], [[UInt8]]) {
      try Self.encoded(Board(items: items), with: lists)
    }
    let kept = ListEncoding()
    var items = IdentifiedList((0..<20).map { Tagged(id: $0, tags: nil) })
    #expect(try whole(items, with: kept) == whole(items, with: ListEncoding()))
    items[id: 7]?.tags = [Row(id: 1, title: Self.title(1))]
    let gained = try whole(items, with: kept)
    #expect(gained == (try whole(items, with: ListEncoding())))
    #expect(gained.1.map { String(decoding: $0, as: UTF8.self) } == [#"["items","~all",7,"tags"]"#, #"["items"]"#])
    items[id: 3]?.tags = []
    items[id: 7]?.tags?.append(Row(id: 2, title: Self.title(2)))
    #expect(try whole(items, with: kept) == whole(items, with: ListEncoding()))
    items[id: 12]?.tags = [Row(id: 5, title: Self.title(5))]
    #expect(try whole(items, with: kept) == whole(items, with: ListEncoding()))
  }

  /// Sections holding rows: a section copied from the last whole write adds the paths of its rows' forms at its new
  /// position, the bytes and paths of encoding every section.
  @Test func elementsHoldingListsWrittenWholeAgainListTheirFormsAtTheirNewPositions() throws {
    let kept = ListEncoding()
    var sections = IdentifiedList(
      (0..<40).map { section in
        Section(
          id: section, rows: IdentifiedList((0..<(section % 4)).map { Row(id: $0, title: Self.title($0)) }))
      })
    #expect(try Self.whole(sections, with: kept) == Self.whole(sections, with: ListEncoding()))
    var generator = SystemRandomNumberGenerator()
    for round in 0..<20 {
      for offset in 0..<3 {
        let id = sections[Int.random(in: 0..<sections.count, using: &generator)].id
        sections[id: id]?.rows.append(Row(id: 100 + round * 3 + offset, title: Self.title(round)))
      }
      sections.remove(at: Int.random(in: 0..<sections.count, using: &generator))
      sections.insert(
        Section(id: 1_000 + round, rows: [Row(id: 1, title: Self.title(1))]),
        at: Int.random(in: 0...sections.count, using: &generator))
      sections.swapAt(0, sections.count - 1)
      let written = try Self.whole(sections, with: kept)
      #expect(written == (try Self.whole(sections, with: ListEncoding())), "round \(round)")
      #expect(written.1.count == sections.count + 1)
    }
  }
}
