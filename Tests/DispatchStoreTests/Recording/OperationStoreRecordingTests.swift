import Foundation
import Testing

@testable import DispatchStore

/// The design's own reducer shape: an operation that calls `store.updateModel`, then `finish()`.
final class FingerprintOperationReducer: Reducer<Fingerprint, CounterAction>, @unchecked Sendable {
  override func operation(for action: CounterAction, in store: Store<Fingerprint, CounterAction>) -> ActionOperation<
    Fingerprint, CounterAction
  > {
    ActionOperation(action: action, store: store) { operation, action, store in
      if case .increase(let amount) = action { store.updateModel { $0.fold(amount) } }
      operation.finish()
    }
  }
}

@Suite("Recording operation stores", .timeLimit(.minutes(2)))
struct OperationStoreRecordingTests {
  /// Operations from eight threads record a session that verifies (issue 24, point 1).
  ///
  /// Not yet: a record holds the model at its operation's finish, which another operation's change may have
  /// reached first, and verify re-runs the operations in finish order and diverges. Known, intermittent: the fix
  /// (proposal 0014, section 2: records filed at the operation's change) is not built yet; with it, `withKnownIssue`
  /// goes, and the test runs 100 rounds.
  @Test func operationsFromEightThreadsRecordASessionThatVerifies() async throws {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "counter", model: Fingerprint.self, action: CounterAction.self)
    var diverged = 0
    var first: ReplayError?
    for _ in 0..<5 {
      let dispatcher = Dispatcher()
      let store = Store(identifier: "counter", model: Fingerprint(), reducer: FingerprintOperationReducer())
      try dispatcher.register(store: store)
      let recorder = RecorderMiddleware(maxNumberOfRecords: 100_000)
      dispatcher.register(middleware: recorder)
      await onThreads(8) { thread in
        for step in 0..<500 { _ = dispatchSync(dispatcher, CounterAction.increase(thread * 1_000 + step)) }
      }
      let file = TemporaryFile()
      try recorder.save(to: file.url, codecs: codecs)
      let session = try Session.load(from: file.url, codecs: codecs)
      let fresh = Dispatcher()
      try fresh.register(
        store: Store(identifier: "counter", model: Fingerprint(), reducer: FingerprintOperationReducer()))
      do {
        try session.verify(against: fresh)
      } catch {
        diverged += 1
        if first == nil { first = error }
      }
    }
    withKnownIssue("operation records are filed at finish (issue 24, point 1)", isIntermittent: true) {
      #expect(diverged == 0, "\(diverged) of 5 rounds diverged; the first: \(first.map { "\($0)" } ?? "")")
    }
  }
}
