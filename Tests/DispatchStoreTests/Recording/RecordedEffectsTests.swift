import Foundation
import Testing

@testable import DispatchStore

struct UserProfile: ModelType, Codable, Equatable {
  var name = ""
  var session = ""
}

enum UserAction: ActionType, Codable, Equatable {
  case load(Int)
}

struct Offline: Error {}

/// Loads a profile through two effects: a "network" response and a random session id.
final class UserReducer: Reducer<UserProfile, UserAction>, @unchecked Sendable {
  let network: @Sendable (Int) throws -> String
  let key: @Sendable (Int) -> String
  let asksForSession: Bool
  let calls = Locked(0)

  init(
    network: @escaping @Sendable (Int) throws -> String, key: @escaping @Sendable (Int) -> String = { "user \($0)" },
    asksForSession: Bool = true
  ) {
    self.network = network
    self.key = key
    self.asksForSession = asksForSession
  }

  override func operation(
    for action: UserAction, in store: Store<UserProfile, UserAction>
  ) -> ActionOperation<UserProfile, UserAction> {
    ActionOperation(action: action, store: store) { [self] operation, action, _ in
      guard case .load(let id) = action else { return operation.finish() }
      do {
        let name = try operation.effect(key(id)) { () throws -> String in
          calls.withLock { $0 += 1 }
          return try network(id)
        }
        let session = asksForSession ? try operation.effect("session") { UUID().uuidString } : ""
        operation.updateModel {
          $0.name = name
          $0.session = session
        }
        operation.finish()
      } catch {
        operation.finish(throwing: error)
      }
    }
  }
}

func profileCodecs() -> SessionCodecs {
  var codecs = SessionCodecs()
  codecs.register(storeIdentifier: "profile", model: UserProfile.self, action: UserAction.self)
  return codecs
}

/// Records two loads with a working network, and returns the session file and the final model.
func recordProfileSession() throws -> (TemporaryFile, UserProfile) {
  let file = TemporaryFile()
  let dispatcher = Dispatcher()
  let store = Store(
    identifier: "profile", model: UserProfile(), reducer: UserReducer(network: { ["", "Ada", "Grace"][$0] }))
  try dispatcher.register(store: store)
  let recorder = RecorderMiddleware()
  dispatcher.register(middleware: recorder)
  try recorder.attach(appendingTo: file.url, codecs: profileCodecs())
  #expect(dispatchSync(dispatcher, UserAction.load(1)).isSuccess)
  #expect(dispatchSync(dispatcher, UserAction.load(2)).isSuccess)
  recorder.flush()
  return (file, store.model)
}

/// A fresh dispatcher with a profile store whose reducer is made by `reducer`.
func profileApp(_ reducer: UserReducer) throws -> (Dispatcher, Store<UserProfile, UserAction>) {
  let dispatcher = Dispatcher()
  let store = Store(identifier: "profile", model: UserProfile(), reducer: reducer)
  try dispatcher.register(store: store)
  return (dispatcher, store)
}

/// Loads a profile in two steps, each through an effect and each changing the model: two records a dispatch.
final class TwoStepReducer: Reducer<UserProfile, UserAction>, @unchecked Sendable {
  override func operation(
    for action: UserAction, in store: Store<UserProfile, UserAction>
  ) -> ActionOperation<UserProfile, UserAction> {
    ActionOperation(action: action, store: store) { operation, action, _ in
      guard case .load(let id) = action else { return operation.finish() }
      do {
        let name = try operation.effect("name \(id)") { "user \(id)" }
        operation.updateModel { $0.name = name }
        let session = try operation.effect("session") { UUID().uuidString }
        operation.updateModel { $0.session = session }
        operation.finish()
      } catch {
        operation.finish(throwing: error)
      }
    }
  }
}

/// Names the profile at once, with no effect.
final class BadgeNamingReducer: SynchronousReducer<UserProfile, UserAction>, @unchecked Sendable {
  override func reduce(_ action: UserAction, into model: inout UserProfile) throws {
    if case .load(let id) = action { model.name = "badge \(id)" }
  }
}

/// Changes the model, signals `changed`, waits for `gate`, then fetches an effect and finishes without another change.
final class ChangeThenFetchReducer: Reducer<UserProfile, UserAction>, @unchecked Sendable {
  let changed: DispatchSemaphore
  let gate: DispatchSemaphore

  init(changed: DispatchSemaphore, gate: DispatchSemaphore) {
    (self.changed, self.gate) = (changed, gate)
  }

  override func operation(
    for action: UserAction, in store: Store<UserProfile, UserAction>
  ) -> ActionOperation<UserProfile, UserAction> {
    ActionOperation(action: action, store: store) { [self] operation, _, _ in
      operation.updateModel { $0.name = "loading" }
      changed.signal()
      gate.wait()
      _ = try? operation.effect("user") { "Ada" }
      operation.finish()
    }
  }
}

/// Fetches a name through an effect, signals `fetched`, waits for `gate`, then changes the model; with `fails`, its
/// effect fails if it runs (verify must read it from the session instead).
final class GatedProfileReducer: Reducer<UserProfile, UserAction>, @unchecked Sendable {
  let fetched: DispatchSemaphore
  let gate: DispatchSemaphore
  let fails: Bool

  init(fetched: DispatchSemaphore, gate: DispatchSemaphore, fails: Bool = false) {
    (self.fetched, self.gate, self.fails) = (fetched, gate, fails)
  }

  override func operation(
    for action: UserAction, in store: Store<UserProfile, UserAction>
  ) -> ActionOperation<UserProfile, UserAction> {
    ActionOperation(action: action, store: store) { [self] operation, action, _ in
      guard case .load(let id) = action else { return operation.finish() }
      do {
        let name = try operation.effect("name") { () throws -> String in
          if fails { throw Offline() }
          return "user \(id)"
        }
        fetched.signal()
        gate.wait()
        operation.updateModel { $0.name = name }
        operation.finish()
      } catch {
        operation.finish(throwing: error)
      }
    }
  }
}

@Suite("Recorded effects", .timeLimit(.minutes(1)), .watchdog)
struct RecordedEffectsTests {
  @Test func aSessionWithNetworkCallsAndRandomIDsVerifiesOfflineWithoutFetching() throws {
    let (file, recorded) = try recordProfileSession()
    #expect(recorded.name == "Grace")
    let session = try Session.load(from: file.url, codecs: profileCodecs())
    let offline = UserReducer(network: { _ in throw Offline() })
    let (dispatcher, store) = try profileApp(offline)
    try session.verify(against: dispatcher)
    #expect(store.model == recorded)  // The same random session id, read back.
    #expect(offline.calls.withLock { $0 } == 0)
    // Outside a verification, effects run again.
    #expect(!dispatchSync(dispatcher, UserAction.load(1)).isSuccess)
    #expect(offline.calls.withLock { $0 } == 1)
  }

  @Test func aResumedRecorderSavesTheEffectsOfTheRecordsItTookOver() throws {
    let (file, recorded) = try recordProfileSession()
    let session = try Session.load(from: file.url, codecs: profileCodecs())
    let (app, _) = try profileApp(UserReducer(network: { _ in throw Offline() }))
    let recorder = RecorderMiddleware()
    app.register(middleware: recorder)
    try recorder.resume(session, in: app)
    let saved = TemporaryFile()
    try recorder.save(to: saved.url, codecs: profileCodecs())
    let reloaded = try Session.load(from: saved.url, codecs: profileCodecs())
    let offline = UserReducer(network: { _ in throw Offline() })
    let (dispatcher, store) = try profileApp(offline)
    try reloaded.verify(against: dispatcher)
    #expect(store.model == recorded)
    #expect(offline.calls.withLock { $0 } == 0)
  }

  @Test func anEffectTheSessionDidNotRecordIsATypedErrorNamingIt() throws {
    let (file, _) = try recordProfileSession()
    let session = try Session.load(from: file.url, codecs: profileCodecs())
    let renamed = UserReducer(network: { _ in throw Offline() }, key: { "profile \($0)" })
    let (dispatcher, _) = try profileApp(renamed)
    let first = try session.records[0]
    #expect(throws: SessionError.missingEffect(dispatchID: first.dispatchID, key: "profile 1")) {
      try session.verify(against: dispatcher)
    }
  }

  @Test func anEffectNothingAskedForIsATypedErrorNamingIt() throws {
    let (file, _) = try recordProfileSession()
    let session = try Session.load(from: file.url, codecs: profileCodecs())
    let (dispatcher, _) = try profileApp(UserReducer(network: { _ in "?" }, asksForSession: false))
    let first = try session.records[0]
    #expect(throws: SessionError.unusedEffect(dispatchID: first.dispatchID, key: "session")) {
      try session.verify(against: dispatcher)
    }
  }

  /// A dispatch undone, then replaced by another, loses its records: its effects are dropped from memory once the
  /// bound has dropped the records before it (a save already left them out), not kept for the recorder's life.
  @Test func theEffectsOfADispatchUndoneAndReplacedGoOnceTheBoundPassesIt() throws {
    let (dispatcher, _) = try profileApp(UserReducer(network: { ["", "Ada", "Grace"][$0] }))
    let recorder = RecorderMiddleware(maxNumberOfRecords: 4)
    dispatcher.register(middleware: recorder)
    #expect(dispatchSync(dispatcher, UserAction.load(1)).isSuccess)
    #expect(dispatchSync(dispatcher, UserAction.load(2)).isSuccess)
    let undone = try #require(recorder.records.last).dispatchID
    try recorder.undo()
    #expect(dispatchSync(dispatcher, UserAction.load(1)).isSuccess)
    // Until then it is kept: a dispatch still running may yet file a record that needs it.
    #expect(recorder.storage.state.withLock { $0.effects[undone] } != nil)
    for _ in 0..<4 { #expect(dispatchSync(dispatcher, UserAction.load(2)).isSuccess) }
    let kept = Set(recorder.records.map(\.dispatchID))
    #expect(kept.count == 4)
    #expect(recorder.storage.state.withLock { Set($0.effects.keys) } == kept)
  }

  /// A "badge" store and a "profile" store whose operation fetches its name, signals `fetched` and waits for `gate`.
  static func badgeAndProfile(fetched: DispatchSemaphore, gate: DispatchSemaphore) throws -> Dispatcher {
    let dispatcher = Dispatcher()
    try dispatcher.register(
      store: Store(identifier: "badge", model: UserProfile(), reducer: BadgeNamingReducer()))
    try dispatcher.register(
      store: Store(
        identifier: "profile", model: UserProfile(), reducer: GatedProfileReducer(fetched: fetched, gate: gate)))
    return dispatcher
  }

  /// Saves `recorder`'s history of those two stores, loads it and verifies it against stores whose fetch fails.
  static func saveAndVerifyOffline(_ recorder: RecorderMiddleware) throws {
    let file = TemporaryFile()
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "badge", model: UserProfile.self, action: UserAction.self)
    codecs.register(storeIdentifier: "profile", model: UserProfile.self, action: UserAction.self)
    try recorder.save(to: file.url, codecs: codecs)
    // Opened before: a semaphore released below the value it was made with traps.
    let open = DispatchSemaphore(value: 0)
    open.signal()
    let replay = Dispatcher()
    try replay.register(store: Store(identifier: "badge", model: UserProfile(), reducer: BadgeNamingReducer()))
    try replay.register(
      store: Store(
        identifier: "profile", model: UserProfile(),
        reducer: GatedProfileReducer(fetched: DispatchSemaphore(value: 0), gate: open, fails: true)))
    try Session.load(from: file.url, codecs: codecs).verify(against: replay)
  }

  /// A dispatch to two stores whose first store's record an undo and the second store's change remove keeps the
  /// effect its second store fetched before: that store files its record after the cursor, and a save verifies.
  @Test func aDispatchStillRunningKeepsTheEffectsItsNextRecordNeeds() throws {
    let fetched = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    let dispatcher = try Self.badgeAndProfile(fetched: fetched, gate: gate)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    let done = DispatchSemaphore(value: 0)
    dispatcher.dispatch(action: UserAction.load(1), mode: .async) { _ in done.signal() }
    // The badge's record is filed, and the profile's operation fetched its effect and waits.
    #expect(fetched.wait(timeout: .now() + 60) == .success)
    #expect(recorder.records.map(\.storeIdentifier) == ["badge"])
    let dispatch = try #require(recorder.records.first).dispatchID
    try recorder.undo()
    gate.signal()
    #expect(done.wait(timeout: .now() + 60) == .success)
    #expect(recorder.records.map(\.storeIdentifier) == ["profile"])
    #expect(recorder.storage.state.withLock { $0.effects[dispatch]?.map(\.key) } == ["name"])

    try Self.saveAndVerifyOffline(recorder)
  }

  /// The same, with the badge's removed record then dropped by the bound while the profile's operation still runs:
  /// only the badge's transaction loses its effects, and the profile's record, filed after, verifies (helper-58).
  @Test func anOperationStillRunningKeepsItsEffectsWhenTheBoundPassesARemovedSibling() throws {
    let fetched = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    let dispatcher = try Self.badgeAndProfile(fetched: fetched, gate: gate)
    let recorder = RecorderMiddleware(maxNumberOfRecords: 16)
    dispatcher.register(middleware: recorder)
    let done = DispatchSemaphore(value: 0)
    dispatcher.dispatch(action: UserAction.load(1), mode: .async) { _ in done.signal() }
    #expect(fetched.wait(timeout: .now() + 60) == .success)
    let dispatch = try #require(recorder.records.first).dispatchID
    try recorder.undo()
    // The badge's record of the first dispatch is removed, then every index up to it leaves the bound.
    for id in 2..<22 { #expect(dispatchSync(dispatcher, UserAction.load(id), storeIdentifier: "badge").isSuccess) }
    #expect(recorder.records.first.map(\.index) ?? 0 > 1)
    #expect(recorder.storage.state.withLock { $0.effects[dispatch]?.map(\.key) } == ["name"])
    gate.signal()
    #expect(done.wait(timeout: .now() + 60) == .success)
    #expect(recorder.records.last?.storeIdentifier == "profile")

    try Self.saveAndVerifyOffline(recorder)
  }

  /// An operation whose record an undo and a new dispatch removed, which then fetches an effect and files no record
  /// again: its effect goes once the bound passes where the record was, not kept for the recorder's life
  /// (helper-60).
  @Test func anEffectFetchedAfterItsRecordWasRemovedGoesWithTheBound() throws {
    let changed = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    let dispatcher = Dispatcher()
    try dispatcher.register(
      store: Store(
        identifier: "profile", model: UserProfile(), reducer: ChangeThenFetchReducer(changed: changed, gate: gate))
    )
    try dispatcher.register(store: Store(identifier: "badge", model: UserProfile(), reducer: BadgeNamingReducer()))
    let recorder = RecorderMiddleware(maxNumberOfRecords: 16)
    dispatcher.register(middleware: recorder)
    let done = DispatchSemaphore(value: 0)
    dispatcher.dispatch(action: UserAction.load(1), to: "profile", mode: .async) { _ in done.signal() }
    #expect(changed.wait(timeout: .now() + 60) == .success)
    let dispatch = try #require(recorder.records.first).dispatchID
    try recorder.undo()
    #expect(dispatchSync(dispatcher, UserAction.load(2), storeIdentifier: "badge").isSuccess)
    gate.signal()
    #expect(done.wait(timeout: .now() + 60) == .success)
    #expect(recorder.storage.state.withLock { $0.effects[dispatch]?.map(\.key) } == ["user"])
    for id in 3..<24 { #expect(dispatchSync(dispatcher, UserAction.load(id), storeIdentifier: "badge").isSuccess) }
    #expect(recorder.storage.state.withLock { $0.effects.isEmpty && $0.orphanedEffects.isEmpty })
  }

  /// A recorder resuming a file that holds the effect lines of a dispatch an undo and a new dispatch removed keeps
  /// only the effects of the dispatches it has records of.
  @Test func aResumedRecorderKeepsOnlyTheEffectsOfDispatchesWithRecords() throws {
    let file = TemporaryFile()
    let (dispatcher, _) = try profileApp(UserReducer(network: { ["", "Ada", "Grace"][$0] }))
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: profileCodecs())
    #expect(dispatchSync(dispatcher, UserAction.load(1)).isSuccess)
    #expect(dispatchSync(dispatcher, UserAction.load(2)).isSuccess)
    try recorder.undo()
    #expect(dispatchSync(dispatcher, UserAction.load(1)).isSuccess)
    recorder.flush()

    let session = try Session.load(from: file.url, codecs: profileCodecs())
    let (app, _) = try profileApp(UserReducer(network: { _ in throw Offline() }))
    let resumed = RecorderMiddleware()
    app.register(middleware: resumed)
    try resumed.resume(session, in: app)
    let kept = Set(resumed.records.map(\.dispatchID))
    #expect(kept.count == 2)
    #expect(resumed.storage.state.withLock { Set($0.effects.keys) } == kept)
  }

  /// A dispatch that keeps a record before the cursor keeps its effects when the records after the cursor go:
  /// re-running it needs them.
  @Test func aDispatchThatKeepsARecordKeepsItsEffects() throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: Store(identifier: "profile", model: UserProfile(), reducer: TwoStepReducer()))
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    #expect(dispatchSync(dispatcher, UserAction.load(1)).isSuccess)
    #expect(recorder.records.count == 2)
    try recorder.undo(byRecord: true)
    #expect(dispatchSync(dispatcher, UserAction.load(2)).isSuccess)
    let dispatches = recorder.records.map(\.dispatchID)
    #expect(dispatches.count == 3)
    #expect(recorder.storage.state.withLock { Set($0.effects.keys) } == Set(dispatches))
    #expect(recorder.storage.state.withLock { $0.effects[dispatches[0]]?.map(\.key) } == ["name 1", "session"])
  }
}
