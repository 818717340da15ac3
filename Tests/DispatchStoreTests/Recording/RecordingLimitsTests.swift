import Foundation
import Testing

@testable import DispatchStore

/// A model that nests itself: `depth` levels make JSON nested `2 × depth + 2` levels (an object, then an array, per
/// level, and the innermost empty one's).
struct Tree: ModelType, Codable, Equatable {
  var children: [Tree] = []

  static func nested(_ depth: Int) -> Tree {
    (0..<depth).reduce(Tree()) { inner, _ in Tree(children: [inner]) }
  }
}

enum TreeAction: ActionType, Codable, Equatable {
  case grow(depth: Int)
}

/// A model type of the same shape as ``Tree``, registered for its store by mistake.
struct WrongTree: ModelType, Codable, Equatable {
  var children: [WrongTree] = []
}

enum WrongTreeAction: ActionType, Codable, Equatable {
  case grow(depth: Int)
}

@Suite("Recording limits", .timeLimit(.minutes(1)), .watchdog)
struct RecordingLimitsTests {
  private static func treeApp() throws -> (Dispatcher, Store<Tree, TreeAction>, RecorderMiddleware, SessionCodecs) {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "tree", model: Tree()) { (action: TreeAction, model) in
      if case .grow(let depth) = action { model = Tree.nested(depth) }
    }
    try dispatcher.register(store: store)
    let recorder = RecorderMiddleware(maxNumberOfRecords: 100)
    dispatcher.register(middleware: recorder)
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "tree", model: Tree.self, action: TreeAction.self)
    return (dispatcher, store, recorder, codecs)
  }

  /// The store and reason of the recorder's ``SessionError/encodingFailed(storeIdentifier:reason:)``; an issue and
  /// `nil` for any other persistence error, or none.
  private static func encodingFailure(of recorder: RecorderMiddleware) -> (store: String, reason: String)? {
    guard case .encodingFailed(let store, let reason) = recorder.persistenceError else {
      Issue.record("expected encodingFailed, got \(String(describing: recorder.persistenceError))")
      return nil
    }
    return (store, reason)
  }

  /// 249 levels: JSON nested 500 levels, the most a session holds.
  ///
  /// Written, loaded, restored and verified.
  @Test func aModelNestedUpToTheLimitIsWrittenAndReadBack() throws {
    let file = TemporaryFile()
    let (dispatcher, _, recorder, codecs) = try Self.treeApp()
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    try dispatcher.dispatchSync(action: TreeAction.grow(depth: 249))
    recorder.flush()
    #expect(recorder.persistenceError == nil)

    let session = try Session.load(from: file.url, codecs: codecs)
    #expect(try session.records.map(\.model).compactMap { $0 as? Tree } == [Tree.nested(249)])
    let (fresh, freshStore, _, _) = try Self.treeApp()
    try session.restore(into: fresh)
    #expect(freshStore.model == Tree.nested(249))
    let (again, _, _, _) = try Self.treeApp()
    try session.verify(against: again)
  }

  /// 300 levels: JSON nested 602 levels, which `JSONDecoder` would refuse to read back.
  ///
  /// The writer refuses it, naming the store; the file holds what came before, and loads.
  @Test func aModelNestedPastTheLimitIsRefusedWhenWrittenAndTheFileStillLoads() throws {
    let file = TemporaryFile()
    let (dispatcher, _, recorder, codecs) = try Self.treeApp()
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    try dispatcher.dispatchSync(action: TreeAction.grow(depth: 2))
    try dispatcher.dispatchSync(action: TreeAction.grow(depth: 300))
    recorder.flush()
    let (store, reason) = try #require(Self.encodingFailure(of: recorder))
    #expect(store == "tree")
    #expect(reason.contains("its model nests 602 levels of objects and arrays; a session holds at most 500"))
    let session = try Session.load(from: file.url, codecs: codecs)
    #expect(try session.records.map(\.model).compactMap { $0 as? Tree } == [Tree.nested(2)])
  }

  /// A codec registered for another model type than the store's (or another action type): the writer refuses the
  /// record, naming the store and both types.
  @Test func aCodecForAnotherTypeThanTheStoresIsRefusedNamingBothTypes() throws {
    let file = TemporaryFile()
    let (dispatcher, _, recorder, _) = try Self.treeApp()
    var wrongModel = SessionCodecs()
    wrongModel.register(storeIdentifier: "tree", model: WrongTree.self, action: TreeAction.self)
    try recorder.attach(appendingTo: file.url, codecs: wrongModel)
    try dispatcher.dispatchSync(action: TreeAction.grow(depth: 2))
    recorder.flush()
    let (store, reason) = try #require(Self.encodingFailure(of: recorder))
    #expect(store == "tree")
    #expect(reason.contains("expected \(WrongTree.self), got \(Tree.self)"))

    let (again, _, otherRecorder, _) = try Self.treeApp()
    var wrongAction = SessionCodecs()
    wrongAction.register(storeIdentifier: "tree", model: Tree.self, action: WrongTreeAction.self)
    let otherFile = TemporaryFile()
    try otherRecorder.attach(appendingTo: otherFile.url, codecs: wrongAction)
    try again.dispatchSync(action: TreeAction.grow(depth: 2))
    otherRecorder.flush()
    let (_, actionReason) = try #require(Self.encodingFailure(of: otherRecorder))
    #expect(actionReason.contains("expected \(WrongTreeAction.self), got \(TreeAction.self)"))
  }
}
