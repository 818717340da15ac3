import Foundation
import Testing

@testable import DispatchStore

/// A catalog reducer as an operation that makes two changes, each filed as a record: the products, then the count.
final class CatalogOperationReducer: Reducer<LargeModelRecordingTests.Catalog, LargeModelRecordingTests.CatalogAction>,
  @unchecked Sendable
{
  override func operation(
    for action: LargeModelRecordingTests.CatalogAction,
    in store: Store<LargeModelRecordingTests.Catalog, LargeModelRecordingTests.CatalogAction>
  ) -> ActionOperation<LargeModelRecordingTests.Catalog, LargeModelRecordingTests.CatalogAction> {
    ActionOperation(action: action, store: store) { operation, _, _ in
      operation.updateModel { model in
        switch action {
        case .restock(let id, let amount): model.products[id: id]?.stock += amount
        case .rename(let id, let name): model.products[id: id]?.name = name
        case .add(let id): model.products.append(LargeModelRecordingTests.Product(id: id, name: "New \(id)"))
        case .discontinue(let id): model.products.remove(id: id)
        case .feature(let id):
          if let index = model.products.index(id: id) { model.products.move(fromOffsets: [index], toOffset: 0) }
        case .addFirst(let id):
          model.products.insert(LargeModelRecordingTests.Product(id: id, name: "New \(id)"), at: 0)
        }
      }
      operation.updateModel { $0.edits += 1 }
      operation.finish()
    }
  }
}

/// Sessions whose records hold large lists as changes (format 3), at 10,000 products (1,000 under a sanitizer):
/// written from several threads by operation stores, and many random sessions verified.
@Suite("List forms in sessions", .timeLimit(.minutes(5)), .watchdog, .offThePool)
struct ListFormsSessionTests {
  typealias Product = LargeModelRecordingTests.Product
  typealias Catalog = LargeModelRecordingTests.Catalog
  typealias CatalogAction = LargeModelRecordingTests.CatalogAction

  static let count = ListFormsTests.count

  /// Eight threads, each dispatching to its own operation store: every record (two per transaction) holds the model
  /// its change made, the file verifies, and restore puts back each store's last model.
  @Test func eightThreadsRecordingOperationStoresWriteASessionThatReadsBackExactlyAndVerifies() async throws {
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    var codecs = SessionCodecs()
    let initial = LargeModelRecordingTests.initial(count: Self.count)
    var stores: [Store<Catalog, CatalogAction>] = []
    for thread in 0..<8 {
      let store = Store(identifier: "catalog\(thread)", model: initial, reducer: CatalogOperationReducer())
      try dispatcher.register(store: store)
      codecs.register(storeIdentifier: "catalog\(thread)", model: Catalog.self, action: CatalogAction.self)
      stores.append(store)
    }
    let recorder = RecorderMiddleware(maxNumberOfRecords: 100_000)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: codecs)
    let actions = Array(LargeModelRecordingTests.actions(count: Self.count).prefix(24))
    await onThreads(8) { thread in
      for action in actions {
        #expect(dispatchSync(dispatcher, action, storeIdentifier: "catalog\(thread)").isSuccess)
      }
    }
    recorder.flush()
    #expect(recorder.persistenceError == nil)

    // The expected models, built with arrays: after each action, the products change, then the count.
    var expected: [(products: [Product], edits: Int)] = []
    var products = Array(initial.products)
    for (offset, action) in actions.enumerated() {
      LargeModelRecordingTests.apply(action, to: &products)
      expected.append((products, offset))
      expected.append((products, offset + 1))
    }
    // Reading, verifying and restoring run on a thread of their own: seconds of work, which on one of the
    // cooperative pool's two threads would hold up the tests waiting for one.
    let (url, allCodecs) = (file.url, codecs)
    let (records, restored) = try await onOwnThread { () throws -> ([Record], [Catalog]) in
      let session = try Session.load(from: url, codecs: allCodecs)
      let verifying = Dispatcher()
      let restoring = Dispatcher()
      var restored: [Store<Catalog, CatalogAction>] = []
      for thread in 0..<8 {
        try verifying.register(
          store: Store(identifier: "catalog\(thread)", model: initial, reducer: CatalogOperationReducer()))
        let store = Store(identifier: "catalog\(thread)", model: initial, reducer: CatalogOperationReducer())
        try restoring.register(store: store)
        restored.append(store)
      }
      try session.verify(against: verifying)
      try session.restore(into: restoring)
      return (try session.records, restored.map(\.model))
    }
    #expect(records.count == 8 * actions.count * 2)
    for thread in 0..<8 {
      let own = records.filter { $0.storeIdentifier == "catalog\(thread)" }
      try #require(own.count == expected.count)
      for (record, (products, edits)) in zip(own, expected) {
        let model = try #require(record.model as? Catalog)
        #expect(Array(model.products) == products && model.edits == edits, "catalog\(thread) record \(record.index)")
      }
    }
    // Large lists are written as changes: only a store's first record holds its list whole.
    #expect(file.lines.filter { $0.contains(#""~all""#) }.count == 8)
    for thread in 0..<8 { #expect(restored[thread] == stores[thread].model) }
  }

  /// 100 random sessions (10 under a sanitizer), each of random dispatches, undos, redos and jumps over one shared
  /// list: each loads with every record as recorded, verifies, and restores the recorder's current model.
  ///
  /// In four quarters of 25 sessions (3, 3, 2 and 2 under a sanitizer), each with its own seed: a minute of work, which as one
  /// test was the last to end in a plain run, for 20 s alone.
  @Test(arguments: 0..<4) func aHundredRandomSessionsOfListChangesVerifyAndRestore(quarter: Int) async throws {
    // On a thread of its own: seconds of work, which on one of the cooperative pool's two threads would hold up the
    // tests waiting for one. What differs comes back as text, for the test to record.
    let differences = try await onOwnThread { () throws -> [String] in
      try Self.randomSessions(count: isSanitized ? (quarter < 2 ? 3 : 2) : 25, seed: 100 + UInt64(quarter))
    }
    #expect(differences.isEmpty, "\(differences)")
  }

  static func randomSessions(count: Int, seed: UInt64) throws -> [String] {
    var differences: [String] = []
    let initial = LargeModelRecordingTests.initial(count: Self.count)
    var random = SplitMix(seed: seed)
    for round in 0..<count {
      let file = TemporaryFile()
      let dispatcher = Dispatcher()
      let store = Store<Catalog, CatalogAction>(
        identifier: "catalog", model: initial, reducer: CatalogOperationReducer())
      try dispatcher.register(store: store)
      let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
      dispatcher.register(middleware: recorder)
      try recorder.attach(appendingTo: file.url, codecs: LargeModelRecordingTests.codecs)
      var live = Array(0..<Self.count)
      var next = Self.count
      for step in 0..<Int.random(in: 1...12, using: &random) {
        let id = live[Int.random(in: 0..<live.count, using: &random)]
        switch Int.random(in: 0..<8, using: &random) {
        case 0:
          try dispatcher.dispatchSync(action: CatalogAction.add(id: next))
          live.append(next)
          next += 1
        case 1:
          try dispatcher.dispatchSync(action: CatalogAction.discontinue(id: id))
          live.removeAll { $0 == id }
        case 2: _ = try? recorder.undo()
        case 3: _ = try? recorder.redo()
        case 4:
          if let first = recorder.records.first {
            _ = try? recorder.jump(to: Int.random(in: first.index...recorder.records.last!.index, using: &random))
          }
        default:
          try dispatcher.dispatchSync(action: CatalogAction.restock(id: id, amount: step + 1))
        }
        // A later action may name a product an undo took back: it changes nothing then, which is recorded too.
      }
      recorder.flush()
      if let error = recorder.persistenceError { differences.append("round \(round): \(error)") }

      let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
      if try session.records.map({ $0.model as? Catalog }) != recorder.records.map({ $0.model as? Catalog }) {
        differences.append("round \(round): the records read back differ")
      }
      let verifying = Dispatcher()
      try verifying.register(
        store: Store<Catalog, CatalogAction>(identifier: "catalog", model: initial, reducer: CatalogOperationReducer()))
      try session.verify(against: verifying)
      let restoring = Dispatcher()
      let restored = Store<Catalog, CatalogAction>(
        identifier: "catalog", model: initial, reducer: CatalogOperationReducer())
      try restoring.register(store: restored)
      try session.restore(into: restoring)
      if restored.model != store.model { differences.append("round \(round): the restored model differs") }
    }
    return differences
  }

  /// Records `count` restocks (the `offset`th of product `product(offset)`, by `offset + 1`) of a catalog of
  /// `products` to `file`; returns each record's index, its action's amount, and whether it holds its lists whole.
  static func recordRestocks(
    _ count: Int, of products: Int, to file: TemporaryFile, product: (Int) -> Int
  ) throws -> [(index: Int, amount: Int, whole: Bool)] {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: LargeModelRecordingTests.makeStore(count: products))
    let recorder = RecorderMiddleware(maxNumberOfRecords: 10)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: LargeModelRecordingTests.codecs)
    for offset in 0..<count {
      try dispatcher.dispatchSync(action: CatalogAction.restock(id: product(offset), amount: offset + 1))
    }
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    return file.lines.compactMap { line in
      guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
        object["k"] as? String == "r", let index = object["i"] as? Int,
        let restock = (object["a"] as? [String: Any])?["restock"] as? [String: Any],
        let amount = restock["amount"] as? Int
      else { return nil }
      return (index, amount, object["z"] == nil && object["l"] != nil)
    }
  }

  /// A re-run that diverges at a line holding its lists whole (compared on the other thread), or at the line after it
  /// (on either thread, against the lists found for the whole line), alone or five records before a
  /// dispatch that fails: the divergence, the first, is the one thrown, naming its field.
  @Test(arguments: [0, 1], [true, false])
  func aDivergenceAtOrAfterALineOfWholeListsIsThrownBeforeLaterErrors(after: Int, failingLater: Bool) throws {
    let file = TemporaryFile()
    let records = try Self.recordRestocks(1_100, of: 100, to: file) { $0 % 100 }
    // The first record after the start that holds its lists whole, and the one that diverges.
    let whole = try #require(records.first { $0.whole && $0.index > 10 })
    let diverging = try #require(records.first { $0.amount == whole.amount + after })
    #expect(diverging.whole == (after == 0))

    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    let verifying = Dispatcher()
    try verifying.register(
      store: Store(identifier: "catalog", model: LargeModelRecordingTests.initial(count: 100)) {
        (action: CatalogAction, model) in
        guard case .restock(let id, let amount) = action else { return }
        if failingLater, amount == whole.amount + 5 { throw TestFailure(reason: "five records on") }
        model.products[id: id]?.stock += amount == diverging.amount ? amount + 1 : amount
        model.edits += 1
      })
    var counts = Session.VerifyCounts()
    do {
      try session.verify(against: verifying, mode: .sync, counts: &counts)
      Issue.record("a diverging session must throw")
    } catch {
      guard case .diverged(let index, _, let store, _, let differences) = error else { throw error }
      #expect(index == diverging.index)
      #expect(store == "catalog")
      #expect(differences.count == 1 && differences.first?.path.hasSuffix("stock") == true, "\(differences)")
    }
    #expect(counts.handedOver >= 2, "the first record and the later whole line, compared on the other thread")
  }

  /// A re-run that diverges at a line of whole lists, which the other thread compares, stops at its next step once
  /// that thread found it, not at the session's end.
  ///
  /// The product it changes is in no later record, so no record compared on this thread shows it. The re-run waits,
  /// 50 records after the divergence, until the other thread found it.
  @Test func aReRunStopsAtItsNextStepOnceTheOtherThreadFoundADivergence() throws {
    let file = TemporaryFile()
    let records = try Self.recordRestocks(2_000, of: 10, to: file) { 1 + $0 % 9 }
    // The first record after the start that holds its lists whole.
    let diverging = try #require(records.first { $0.whole && $0.index > 10 })
    // Its re-run is the `index + 1`th reduction; the re-run waits at the 50th after it.
    let waitingAt = diverging.index + 51

    let session = try Session.load(from: file.url, codecs: LargeModelRecordingTests.codecs)
    let verifying = Dispatcher()
    let reductions = Locked(0)
    let found = DispatchSemaphore(value: 0)
    try verifying.register(
      store: Store(identifier: "catalog", model: LargeModelRecordingTests.initial(count: 10)) {
        (action: CatalogAction, model) in
        guard case .restock(let id, let amount) = action else { return }
        let reduction = reductions.withLock {
          $0 += 1
          return $0
        }
        if reduction == waitingAt && found.wait(timeout: .now() + 60) == .timedOut {
          Issue.record("the other thread found no divergence in 60 seconds")
        }
        model.products[id: id]?.stock += amount
        if amount == diverging.amount { model.products[id: 0]?.name = "diverged" }
        model.edits += 1
      })
    var counts = Session.VerifyCounts()
    #expect {
      try session.verify(against: verifying, mode: .sync, counts: &counts) { found.signal() }
    } throws: { error in
      guard case .diverged(_, _, _, _, let differences) = error as? SessionError else { return false }
      return differences.count == 1 && differences.first?.path.hasSuffix("name") == true
    }
    // Without the re-run's check of the other thread at each step, it goes on to the session's end (2,000).
    let reduced = reductions.withLock { $0 }
    #expect(reduced <= waitingAt, "\(reduced) records re-run; the divergence is the \(diverging.index + 1)th")
  }
}
