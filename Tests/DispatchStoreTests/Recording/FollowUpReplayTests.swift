import Foundation
import Testing

@testable import DispatchStore

struct Purchases: ModelType, Codable, Equatable {
  var placed: [Int] = []
}

enum PurchaseAction: ActionType, Codable, Equatable {
  /// How the order's operation sends its follow-up to the log.
  enum FollowUp: String, Codable, CaseIterable {
    /// `dispatcher.dispatch(action:)`, fire and forget, from a synchronous operation.
    case fireAndForget
    /// `try await dispatcher.dispatch(action:)` from an `async` operation.
    case awaited
    /// `operation.dispatcher?.start(action:mode:)`, a handle, in the serial lane.
    case handle
    /// `dispatcher.dispatch(actions:)`: two notes.
    case sequence
    /// `try await dispatcher.dispatch(actions:mode: .sync)` from an `async` operation.
    case awaitedSyncSequence
  }
  case place(Int, FollowUp)
}

struct PurchaseLog: ModelType, Codable, Equatable {
  var notes: [String] = []
}

enum PurchaseLogAction: ActionType, Codable, Equatable {
  case note(String)
}

/// An "orders" store whose operations send follow-ups to a "log" store.
struct PurchaseApp {
  let dispatcher = Dispatcher()
  let orders: Store<Purchases, PurchaseAction>
  let log: Store<PurchaseLog, PurchaseLogAction>
  /// How many times an order's operation ran.
  let runs = Locked(0)

  init() throws {
    let runs = runs
    orders = Store(identifier: "orders", model: Purchases()) { (action: PurchaseAction, context) in
      runs.withLock { $0 += 1 }
      guard case .place(let id, let followUp) = action else { return }
      context.updateModel { $0.placed.append(id) }
      let note = PurchaseLogAction.note("placed \(id)")
      switch followUp {
      case .fireAndForget:
        let dispatcher = context.dispatcher
        Self.fireAndForget(note, on: dispatcher)
      case .awaited:
        try await context.dispatcher?.dispatch(action: note)
      case .handle:
        context.dispatcher?.start(action: note, mode: .serial)
      case .sequence:
        Self.fireAndForget([note, PurchaseLogAction.note("thanked \(id)")], on: context.dispatcher)
      case .awaitedSyncSequence:
        try await context.dispatcher?.dispatch(actions: [note], mode: .sync)
      }
    }
    log = Store(identifier: "log", model: PurchaseLog()) { (action: PurchaseLogAction, model) in
      guard case .note(let text) = action else { return }
      model.notes.append(text)
    }
    try dispatcher.register(store: orders)
    try dispatcher.register(store: log)
  }

  /// The design's synchronous call, from synchronous code.
  static func fireAndForget(_ action: PurchaseLogAction, on dispatcher: Dispatcher?) {
    dispatcher?.dispatch(action: action)
  }

  static func fireAndForget(_ actions: [PurchaseLogAction], on dispatcher: Dispatcher?) {
    dispatcher?.dispatch(actions: actions, mode: .async)
  }

  static func codecs() -> SessionCodecs {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "orders", model: Purchases.self, action: PurchaseAction.self)
    codecs.register(storeIdentifier: "log", model: PurchaseLog.self, action: PurchaseLogAction.self)
    return codecs
  }

  /// Waits until the log holds `count` notes.
  func waitForNotes(_ count: Int) async throws {
    let reached = await waitForModel(of: log, within: .seconds(90)) { $0.notes.count == count }
    try #require(reached != nil, "the log did not reach \(count) notes: \(log.model.notes)")
  }
}

@Suite("Follow-ups while verifying", .timeLimit(.minutes(3)), .watchdog)
struct FollowUpReplayTests {
  /// Records ten orders, two of each follow-up kind, and returns the session and the recorded log.
  static func recordSession() async throws -> (TemporaryFile, PurchaseLog) {
    let app = try PurchaseApp()
    let recorder = RecorderMiddleware()
    app.dispatcher.register(middleware: recorder)
    let file = TemporaryFile()
    try recorder.attach(appendingTo: file.url, codecs: PurchaseApp.codecs())
    var notes = 0
    for (offset, followUp) in (PurchaseAction.FollowUp.allCases + PurchaseAction.FollowUp.allCases).enumerated() {
      try await app.dispatcher.dispatch(action: PurchaseAction.place(offset, followUp))
      notes += followUp == .sequence ? 2 : 1
      try await app.waitForNotes(notes)  // Each follow-up reached the log before the next order.
    }
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    return (file, app.log.model)
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aReRunOperationsFollowUpsAreMatchedNotAppliedTwice(mode: Dispatcher.Mode) async throws {
    let (file, recorded) = try await Self.recordSession()
    #expect(recorded.notes.count == 12)
    let session = try Session.load(from: file.url, codecs: PurchaseApp.codecs())
    for round in 0..<(isSanitized ? 10 : 100) {
      let app = try PurchaseApp()
      // Verify blocks until the session replayed: off the cooperative pool (see `onOwnThread`).
      _ = try await onOwnThread { try session.verify(against: app.dispatcher, mode: mode) }
      #expect(app.log.model == recorded, "round \(round)")
      #expect(app.orders.model.placed == Array(0..<10))
      #expect(app.runs.withLock { $0 } == 10)
      // After verifying, follow-ups run again.
      try await app.dispatcher.dispatch(action: PurchaseAction.place(99, .fireAndForget))
      try await app.waitForNotes(13)
    }
    // Restored: the same models, with no operation run and no follow-up sent.
    let restored = try PurchaseApp()
    try session.restore(into: restored.dispatcher)
    #expect(restored.log.model == recorded)
    #expect(restored.orders.model.placed == Array(0..<10))
    #expect(restored.runs.withLock { $0 } == 0)
  }

  @Test func aFollowUpTheSessionDidNotRecordIsATypedErrorNamingIt() async throws {
    let (file, _) = try await Self.recordSession()
    let session = try Session.load(from: file.url, codecs: PurchaseApp.codecs())
    // The same orders, whose operation now sends another note.
    let dispatcher = Dispatcher()
    try dispatcher.register(
      store: Store(identifier: "orders", model: Purchases()) { (action: PurchaseAction, context) in
        guard case .place(let id, _) = action else { return }
        context.updateModel { $0.placed.append(id) }
        context.dispatcher?.start(action: PurchaseLogAction.note("shipped \(id)"))
      })
    try dispatcher.register(
      store: Store(identifier: "log", model: PurchaseLog()) { (action: PurchaseLogAction, model) in
        guard case .note(let text) = action else { return }
        model.notes.append(text)
      })
    // The first order's record (its follow-up's record may come before it: the follow-up can finish first).
    let first = try #require(try session.records.first { $0.storeIdentifier == "orders" })
    let expected = SessionError.unrecordedFollowUp(
      index: first.index, dispatchID: first.dispatchID, action: #"note("shipped 0")"#)
    #expect(throws: expected) {
      try session.verify(against: dispatcher)
    }
  }
}
