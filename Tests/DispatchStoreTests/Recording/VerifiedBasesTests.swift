import Foundation
import Testing

@testable import DispatchStore

/// Verify passes a record line by its bytes only against the lists the reader has for the line it rests on: a line
/// before it that decodes to the re-run's model, but whose lists the reader finds elsewhere, is refused.
@Suite(.timeLimit(.minutes(1)), .watchdog)
struct VerifiedBasesTests {
  struct Item: Identifiable, Codable, Equatable, Sendable {
    let id: Int
    var count = 0
  }

  /// Lists in a dictionary: their paths hold the keys, which a line may spell otherwise.
  struct Groups: ModelType, Codable, Equatable {
    var groups: [Int: IdentifiedList<Item>] = [1: [Item(id: 1), Item(id: 2)]]
  }

  enum GroupsAction: ActionType, Codable, Equatable {
    case bump(group: Int, id: Int)
  }

  static var codecs: SessionCodecs {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "groups", model: Groups.self, action: GroupsAction.self)
    return codecs
  }

  static func makeStore() -> Store<Groups, GroupsAction> {
    Store(identifier: "groups", model: Groups()) { (action: GroupsAction, model) in
      guard case .bump(let group, let id) = action else { return }
      model.groups[group]?[id: id]?.count += 1
    }
  }

  /// Named lists written as pairs in the order of their names, read in any order: as a `Set` or a dictionary whose keys
  /// are not strings writes them, in an order another process need not share, but fixed here.
  struct Panes: Codable, Equatable {
    var lists: [String: IdentifiedList<Item>]

    init(_ lists: [String: IdentifiedList<Item>]) { self.lists = lists }

    func encode(to encoder: any Encoder) throws {
      var container = encoder.unkeyedContainer()
      for name in lists.keys.sorted() {
        try container.encode(name)
        try container.encode(lists[name])
      }
    }

    init(from decoder: any Decoder) throws {
      var container = try decoder.unkeyedContainer()
      lists = [:]
      while !container.isAtEnd {
        let name = try container.decode(String.self)
        lists[name] = try container.decode(IdentifiedList<Item>.self)
      }
    }
  }

  struct Desk: ModelType, Codable, Equatable {
    var panes = Panes(["a": [Item(id: 1)], "b": [Item(id: 2)]])
    var log: IdentifiedList<Item> = [Item(id: 0)]
  }

  enum DeskAction: ActionType, Codable, Equatable {
    case start
    /// Empties the panes and counts in the log.
    case clear
    /// Counts in pane `a`.
    case bumpA
  }

  static func deskCodecs() -> SessionCodecs {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "desk", model: Desk.self, action: DeskAction.self)
    return codecs
  }

  static func makeDesk() -> Store<Desk, DeskAction> {
    Store(identifier: "desk", model: Desk()) { (action: DeskAction, model) in
      switch action {
      case .start: model.log[id: 0]?.count += 1
      case .clear:
        model.panes.lists = [:]
        model.log[id: 0]?.count += 1
      case .bumpA: model.panes.lists["a"]?[id: 1]?.count += 1
      }
    }
  }

  /// A desk recorded with `start` then `second`, its first record's panes written in the other order (as another
  /// process may): the reader files pane `b`'s list where the re-run's model has `a`'s.
  static func recordedDesk(second: DeskAction) throws -> (file: TemporaryFile, session: Session) {
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeDesk())
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: deskCodecs())
    try dispatcher.dispatchSync(action: DeskAction.start)
    try dispatcher.dispatchSync(action: second)
    recorder.flush()
    var objects = file.lines.map(ListFormsTests.object)
    try #require(objects.count == 4)
    let a = #""a",{"~all":[{"count":0,"id":1}],"~ids":[1]}"#
    let b = #""b",{"~all":[{"count":0,"id":2}],"~ids":[2]}"#
    try #require(objects[2].contains(#""panes":["# + a + "," + b + "]"))
    objects[2] = objects[2].replacingOccurrences(
      of: #""panes":["# + a + "," + b + "]", with: #""panes":["# + b + "," + a + "]")
    #expect(objects[2].contains(#""l":[["panes",1],["panes",3],["log"]]"#))
    writeSession(objects, to: file.url)
    return (file, try Session.load(from: file.url, codecs: deskCodecs()))
  }

  static func verifyDesk(_ session: Session, keepingRuns: Bool) throws {
    let verifying = Dispatcher()
    try verifying.register(store: makeDesk())
    var counts = Session.VerifyCounts()
    try session.verify(against: verifying, mode: .sync, counts: &counts, keepingRuns: keepingRuns)
  }

  /// The next line does not change the lists the reader files otherwise (it empties the panes): the session loads as
  /// recorded, and verifies on either thread.
  @Test func aLineWhoseListsTheReaderFilesOtherwiseVerifiesIfTheNextLineLeavesThem() throws {
    let (_, session) = try Self.recordedDesk(second: .clear)
    let last = try #require(session.record(at: session.firstIndex + 1).model as? Desk)
    #expect(last.panes.lists.isEmpty && last.log[id: 0]?.count == 2)
    try Self.verifyDesk(session, keepingRuns: false)
    try Self.verifyDesk(session, keepingRuns: true)
  }

  /// The next line changes pane `a`'s list, which the reader has at another path: it does not load as the re-run's
  /// model, and verify refuses it on either thread.
  @Test func aLineWhoseListsTheReaderFilesOtherwiseIsRefusedIfTheNextLineChangesThem() throws {
    let (_, session) = try Self.recordedDesk(second: .bumpA)
    let expected = Desk(panes: Panes(["a": [Item(id: 1, count: 1)], "b": [Item(id: 2)]]), log: [Item(id: 0, count: 1)])
    #expect((try? session.record(at: session.firstIndex + 1).model as? Desk) != expected)
    #expect(throws: SessionError.self) { try Self.verifyDesk(session, keepingRuns: false) }
    #expect(throws: SessionError.self) { try Self.verifyDesk(session, keepingRuns: true) }
  }

  /// A session of two records: the list whole, then its change.
  static func recorded() throws -> (file: TemporaryFile, objects: [String]) {
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeStore())
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    try dispatcher.dispatchSync(action: GroupsAction.bump(group: 1, id: 1))
    try dispatcher.dispatchSync(action: GroupsAction.bump(group: 1, id: 2))
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    let objects = file.lines.map(ListFormsTests.object)
    try #require(objects.count == 4)
    return (file, objects)
  }

  static func verify(_ session: Session, keepingRuns: Bool) throws {
    let verifying = Dispatcher()
    try verifying.register(store: makeStore())
    var counts = Session.VerifyCounts()
    try session.verify(against: verifying, mode: .sync, counts: &counts, keepingRuns: keepingRuns)
  }

  @Test func aSessionOfListsInADictionaryVerifiesAndLoads() throws {
    let (file, objects) = try Self.recorded()
    #expect(objects[2].contains(#""groups":{"1":{"~all":[{"count":1,"id":1},{"count":0,"id":2}],"~ids":[1,2]}}"#))
    #expect(objects[2].contains(#""l":[["groups","1"]]"#))
    #expect(objects[3].contains(#""z":0"#))
    let session = try Session.load(from: file.url, codecs: Self.codecs)
    let last = try #require(session.record(at: session.firstIndex + 1).model as? Groups)
    #expect(last.groups[1]?[id: 2]?.count == 1)
    try Self.verify(session, keepingRuns: false)
    try Self.verify(session, keepingRuns: true)
  }

  /// A line whose dictionary's key is spelt otherwise is refused on either thread.
  ///
  /// The line of whole lists with its key spelt `"01"` (a decoder reads 1) and its list as a plain array, its `"l"`
  /// left as the writer wrote it: it decodes to the re-run's model, but the reader finds no list at
  /// `["groups","1"]`, so the next line, resting on it, does not load.
  @Test(arguments: [
    #"{"01":[{"count":1,"id":1},{"count":0,"id":2}]}"#, #"{"+1":[{"count":1,"id":1},{"count":0,"id":2}]}"#,
  ])
  func aLineWhoseDictionaryKeyIsSpeltOtherwiseIsRefused(groups: String) throws {
    var (file, objects) = try Self.recorded()
    let whole = #"{"1":{"~all":[{"count":1,"id":1},{"count":0,"id":2}],"~ids":[1,2]}}"#
    try #require(objects[2].contains(#""groups":"# + whole))
    objects[2] = objects[2].replacingOccurrences(of: #""groups":"# + whole, with: #""groups":"# + groups)
    #expect(objects[2].contains(#""l":[["groups","1"]]"#))
    writeSession(objects, to: file.url)
    let session = try Session.load(from: file.url, codecs: Self.codecs)
    let first = try #require(session.record(at: session.firstIndex).model as? Groups)
    #expect(first == Groups(groups: [1: [Item(id: 1, count: 1), Item(id: 2)]]))
    #expect(throws: SessionError.self) { try session.record(at: session.firstIndex + 1) }
    #expect(throws: SessionError.self) { try Self.verify(session, keepingRuns: false) }
    #expect(throws: SessionError.self) { try Self.verify(session, keepingRuns: true) }
  }
}
