import Foundation
import Testing

@testable import DispatchStore

/// Lists inside the elements of lists (format 3): a changed element's lists are written as the changes from the
/// element it replaces, so that a record of one changed row of an outline stays small however many rows the outline
/// has, and every way of reading a session reads them back exactly (issue 27, points 1 and 2, the nested shape).
@Suite("Nested list forms", .timeLimit(.minutes(5)), .watchdog, .offThePool)
struct NestedListFormsTests {
  struct Tag: Identifiable, Codable, Equatable, Sendable {
    let id: String
    var color: Int
  }

  struct Row: Identifiable, Codable, Equatable, Sendable {
    let id: Int
    var title: String
    var done = false
    var tags: IdentifiedList<Tag> = []
  }

  struct Section: Identifiable, Codable, Equatable, Sendable {
    let id: Int
    var name: String
    var rows: IdentifiedList<Row>
    /// Rows copied here by `pin`: a list that appears in a changed element.
    var pinned: IdentifiedList<Row>?
  }

  struct Outline: ModelType, Codable, Equatable {
    var title = "Outline"
    var sections: IdentifiedList<Section>

    /// `sections` sections of `rows` rows each; row `r` of section `s` has the id `s * 1_000 + r`.
    init(sections: Int, rows: Int) {
      self.sections = IdentifiedList(
        (0..<sections).map { section in
          Section(
            id: section, name: "Section \(section)",
            rows: IdentifiedList((0..<rows).map { Row(id: section * 1_000 + $0, title: "Row \($0)") }))
        })
    }
  }

  enum OutlineAction: ActionType, Codable, Equatable {
    case toggle(row: Int)
    case rename(row: Int, title: String)
    case addRow(section: Int, row: Int)
    case removeRow(row: Int)
    case moveRow(row: Int, to: Int)
    case tag(row: Int, tag: String, color: Int)
    case untag(row: Int, tag: String)
    case pin(row: Int)
    case addSection(Int)
    case removeSection(Int)
    case moveSection(Int, to: Int)
  }

  static func reduce(_ action: OutlineAction, _ model: inout Outline) {
    func section(of row: Int) -> Int? { model.sections.first { $0.rows[id: row] != nil }?.id }
    switch action {
    case .toggle(let row):
      if let section = section(of: row) { model.sections[id: section]?.rows[id: row]?.done.toggle() }
    case .rename(let row, let title):
      if let section = section(of: row) { model.sections[id: section]?.rows[id: row]?.title = title }
    case .addRow(let section, let row):
      model.sections[id: section]?.rows.insert(Row(id: row, title: "New \(row)"), at: 0)
    case .removeRow(let row):
      if let section = section(of: row) { _ = model.sections[id: section]?.rows.remove(id: row) }
    case .moveRow(let row, let to):
      if let section = section(of: row), var rows = model.sections[id: section]?.rows,
        let element = rows.remove(id: row)
      {
        rows.insert(element, at: min(to, rows.count))
        model.sections[id: section]?.rows = rows
      }
    case .tag(let row, let tag, let color):
      if let section = section(of: row) {
        if model.sections[id: section]?.rows[id: row]?.tags[id: tag] != nil {
          model.sections[id: section]?.rows[id: row]?.tags[id: tag]?.color = color
        } else {
          model.sections[id: section]?.rows[id: row]?.tags.append(Tag(id: tag, color: color))
        }
      }
    case .untag(let row, let tag):
      if let section = section(of: row) { _ = model.sections[id: section]?.rows[id: row]?.tags.remove(id: tag) }
    case .pin(let row):
      if let section = section(of: row), let element = model.sections[id: section]?.rows[id: row] {
        var pinned = model.sections[id: section]?.pinned ?? []
        if pinned[id: row] == nil { pinned.append(element) }
        model.sections[id: section]?.pinned = pinned.count > 3 ? nil : pinned
      }
    case .addSection(let id):
      model.sections.append(Section(id: id, name: "Section \(id)", rows: [Row(id: id * 1_000, title: "Row 0")]))
    case .removeSection(let id):
      _ = model.sections.remove(id: id)
    case .moveSection(let id, let to):
      if let element = model.sections.remove(id: id) {
        model.sections.insert(element, at: min(to, model.sections.count))
      }
    }
  }

  static func makeStore(sections: Int, rows: Int) -> Store<Outline, OutlineAction> {
    Store(identifier: "outline", model: Outline(sections: sections, rows: rows)) { action, model in
      reduce(action, &model)
    }
  }

  static let codecs: SessionCodecs = {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "outline", model: Outline.self, action: OutlineAction.self)
    return codecs
  }()

  @Test func aChangedRowOfATenThousandRowOutlineIsWrittenAsTheChangesOfItsSection() throws {
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    let store = Self.makeStore(sections: 100, rows: 100)
    try dispatcher.register(store: store)
    let recorder = RecorderMiddleware(maxNumberOfRecords: 100)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: Self.codecs)
    try dispatcher.dispatchSync(action: OutlineAction.toggle(row: 3_007))
    try dispatcher.dispatchSync(action: OutlineAction.toggle(row: 42_042))
    try dispatcher.dispatchSync(action: OutlineAction.tag(row: 42_042, tag: "red", color: 1))
    try dispatcher.dispatchSync(action: OutlineAction.tag(row: 42_042, tag: "red", color: 2))
    recorder.flush()
    #expect(recorder.persistenceError == nil)

    let lines = file.lines
    try #require(lines.count == 6)
    // The first record: the sections whole, and the rows of each whole inside it, at their paths through the form.
    #expect(lines[2].contains(#"{"id":0,"name":"Section 0","rows":{"~all":[{"done":false,"id":0,"tags":{"~all":[],"#))
    #expect(lines[2].contains(#"["sections","~all",99,"rows","~all",99,"tags"]"#))
    #expect(lines[2].contains(#"["sections","~all",0,"rows"],"#))
    // Then one row's change inside its section's change, whatever the outline's size (its tags unchanged: `{}`).
    #expect(
      lines[3].contains(
        #""m":{"sections":{"~set":[[42,{"id":42,"name":"Section 42","rows":{"~set":[[42042,{"done":true,"id":42042,"tags":{},"title":"Row 42"}]]}}]]},"title":"Outline"},"l":[["sections","~set",0,1,"rows","~set",0,1,"tags"],["sections","~set",0,1,"rows"],["sections"]]"#
      ))
    #expect(
      lines[5].contains(
        #""rows":{"~set":[[42042,{"done":true,"id":42042,"tags":{"~set":[["red",{"color":2,"id":"red"}]]},"title":"Row 42"}]]}"#
      ))
    for line in lines[3...] { #expect(line.utf8.count < 700, "\(line.utf8.count) bytes: \(line.prefix(300))") }

    let session = try Session.load(from: file.url, codecs: Self.codecs)
    #expect(try session.records.map { $0.model as? Outline } == recorder.records.map { $0.model as? Outline })
  }

  /// A long session of two outline stores (rows and their tags changed, added, removed and moved, optional pinned
  /// lists that come and go, sections moved): each record compares by its bytes, on either thread, resting on lists
  /// found without encoding them where the thread comparing it did not compare the record before (a line of whole
  /// lists, a run's first record).
  @Test func theLinesAfterALineOfWholeListsCompareByBytesAgainstTheListsFoundForIt() throws {
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    var codecs = SessionCodecs()
    var stores: [Store<Outline, OutlineAction>] = []
    for identifier in ["outline", "second"] {
      let store = Store(identifier: identifier, model: Outline(sections: 4, rows: 8)) { action, model in
        Self.reduce(action, &model)
      }
      try dispatcher.register(store: store)
      codecs.register(storeIdentifier: identifier, model: Outline.self, action: OutlineAction.self)
      stores.append(store)
    }
    let recorder = RecorderMiddleware(maxNumberOfRecords: 10)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    var random = SplitMix(seed: 1_308)
    let steps = isSanitized ? 1_100 : 2_300
    for step in 0..<steps {
      let store = stores[step % 2]
      let rowIDs = store.model.sections.flatMap { $0.rows.map(\.id) }
      let row = rowIDs.isEmpty ? 0 : rowIDs[Int.random(in: 0..<rowIDs.count, using: &random)]
      let section = store.model.sections[Int.random(in: 0..<store.model.sections.count, using: &random)].id
      let action: OutlineAction =
        switch Int.random(in: 0..<9, using: &random) {
        case 0: .rename(row: row, title: "Renamed \(step)")
        case 1: .addRow(section: section, row: section * 1_000 + 100 + step)
        case 2: .removeRow(row: row)
        case 3: .moveRow(row: row, to: Int.random(in: 0..<8, using: &random))
        case 4: .tag(row: row, tag: ["red", "green"][step % 2], color: step)
        case 5: .untag(row: row, tag: "red")
        case 6: .pin(row: row)
        case 7: .moveSection(section, to: Int.random(in: 0..<4, using: &random))
        default: .toggle(row: row)
        }
      try dispatcher.dispatchSync(action: action, to: store.identifier)
    }
    recorder.flush()
    #expect(recorder.persistenceError == nil)

    let session = try Session.load(from: file.url, codecs: codecs)
    let verifying = Dispatcher()
    for identifier in ["outline", "second"] {
      try verifying.register(
        store: Store(identifier: identifier, model: Outline(sections: 4, rows: 8)) { action, model in
          Self.reduce(action, &model)
        })
    }
    var counts = Session.VerifyCounts()
    try session.verify(against: verifying, mode: .sync, counts: &counts)
    // Every record compared by its bytes, here or on the other thread, which takes the first runs of 32 records (few
    // wait there then) and the lines of whole lists.
    #expect(counts.byBytes == session.recordCount)
    #expect(counts.decoded == 0)
    #expect(counts.handedOver >= 128)
  }

  /// Random sessions of changes at every depth read back exactly every way.
  ///
  /// Rows, their tags, optional lists that come and go, sections added, removed and moved, with undos and jumps:
  /// every record reads back as recorded, some one at a time in any order, and all at once; the session verifies,
  /// restores its current model, and saves again to the same models. Six sessions of 60 steps (two under a
  /// sanitizer).
  @Test func randomSessionsOfNestedChangesReadBackExactlyEveryWay() async throws {
    let differences = try await onOwnThread { () throws -> [String] in try Self.randomSessions() }
    #expect(differences.isEmpty, "\(differences)")
  }

  static func randomSessions() throws -> [String] {
    var differences: [String] = []
    var random = SplitMix(seed: 2_027)
    let sections = isSanitized ? 5 : 20
    for round in 0..<(isSanitized ? 2 : 6) {
      let file = TemporaryFile()
      let dispatcher = Dispatcher()
      let store = Self.makeStore(sections: sections, rows: 30)
      try dispatcher.register(store: store)
      let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
      dispatcher.register(middleware: recorder)
      try recorder.attach(appendingTo: file.url, codecs: Self.codecs)
      var nextSection = 1_000
      for step in 0..<60 {
        let sectionIDs = store.model.sections.map(\.id)
        let rowIDs = store.model.sections.flatMap { $0.rows.map(\.id) }
        let row = rowIDs.isEmpty ? 0 : rowIDs[Int.random(in: 0..<rowIDs.count, using: &random)]
        let section = sectionIDs.isEmpty ? 0 : sectionIDs[Int.random(in: 0..<sectionIDs.count, using: &random)]
        let tag = ["red", "green", "blue", "ü \"quoted\""][Int.random(in: 0..<4, using: &random)]
        let action: OutlineAction? =
          switch Int.random(in: 0..<16, using: &random) {
          case 0: .rename(row: row, title: "Renamed \(step)")
          case 1: .addRow(section: section, row: section * 1_000 + 500 + step)
          case 2: .removeRow(row: row)
          case 3: .moveRow(row: row, to: Int.random(in: 0..<30, using: &random))
          case 4, 5: .tag(row: row, tag: tag, color: step)
          case 6: .untag(row: row, tag: tag)
          case 7: .pin(row: row)
          case 8:
            {
              nextSection += 1
              return .addSection(nextSection)
            }()
          case 9: .removeSection(section)
          case 10: .moveSection(section, to: Int.random(in: 0..<sections, using: &random))
          case 11:
            {
              _ = try? recorder.undo()
              return nil
            }()
          case 12:
            {
              if let first = recorder.records.first {
                _ = try? recorder.jump(to: Int.random(in: first.index...recorder.records.last!.index, using: &random))
              }
              return nil
            }()
          default: .toggle(row: row)
          }
        if let action { try dispatcher.dispatchSync(action: action) }
      }
      recorder.flush()
      if let error = recorder.persistenceError { differences.append("round \(round): \(error)") }
      let recorded = recorder.records
      if !String(decoding: file.data, as: UTF8.self).contains(#""rows":{"~set""#) {
        differences.append("round \(round): no row was written as a change inside its section's")
      }

      let session = try Session.load(from: file.url, codecs: Self.codecs)
      if try session.records.map({ $0.model as? Outline }) != recorded.map({ $0.model as? Outline }) {
        differences.append("round \(round): the records read back differ")
      }
      let fresh = try Session.load(from: file.url, codecs: Self.codecs)
      // Twelve records, in any order: each reads the lines its lists rest on.
      for offset in recorded.indices.shuffled(using: &random).prefix(12) {
        if try fresh.record(at: recorded[offset].index).model as? Outline != recorded[offset].model as? Outline {
          differences.append("round \(round): record \(recorded[offset].index) read alone differs")
        }
      }
      let verifying = Dispatcher()
      try verifying.register(store: Self.makeStore(sections: sections, rows: 30))
      do {
        try session.verify(against: verifying)
      } catch {
        differences.append("round \(round): \(error)")
      }
      let restoring = Dispatcher()
      let restored = Self.makeStore(sections: sections, rows: 30)
      try restoring.register(store: restored)
      try session.restore(into: restoring)
      if restored.model != store.model { differences.append("round \(round): the restored model differs") }
      let saved = TemporaryFile()
      try session.save(to: saved.url)
      if try Session.load(from: saved.url, codecs: Self.codecs).records.map({ $0.model as? Outline })
        != recorded.map({ $0.model as? Outline })
      {
        differences.append("round \(round): the saved copy reads back differently")
      }
    }
    return differences
  }

  /// Nested list forms a writer never writes are corrupt lines naming them, whichever way the record is read: changes
  /// inside an element written whole (no element it replaces), and changes that do not fit the list in the element
  /// replaced.
  @Test func craftedNestedListFormsAreCorruptLinesNamingThem() throws {
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    try dispatcher.register(store: Self.makeStore(sections: 3, rows: 3))
    let recorder = RecorderMiddleware(maxNumberOfRecords: 100)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: Self.codecs)
    try dispatcher.dispatchSync(action: OutlineAction.toggle(row: 1_001))
    try dispatcher.dispatchSync(action: OutlineAction.toggle(row: 2_002))
    recorder.flush()
    let objects = file.lines.map(ListFormsTests.object)
    try #require(objects.count == 4)
    #expect(objects[3].contains(#""rows":{"~set":[[2002,{"done":true,"id":2002,"tags":{},"title":"Row 2"}]]}"#))
    for (line, original, edit, what) in [
      (
        2, #""rows":{"~all":[{"done":false,"id":0,"tags":{"~all":[],"~ids":[]}"#,
        #""rows":{"~all":[{"done":false,"id":0,"tags":{"~set":[["red",{"color":1,"id":"red"}]]}"#,
        "changes inside an element written whole"
      ),
      (3, #""rows":{"~set":[[2002,"#, #""rows":{"~remove":[7],"~set":[[2002,"#, "a removal of a row not there"),
      (3, #""rows":{"~set":[[2002,"#, #""rows":{"~order":[[0,9,[]]],"~set":[[2002,"#, "a splice past the end"),
      (3, #""tags":{}"#, #""tags":{"~remove":["red"]}"#, "a removal of a tag not there"),
    ] {
      var edited = objects
      #expect(edited[line].contains(original), "\(what)")
      edited[line] = edited[line].replacingOccurrences(of: original, with: edit)
      writeSession(edited, to: file.url)
      let session = try Session.load(from: file.url, codecs: Self.codecs)
      #expect(throws: SessionError.self, "\(what)") { try session.record(at: line - 2) }
      do {
        _ = try Session.load(from: file.url, codecs: Self.codecs).records
        Issue.record("\(what): read without an error")
      } catch {
        guard case .corruptLine(let number, _) = error else {
          Issue.record("\(what): \(error)")
          continue
        }
        #expect(number == line + 1, "\(what)")
      }
    }
  }

  struct Board: ModelType, Codable, Equatable {
    var columns: IdentifiedList<Column>
  }

  /// Rows by key, in a dictionary that encodes as an array of keys and values, in its hash order.
  struct Column: Identifiable, Codable, Equatable, Sendable {
    let id: Int
    var byKey: [Key: IdentifiedList<Row>]
  }

  /// A key that encodes as an object: a dictionary of them encodes as an array of keys and values.
  struct Key: Hashable, Codable, Sendable {
    let name: String
  }

  enum BoardAction: ActionType, Codable {
    case toggle(column: Int, key: String, row: Int)
  }

  static func makeBoard() -> Store<Board, BoardAction> {
    let rows = IdentifiedList((0..<20).map { Row(id: $0, title: "Row \($0)") })
    let keys = (0..<8).map { Key(name: "key \($0)") }
    let model = Board(
      columns: IdentifiedList(
        (0..<3).map { column in Column(id: column, byKey: Dictionary(uniqueKeysWithValues: keys.map { ($0, rows) })) }))
    return Store(identifier: "board", model: model) { action, model in
      switch action {
      case .toggle(let column, let key, let row):
        model.columns[id: column]?.byKey[Key(name: key)]?[id: row]?.done.toggle()
      }
    }
  }

  /// Lists inside a dictionary of an element, which encodes in its hash order: a reader's decoded element need not
  /// share the writer's order, so they are written whole inside a changed element, and read back exactly.
  @Test func listsInsideADictionaryOfAChangedElementAreWrittenWholeAndReadBackExactly() throws {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "board", model: Board.self, action: BoardAction.self)
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    try dispatcher.register(store: Self.makeBoard())
    let recorder = RecorderMiddleware(maxNumberOfRecords: 100)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    for step in 0..<24 {
      try dispatcher.dispatchSync(action: BoardAction.toggle(column: step % 3, key: "key \(step % 8)", row: step % 20))
    }
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    let lines = file.lines
    #expect(lines[3].contains(#""columns":{"~set":[["#))
    #expect(lines[3].contains(#""byKey",1]"#))
    // No row list as changes: whole, with its ids, inside each changed column.
    for line in lines[3...] {
      #expect(line.range(of: #"\{"~set":\[\[[0-9]+,\{"done""#, options: .regularExpression) == nil)
      #expect(line.contains(#""byKey":[{"name":"key "#))
    }
    let session = try Session.load(from: file.url, codecs: codecs)
    #expect(try session.records.map { $0.model as? Board } == recorder.records.map { $0.model as? Board })
    let verifying = Dispatcher()
    try verifying.register(store: Self.makeBoard())
    try session.verify(against: verifying)
  }
}
