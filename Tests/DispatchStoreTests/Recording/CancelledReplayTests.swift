import Foundation
import Testing

@testable import DispatchStore

/// A search store whose slow query, while recording, waits until its dispatch is cancelled: "the latest search wins".
private struct Search: ModelType, Codable, Equatable {
  var started: [String] = []
  var results: [String] = []
}

private enum SearchAction: ActionType, Codable, Equatable {
  case query(String)
}

/// - Parameter slowWaits: Whether the slow query waits for its cancellation. A re-run does not wait, as a real one
///   would not be cancelled again at the same moment: re-run, it succeeds.
private func makeSearchStore(slowWaits: Bool) -> Store<Search, SearchAction> {
  Store(identifier: "search", model: Search()) { (action: SearchAction, operation) in
    guard case .query(let text) = action else { return }
    operation.updateModel { $0.started.append(text) }
    // The slow query waits until the newer one cancels it (its task is cancelled, the sleep throws).
    if text == "slow", slowWaits { try await Task.sleep(for: .seconds(3_600)) }
    operation.updateModel { $0.results.append(text) }
  }
}

/// A search store whose slow query, while recording, waits for its cancellation before it changes anything.
///
/// Its record says it changed nothing (`"u"`). Each query reports to `running` once its operation runs.
private func makeQuietSearchStore(slowWaits: Bool, running: Collector<String>? = nil) -> Store<Search, SearchAction> {
  Store(identifier: "search", model: Search()) { (action: SearchAction, operation) in
    guard case .query(let text) = action else { return }
    running?.append(text)
    if text == "slow", slowWaits { try await Task.sleep(for: .seconds(3_600)) }
    operation.updateModel {
      $0.started.append(text)
      $0.results.append(text)
    }
  }
}

private func searchCodecs() -> SessionCodecs {
  var codecs = SessionCodecs()
  codecs.register(storeIdentifier: "search", model: Search.self, action: SearchAction.self)
  return codecs
}

@Suite("Replaying cancelled operations", .timeLimit(.minutes(1)), .watchdog)
struct CancelledReplayTests {
  /// A session holding an operation that a newer dispatch with its cancellation id cancelled in flight verifies and
  /// restores: the cancelled transaction's recorded model is put back, not re-run (re-run, it would succeed).
  @Test(arguments: Dispatcher.Mode.allCases)
  func aSessionHoldingAnOperationCancelledInFlightVerifies(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let store = makeSearchStore(slowWaits: true)
    try dispatcher.register(store: store)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    let file = TemporaryFile()
    try recorder.attach(appendingTo: file.url, codecs: searchCodecs())

    let options = DispatchOptions(cancellationID: "search")
    let slow = dispatcher.start(action: SearchAction.query("slow"), options: options)
    #expect(await waitForModel(of: store) { $0.started == ["slow"] } != nil)
    let fast = dispatcher.start(action: SearchAction.query("fast"), options: options)
    try await fast.value
    await #expect(throws: DispatchError.cancelled) { try await slow.value }
    // The handle ends at its cancellation; the slow operation files its outcome when it returns, later. Flushed
    // before that, the file could lack it (seen once, in a run of every test one at a time). (`drain()` waits for
    // it too, and for the main queue's work, which other tests running beside this one keep making.)
    #expect(await eventually { recorder.records.first?.wasCancelled == true })
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    let recorded = store.model
    #expect(recorded == Search(started: ["slow", "fast"], results: ["fast"]))

    let session = try Session.load(from: file.url, codecs: searchCodecs())
    // Once from the file's bytes, once from decoded records.
    for decoded in [false, true] {
      if decoded { _ = try session.records }
      let fresh = Dispatcher()
      let replayed = makeSearchStore(slowWaits: false)
      try fresh.register(store: replayed)
      try session.verify(against: fresh, mode: mode)
      #expect(replayed.model == recorded, "decoded: \(decoded)")
    }
    let restored = Dispatcher()
    let restoredStore = makeSearchStore(slowWaits: false)
    try restored.register(store: restoredStore)
    _ = try session.restore(into: restored)
    #expect(restoredStore.model == recorded)
  }

  /// A dispatch cancelled before its operation changed anything is put back only as the model before it.
  ///
  /// It is recorded as changing nothing (`"u"`: undo steps over it). Re-run, it would succeed, so verify puts its
  /// recorded model back, and holds that model to the one before it: a record so marked that holds another model is
  /// refused, naming the field.
  @Test func aCancelledDispatchThatChangedNothingIsPutBackOnlyAsTheModelBeforeIt() async throws {
    let dispatcher = Dispatcher()
    let running = Collector<String>()
    try dispatcher.register(store: makeQuietSearchStore(slowWaits: true, running: running))
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    let file = TemporaryFile()
    try recorder.attach(appendingTo: file.url, codecs: searchCodecs())
    let slow = dispatcher.start(action: SearchAction.query("slow"))
    _ = await running.wait(for: 1)
    slow.cancel()
    await #expect(throws: DispatchError.cancelled) { try await slow.value }
    // Filed when the operation returns, after its handle ended.
    #expect(await eventually { recorder.records.first?.wasCancelled == true })
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    #expect(recorder.records.map(\.changedModel) == [false])

    func verify() throws {
      let verifying = Dispatcher()
      let replayed = makeQuietSearchStore(slowWaits: false)
      try verifying.register(store: replayed)
      try Session.load(from: file.url, codecs: searchCodecs()).verify(against: verifying)
      #expect(replayed.model == Search(), "put back as recorded, not re-run")
    }
    try verify()

    // The record's model forged: it says the dispatch changed nothing, yet holds a search started.
    var objects = file.lines.map(ListFormsTests.object)
    try #require(objects.count == 3)
    #expect(objects[2].contains(#""u":true"#))
    let empty = #"{"results":[],"started":[]}"#
    try #require(objects[2].contains(empty))
    objects[2] = objects[2].replacingOccurrences(of: empty, with: #"{"results":[],"started":["forged"]}"#)
    writeSession(objects, to: file.url)
    do {
      try verify()
      Issue.record("a cancelled record marked unchanged whose model is not the one before it must not verify")
    } catch let error as SessionError {
      guard case .diverged(let index, _, let store, _, let differences) = error else { throw error }
      #expect(index == 0 && store == "search")
      #expect(differences.map(\.path) == ["started[0]"], "\(differences)")
    }
  }
}
