import Foundation
import Testing

@testable import DispatchStore

struct Rates: ModelType, Codable, Equatable {
  var rates: [Int: String] = [:]
  var offline: [Int] = []
}

enum RateAction: ActionType, Codable, Equatable {
  /// Fetches the rate `id`; `handled`: a failed fetch is shown as offline and the dispatch succeeds.
  case fetch(Int, handled: Bool)
}

/// Hears every transaction finish, after its record was filed.
final class FinishedTransactions: Middleware {
  let actions = Collector<String>()

  func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

  func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    actions.append("\(action)")
  }
}

/// Fetches rates through an effect; the network is the test's.
final class RateReducer: Reducer<Rates, RateAction>, @unchecked Sendable {
  let network: @Sendable (Int) async throws -> String
  let fetches = Locked(0)

  init(network: @escaping @Sendable (Int) async throws -> String) {
    self.network = network
  }

  override func operation(for action: RateAction, in store: Store<Rates, RateAction>) -> ActionOperation<
    Rates, RateAction
  > {
    ActionOperation(action: action, store: store) { [self] operation in
      guard case .fetch(let id, let handled) = operation.action else { return }
      do {
        let rate = try await operation.effect("rate \(id)") { () async throws -> String in
          fetches.withLock { $0 += 1 }
          return try await network(id)
        }
        operation.updateModel { $0.rates[id] = rate }
      } catch {
        guard handled else { throw error }
        operation.updateModel { $0.offline.append(id) }
      }
    }
  }
}

func rateCodecs() -> SessionCodecs {
  var codecs = SessionCodecs()
  codecs.register(storeIdentifier: "rates", model: Rates.self, action: RateAction.self)
  return codecs
}

@Suite("Failed and cancelled effects", .timeLimit(.minutes(2)), .watchdog)
struct FailedEffectTests {
  /// Records fetches that succeed, fail (handled and not) and one cancelled while it waits for the network.
  static func recordSession() async throws -> (TemporaryFile, Rates) {
    let entered = Collector<Int>()
    let reducer = RateReducer { id in
      entered.append(id)
      if id == 5 {
        // Waits for the network until the dispatch is cancelled (Task.sleep throws CancellationError then).
        try await Task.sleep(for: .seconds(3_600))
      }
      if id % 3 == 0 { throw Offline() }
      return "1.\(id)"
    }
    let dispatcher = Dispatcher()
    let store = Store(identifier: "rates", model: Rates(), reducer: reducer)
    try dispatcher.register(store: store)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    let finished = FinishedTransactions()
    dispatcher.register(middleware: finished)
    let file = TemporaryFile()
    try recorder.attach(appendingTo: file.url, codecs: rateCodecs())
    #expect(dispatchSync(dispatcher, RateAction.fetch(1, handled: true)).isSuccess)
    #expect(dispatchSync(dispatcher, RateAction.fetch(3, handled: true)).isSuccess)  // offline, shown
    #expect(!dispatchSync(dispatcher, RateAction.fetch(6, handled: false)).isSuccess)  // offline, failed
    let waiting = dispatcher.start(action: RateAction.fetch(5, handled: false), to: "rates", mode: .async)
    _ = await entered.wait(for: 4)
    waiting.cancel()
    #expect(waiting.isCancelled)
    if case .success = await waiting.result { Issue.record("the cancelled fetch succeeded") }
    // The handle is cancelled at once; the operation finishes (and its effect and record are filed) when its task
    // sees the cancellation.
    _ = await finished.actions.wait(for: 4)
    #expect(dispatchSync(dispatcher, RateAction.fetch(2, handled: false)).isSuccess)
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    return (file, store.model)
  }

  @Test func aFetchThatThrewIsRecordedWithItsError() async throws {
    let (file, model) = try await Self.recordSession()
    #expect(model == Rates(rates: [1: "1.1", 2: "1.2"], offline: [3]))
    let session = try Session.load(from: file.url, codecs: rateCodecs())
    let effects = try session.effects(kept: Set(session.records.map(\.transactionID))).values.flatMap { $0 }
    let failures = effects.compactMap { effect -> String? in
      if case .failure(let description) = effect.outcome { return "\(effect.key): \(description)" }
      return nil
    }
    #expect(failures.sorted() == ["rate 3: Offline()", "rate 5: CancellationError()", "rate 6: Offline()"])
    let text = try String(contentsOf: file.url, encoding: .utf8)
    #expect(text.contains(#""key":"rate 3","e":"Offline()""#))
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aSessionWithFailedAndCancelledFetchesVerifiesOfflineEveryTime(mode: Dispatcher.Mode) async throws {
    let (file, recorded) = try await Self.recordSession()
    let session = try Session.load(from: file.url, codecs: rateCodecs())
    for _ in 0..<(isSanitized ? 10 : 100) {
      let offline = RateReducer { _ in throw TestFailure(reason: "the network was used while verifying") }
      let dispatcher = Dispatcher()
      let store = Store(identifier: "rates", model: Rates(), reducer: offline)
      try dispatcher.register(store: store)
      // Verify blocks until the session replayed: off the cooperative pool (see `onOwnThread`).
      _ = try await onOwnThread { try session.verify(against: dispatcher, mode: mode) }
      #expect(store.model == recorded)
      #expect(offline.fetches.withLock { $0 } == 0)
    }
    // Restored: the same model, with no reducer run and no fetch.
    let offline = RateReducer { _ in throw TestFailure(reason: "the network was used while restoring") }
    let dispatcher = Dispatcher()
    let store = Store(identifier: "rates", model: Rates(), reducer: offline)
    try dispatcher.register(store: store)
    try session.restore(into: dispatcher)
    #expect(store.model == recorded)
    #expect(offline.fetches.withLock { $0 } == 0)
  }

  @Test func aReplayedFailureThrowsTheRecordedDescription() async throws {
    let (file, _) = try await Self.recordSession()
    let session = try Session.load(from: file.url, codecs: rateCodecs())
    let seen = Locked<[String]>([])
    final class Watching: Reducer<Rates, RateAction>, @unchecked Sendable {
      let seen: Locked<[String]>
      init(seen: Locked<[String]>) { self.seen = seen }
      override func operation(for action: RateAction, in store: Store<Rates, RateAction>) -> ActionOperation<
        Rates, RateAction
      > {
        ActionOperation(action: action, store: store) { [seen] operation in
          guard case .fetch(let id, let handled) = operation.action else { return }
          do {
            let rate = try await operation.effect("rate \(id)") { () async throws -> String in "?" }
            operation.updateModel { $0.rates[id] = rate }
          } catch let error as RecordedError {
            seen.withLock { $0.append("\(error.effectKey ?? "no key"): \(error)") }
            if handled { operation.updateModel { $0.offline.append(id) } } else { throw error }
          }
        }
      }
    }
    let dispatcher = Dispatcher()
    try dispatcher.register(store: Store(identifier: "rates", model: Rates(), reducer: Watching(seen: seen)))
    try session.verify(against: dispatcher)
    #expect(seen.withLock { $0 } == ["rate 3: Offline()", "rate 6: Offline()", "rate 5: CancellationError()"])
  }

  @Test func anEffectLineWithBothAValueAndAnErrorIsRefusedByTheInspector() throws {
    let file = TemporaryFile()
    let (dispatcher, _) = try profileApp(UserReducer(network: { _ in "Ada" }, asksForSession: false))
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: profileCodecs())
    #expect(dispatchSync(dispatcher, UserAction.load(1)).isSuccess)
    recorder.flush()
    // Forge the effect line with both fields, and chain the hashes again.
    var objects = try String(contentsOf: file.url, encoding: .utf8).split(separator: "\n").map { line in
      String(line.dropLast(SessionHash.suffixLength)) + "}"
    }
    let effect = try #require(objects.firstIndex { $0.contains(#""k":"e""#) })
    objects[effect] = objects[effect].replacingOccurrences(of: #""v":"Ada""#, with: #""v":"Ada","e":"Offline()""#)
    #expect(objects[effect].contains(#""e":"Offline()""#))
    writeSession(objects, to: file.url)
    _ = try Session.load(from: file.url, codecs: profileCodecs())  // Loading does not check the fields.
    #expect(throws: SessionError.self) {
      _ = try SessionInspector.page(forSessionAt: file.url)
    }
    do {
      _ = try SessionInspector.page(forSessionAt: file.url)
    } catch {
      #expect("\(error)".contains("both the fields \"v\" and \"e\""))
    }
  }
}
