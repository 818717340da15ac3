import Foundation
import Testing

@testable import DispatchStore

/// Fetches `key` through an effect (its value `value`, or a failure with `fails`: verify must read it from the
/// session) and writes it as the name.
final class KeyedEffectReducer: Reducer<UserProfile, UserAction>, @unchecked Sendable {
  let key: String
  let value: String
  let fails: Bool

  init(key: String, value: String, fails: Bool = false) {
    (self.key, self.value, self.fails) = (key, value, fails)
  }

  override func operation(
    for action: UserAction, in store: Store<UserProfile, UserAction>
  ) -> ActionOperation<UserProfile, UserAction> {
    ActionOperation(action: action, store: store) { [self] operation, _, _ in
      do {
        let name = try operation.effect(key) { () throws -> String in
          if fails { throw Offline() }
          return value
        }
        operation.updateModel { $0.name = name }
        operation.finish()
      } catch {
        operation.finish(throwing: error)
      }
    }
  }
}

/// A dispatch to two stores, each of whose operations fetches its own effect, cut in two by the start of a history: the
/// effects go with the transaction that fetched them, so each history verifies (proposal 0027).
@Suite("Effects of a split dispatch", .timeLimit(.minutes(1)), .watchdog)
struct SplitDispatchEffectsTests {
  static var codecs: SessionCodecs {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "badge", model: UserProfile.self, action: UserAction.self)
    codecs.register(storeIdentifier: "profile", model: UserProfile.self, action: UserAction.self)
    return codecs
  }

  /// The two stores, their effects fetched (`fails: false`) or only read from a session (`fails: true`).
  static func dispatcher(fails: Bool) throws -> Dispatcher {
    let dispatcher = Dispatcher()
    try dispatcher.register(
      store: Store(
        identifier: "badge", model: UserProfile(), reducer: KeyedEffectReducer(key: "badge", value: "B", fails: fails)))
    try dispatcher.register(
      store: Store(
        identifier: "profile", model: UserProfile(),
        reducer: KeyedEffectReducer(key: "name", value: "Ada", fails: fails)))
    return dispatcher
  }

  /// A file of one dispatch to the two stores, recorded whole.
  static func recordOneDispatch() throws -> TemporaryFile {
    let dispatcher = try dispatcher(fails: false)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    let file = TemporaryFile()
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    #expect(dispatchSync(dispatcher, UserAction.load(1)).isSuccess)
    recorder.flush()
    return file
  }

  /// Verifies the session at `url` against stores whose effects fail if they run.
  static func verify(_ url: URL) throws {
    try Session.load(from: url, codecs: codecs).verify(against: try dispatcher(fails: true))
  }

  /// The first store's record leaves a recorder that keeps one; its effect leaves with it, the other's stays.
  @Test func aRecorderWhoseBoundDropsOneStoresRecordKeepsTheOthersEffect() throws {
    let dispatcher = try Self.dispatcher(fails: false)
    let recorder = RecorderMiddleware(maxNumberOfRecords: 1)
    dispatcher.register(middleware: recorder)
    #expect(dispatchSync(dispatcher, UserAction.load(1)).isSuccess)
    let kept = try #require(recorder.records.first)
    #expect(recorder.records.count == 1)
    #expect(
      recorder.storage.state.withLock { $0.effects[kept.dispatchID]?.map(\.key) } == [
        kept.storeIdentifier == "badge" ? "badge" : "name"
      ])
    let file = TemporaryFile()
    try recorder.save(to: file.url, codecs: Self.codecs)
    try Self.verify(file.url)
  }

  /// The same cut made by compacting a file, and by resuming it with a bound of one.
  @Test func compactingOrResumingPastOneStoresRecordVerifies() throws {
    let file = try Self.recordOneDispatch()
    try Self.verify(file.url)
    // Each effect line names the transaction that fetched it.
    #expect(file.lines.filter { $0.contains(#""k":"e""#) && $0.contains(#","t":"#) }.count == 2)

    let session = try Session.load(from: file.url, codecs: Self.codecs)
    #expect(session.recordCount == 2)
    let compacted = TemporaryFile()
    try session.compact(before: 1, to: compacted.url)
    #expect(compacted.lines.filter { $0.contains(#""k":"e""#) }.count == 1)
    try Self.verify(compacted.url)

    let resumed = try Self.dispatcher(fails: true)
    let bounded = RecorderMiddleware(maxNumberOfRecords: 1)
    resumed.register(middleware: bounded)
    try bounded.resume(session, in: resumed)
    let saved = TemporaryFile()
    try bounded.save(to: saved.url, codecs: Self.codecs)
    #expect(saved.lines.filter { $0.contains(#""k":"e""#) }.count == 1)
    try Self.verify(saved.url)
  }

  /// A dispatch to three stores, the last store's record undone and replaced by a new dispatch, then the first's
  /// dropped by the bound: the undone store's effect is neither saved nor read, and the session verifies (helper-58).
  @Test func anUndoneStoresEffectIsLeftOutOfWhatIsSavedAndVerified() throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(
      store: Store(identifier: "a", model: UserProfile(), reducer: KeyedEffectReducer(key: "x", value: "X")))
    try dispatcher.register(store: Store(identifier: "b", model: UserProfile(), reducer: BadgeNamingReducer()))
    try dispatcher.register(
      store: Store(identifier: "c", model: UserProfile(), reducer: KeyedEffectReducer(key: "y", value: "Y")))
    var codecs = SessionCodecs()
    for store in ["a", "b", "c"] {
      codecs.register(storeIdentifier: store, model: UserProfile.self, action: UserAction.self)
    }
    func verifying() throws -> Dispatcher {
      let replay = Dispatcher()
      try replay.register(
        store: Store(
          identifier: "a", model: UserProfile(), reducer: KeyedEffectReducer(key: "x", value: "", fails: true)))
      try replay.register(store: Store(identifier: "b", model: UserProfile(), reducer: BadgeNamingReducer()))
      try replay.register(
        store: Store(
          identifier: "c", model: UserProfile(), reducer: KeyedEffectReducer(key: "y", value: "", fails: true)))
      return replay
    }
    let recorder = RecorderMiddleware(maxNumberOfRecords: 2)
    dispatcher.register(middleware: recorder)
    let file = TemporaryFile()
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    #expect(dispatchSync(dispatcher, UserAction.load(1)).isSuccess)
    // The stores' operations file in the order the dispatch reaches them; the last filed is undone below.
    #expect(recorder.records.map(\.storeIdentifier) == ["b", "c"])
    let last = try #require(recorder.records.last)
    _ = try recorder.undo(byRecord: true)
    #expect(dispatchSync(dispatcher, UserAction.load(2), storeIdentifier: last.storeIdentifier).isSuccess)
    recorder.flush()
    let saved = TemporaryFile()
    try recorder.save(to: saved.url, codecs: codecs)
    try Session.load(from: saved.url, codecs: codecs).verify(against: try verifying())
    // The file appended to keeps the undone record's effect line, which verify leaves out too.
    try Session.load(from: file.url, codecs: codecs).verify(against: try verifying())
  }

  /// Two stores of one dispatch fetch the same key, and the effects are filed in the other order than the records
  /// (their operations run at once): each store's re-run reads the value its own transaction fetched.
  @Test func twoStoresFetchingOneKeyEachReadTheirOwnValue() throws {
    func dispatcher(fails: Bool) throws -> Dispatcher {
      let dispatcher = Dispatcher()
      for (store, value) in [("badge", "B"), ("profile", "Ada")] {
        try dispatcher.register(
          store: Store(
            identifier: store, model: UserProfile(),
            reducer: KeyedEffectReducer(key: "name", value: value, fails: fails)))
      }
      return dispatcher
    }
    let recording = try dispatcher(fails: false)
    let recorder = RecorderMiddleware()
    recording.register(middleware: recorder)
    let file = TemporaryFile()
    try recorder.attach(appendingTo: file.url, codecs: Self.codecs)
    #expect(dispatchSync(recording, UserAction.load(1)).isSuccess)
    recorder.flush()
    // Each line as an object without its hash; the effect lines put in the order opposite to their records'.
    var objects = file.lines.map { String($0.dropLast(SessionHash.suffixLength)) + "}" }
    func transaction(_ object: String) -> Substring? {
      object.range(of: #","t":[0-9]+"#, options: .regularExpression).map { object[$0] }
    }
    let recordTransactions = objects.filter { $0.contains(#""k":"r""#) }.compactMap(transaction)
    let effectOffsets = objects.indices.filter { objects[$0].contains(#""k":"e""#) }
    try #require(recordTransactions.count == 2 && effectOffsets.count == 2)
    let effects = effectOffsets.map { objects[$0] }
    let reversed = recordTransactions.reversed().map { t in effects.first { transaction($0) == t } }
    for (offset, effect) in zip(effectOffsets, reversed) { objects[offset] = try #require(effect) }
    let swapped = TemporaryFile()
    writeSession(objects, to: swapped.url)
    try Session.load(from: swapped.url, codecs: Self.codecs).verify(against: try dispatcher(fails: true))
  }

  /// A file whose effect lines name no transaction (written before they did) is read as before: its effects are its
  /// dispatches'.
  @Test func effectLinesWithoutATransactionAreTheirDispatchs() throws {
    let file = try Self.recordOneDispatch()
    // Each line as an object without its hash, the effect lines' "t" taken out, chained again.
    let objects = file.lines.map { line in
      var object = String(line.dropLast(SessionHash.suffixLength)) + "}"
      if object.contains(#""k":"e""#), let t = object.range(of: #","t":[0-9]+"#, options: .regularExpression) {
        object.removeSubrange(t)
      }
      return object
    }
    #expect(objects.filter { $0.contains(#""k":"e""#) && !$0.contains(#","t":"#) }.count == 2)
    let old = TemporaryFile()
    writeSession(objects, to: old.url)
    try Self.verify(old.url)
  }
}
