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
