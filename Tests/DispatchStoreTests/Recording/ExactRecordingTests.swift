import Dispatch
import Foundation
import Testing

@testable import DispatchStore

/// A dispatcher whose counter reduces in place, recorded.
struct InPlaceApp {
  let dispatcher = Dispatcher()
  let counter = Store(identifier: "counter", model: Counter(), reducer: CounterSynchronousReducer())
  let recorder = RecorderMiddleware(maxNumberOfRecords: 100_000)

  init() {
    try! dispatcher.register(store: counter)
    dispatcher.register(middleware: recorder)
  }
}

/// A model of fixed size that still tells apart every order of its changes: each change folds into a fingerprint.
///
/// A growing log would do too, but recording it makes a session quadratic in its length (4,000 records of a log
/// each: 97 MB), and the test then held a cooperative thread for a minute under ThreadSanitizer.
struct Fingerprint: ModelType, Equatable, Codable {
  var steps = 0
  var count = 0
  var fingerprint: UInt64 = 0xcbf2_9ce4_8422_2325

  mutating func fold(_ value: Int) {
    steps += 1
    fingerprint = (fingerprint ^ UInt64(bitPattern: Int64(value))) &* 0x100_0000_01b3
  }
}

/// Increases, or changes the model and then fails, as ``CounterSynchronousReducer`` does.
final class FingerprintReducer: SynchronousReducer<Fingerprint, CounterAction>, @unchecked Sendable {
  override func reduce(_ action: CounterAction, into model: inout Fingerprint) throws {
    switch action {
    case .increase(let amount), .increaseLater(let amount):
      model.count += amount
      model.fold(amount)
    case .fail:
      model.fold(-1)
      throw TestFailure(reason: "reduce failed")
    case .abandon, .noop:
      break
    }
  }
}

func inPlaceCodecs() -> SessionCodecs {
  var codecs = SessionCodecs()
  codecs.register(storeIdentifier: "counter", model: Counter.self, action: CounterAction.self)
  return codecs
}

@Suite("Exact recording", .timeLimit(.minutes(2)), .watchdog)
struct ExactRecordingTests {
  @Test(arguments: [false, true])
  func aTransactionThatChangesTheModelThenFailsIsRecordedAndTheSessionStillVerifies(observed: Bool) throws {
    let app = InPlaceApp()
    let token = observed ? app.counter.observe(synchronously: true) { change in } : nil
    #expect(dispatchSync(app.dispatcher, CounterAction.increase(100)).isSuccess)
    #expect(!dispatchSync(app.dispatcher, CounterAction.fail).isSuccess)
    #expect(dispatchSync(app.dispatcher, CounterAction.increase(2)).isSuccess)
    let records = app.recorder.records
    #expect(records.count == 3)
    // The failed reduction's partial change is in its record, with its error.
    #expect((records[1].model as? Counter)?.log == ["reduced+100", "before failing"])
    #expect(records[1].error as? TestFailure == TestFailure(reason: "reduce failed"))
    #expect((records[2].model as? Counter)?.count == 102)

    let file = TemporaryFile()
    try app.recorder.save(to: file.url, codecs: inPlaceCodecs())
    let session = try Session.load(from: file.url, codecs: inPlaceCodecs())
    #expect(try session.records[1].error.map { "\($0)" } == "\(TestFailure(reason: "reduce failed"))")
    let fresh = InPlaceApp()
    try session.verify(against: fresh.dispatcher)
    #expect(fresh.counter.model == app.counter.model)
    withExtendedLifetime(token) {}
  }

  @Test func anOperationThatFailsAfterChangingTheModelIsRecordedWithItsChange() {
    let app = RecordedApp()
    let store = Store(identifier: "failing", model: Counter()) { (action: CounterAction, operation) in
      operation.updateModel { $0.count = 7 }
      throw TestFailure(reason: "failed after changing")
    }
    try! app.dispatcher.register(store: store)
    #expect(!dispatchSync(app.dispatcher, CounterAction.fail, storeIdentifier: "failing").isSuccess)
    let record = app.recorder.records.last
    #expect(record?.storeIdentifier == "failing")
    #expect((record?.model as? Counter)?.count == 7)
    #expect(record?.error != nil)
  }

  @Test func aCancelledOperationIsRecordedAsCancelled() async {
    let app = RecordedApp()
    let gate = Gate()
    let store = Store(identifier: "gated", model: Counter(), reducer: GatedReducer(gate: gate))
    try! app.dispatcher.register(store: store)
    let handle = app.dispatcher.start(action: CounterAction.increase(1), to: "gated", mode: .async)
    _ = await gate.waitForOperations(1)
    handle.cancel()  // The gate finishes the operation with CancellationError.
    _ = await handle.result
    let record = app.recorder.records.last
    #expect(record?.storeIdentifier == "gated")
    #expect(record?.wasCancelled == true)
    #expect(record?.error is CancellationError)
  }

  @Test func eightThreadsDispatchingToOneStoreRecordASessionThatVerifiesWithoutDivergence() async throws {
    func app() -> (Dispatcher, Store<Fingerprint, CounterAction>, RecorderMiddleware) {
      let dispatcher = Dispatcher()
      let store = Store(identifier: "counter", model: Fingerprint(), reducer: FingerprintReducer())
      try! dispatcher.register(store: store)
      let recorder = RecorderMiddleware(maxNumberOfRecords: 100_000)
      dispatcher.register(middleware: recorder)
      return (dispatcher, store, recorder)
    }
    let (dispatcher, store, recorder) = app()
    await onThreads(8) { thread in
      for step in 0..<500 {
        let action: CounterAction = step % 50 == 49 ? .fail : .increase(thread + 1)
        _ = dispatchSync(dispatcher, action)
      }
    }
    let records = recorder.records
    #expect(records.count == 4_000)
    // Each record holds the model its own reduction produced: consecutive records differ by exactly one step.
    for (previous, record) in zip(records, records.dropFirst()) {
      let before = try #require(previous.model as? Fingerprint)
      let after = try #require(record.model as? Fingerprint)
      #expect(after.steps == before.steps + 1)
    }
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "counter", model: Fingerprint.self, action: CounterAction.self)
    let file = TemporaryFile()
    try recorder.save(to: file.url, codecs: codecs)
    let session = try Session.load(from: file.url, codecs: codecs)
    let (fresh, freshStore, _) = app()
    try session.verify(against: fresh)
    #expect(freshStore.model == store.model)
  }

  @Test func recordsOfOneDispatchShareItsIdentifier() throws {
    let dispatcher = Dispatcher()
    let stores = ["a", "b", "c"].map { makeCounterStore($0) }
    for store in stores { try dispatcher.register(store: store) }
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    let handle = dispatcher.start(action: CounterAction.increase(1), mode: .sync)
    #expect(dispatchSync(dispatcher, CounterAction.increase(2)).isSuccess)
    let records = recorder.records
    #expect(records.count == 6)
    #expect(Set(records[0..<3].map(\.dispatchID)) == [handle.id])
    #expect(Set(records[3..<6].map(\.dispatchID)).count == 1)
    #expect(records[3].dispatchID != handle.id)
  }
}
