import Foundation
import Testing

@testable import DispatchStore

/// A store holding 10,000 products in an `IdentifiedList`, recorded.
///
/// Every record holds what its transaction made, time travel puts back exactly that, and a saved session restores and
/// verifies. The expected models are made with an `Array`, not with the list under test.
@Suite("Recording a large model", .watchdog)
struct LargeModelRecordingTests {
  struct Product: Identifiable, Codable, Equatable, Sendable {
    let id: Int
    var name: String
    var stock = 0
  }

  struct Catalog: ModelType, Codable, Equatable {
    var products: IdentifiedList<Product>
    var edits = 0
  }

  enum CatalogAction: ActionType, Codable, Equatable {
    case restock(id: Int, amount: Int)
    case rename(id: Int, name: String)
    case add(id: Int)
    case discontinue(id: Int)
    /// Moves the product to the front.
    case feature(id: Int)
    /// Inserts a new product at the front.
    case addFirst(id: Int)
  }

  /// What each action does, on an array: the expectation.
  static func apply(_ action: CatalogAction, to products: inout [Product]) {
    switch action {
    case .restock(let id, let amount): products[products.firstIndex { $0.id == id }!].stock += amount
    case .rename(let id, let name): products[products.firstIndex { $0.id == id }!].name = name
    case .add(let id): products.append(Product(id: id, name: "New \(id)"))
    case .discontinue(let id): products.removeAll { $0.id == id }
    case .feature(let id): products.insert(products.remove(at: products.firstIndex { $0.id == id }!), at: 0)
    case .addFirst(let id): products.insert(Product(id: id, name: "New \(id)"), at: 0)
    }
  }

  static let count = 10_000

  /// A catalog of `count` products, none in stock.
  static func initial(count: Int = count) -> Catalog {
    Catalog(products: IdentifiedList((0..<count).map { Product(id: $0, name: "Product \($0)") }))
  }

  /// A catalog store of `count` products that counts its reductions.
  static func makeStore(count: Int = count, reductions: Locked<Int>? = nil) -> Store<Catalog, CatalogAction> {
    Store(identifier: "catalog", model: initial(count: count)) { action, model in
      reductions?.withLock { $0 += 1 }
      model.edits += 1
      switch action {
      case .restock(let id, let amount): model.products[id: id]?.stock += amount
      case .rename(let id, let name): model.products[id: id]?.name = name
      case .add(let id): model.products.append(Product(id: id, name: "New \(id)"))
      case .discontinue(let id): model.products.remove(id: id)
      case .feature(let id):
        if let index = model.products.index(id: id) { model.products.move(fromOffsets: [index], toOffset: 0) }
      case .addFirst(let id): model.products.insert(Product(id: id, name: "New \(id)"), at: 0)
      }
    }
  }

  /// 40 actions over the whole list of `count` products, from a seeded generator.
  static func actions(count: Int = count) -> [CatalogAction] {
    var random = SplitMix(seed: 11)
    var live = Array(0..<count)
    var next = count
    return (0..<40).map { step in
      let id = live[Int.random(in: 0..<live.count, using: &random)]
      switch step % 4 {
      case 0: return .restock(id: id, amount: step + 1)
      case 1: return .rename(id: id, name: "Renamed \(step) \"quoted\" ü")
      case 2:
        defer { next += 1 }
        live.append(next)
        return .add(id: next)
      default:
        live.removeAll { $0 == id }
        return .discontinue(id: id)
      }
    }
  }

  static var codecs: SessionCodecs {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "catalog", model: Catalog.self, action: CatalogAction.self)
    return codecs
  }

  @Test func everyRecordHoldsItsTransactionsModelAndTimeTravelPutsItBackExactly() async throws {
    // Off the cooperative pool (see `onOwnThread`); what differs comes back as text, to be recorded here. A thousand
    // products under a sanitizer, whose load at ten thousand starved other suites.
    let count = isSanitized ? 1_000 : Self.count
    let mismatches = try await onOwnThread { () throws -> [String] in
      var mismatches: [String] = []
      let dispatcher = Dispatcher()
      let store = Self.makeStore(count: count)
      let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
      try dispatcher.register(store: store)
      dispatcher.register(middleware: recorder)
      var expected = [(0..<count).map { Product(id: $0, name: "Product \($0)") }]
      for action in Self.actions(count: count) {
        try dispatcher.dispatchSync(action: action)
        var products = expected.last!
        Self.apply(action, to: &products)
        expected.append(products)
      }

      let records = recorder.records
      guard records.count == 40 else { return ["\(records.count) records, not 40"] }
      for (offset, record) in records.enumerated() {
        guard let model = record.model as? Catalog else { return ["record \(offset) holds no catalog"] }
        if Array(model.products) != expected[offset + 1] { mismatches.append("record \(offset)'s products") }
        if model.edits != offset + 1 { mismatches.append("record \(offset)'s edits: \(model.edits)") }
      }
      // Undo, redo and jump put back each record's model, in any order.
      var random = SplitMix(seed: 5)
      for _ in 0..<30 {
        let target = Int.random(in: 0..<40, using: &random)
        try recorder.jump(to: records[0].index + target)
        if Array(store.model.products) != expected[target + 1] { mismatches.append("jump to record \(target)") }
      }
      while (try? recorder.undo()) != nil {}
      if Array(store.model.products) != expected[0] { mismatches.append("undo to the start") }
      try recorder.redo()
      if Array(store.model.products) != expected[1] { mismatches.append("redo of the first") }
      return mismatches
    }
    #expect(mismatches == [])
  }

  /// With 1,000 products: until records are written as changes (proposal 0017), each line holds the whole model.
  @Test func aSavedSessionRestoresWithoutReducersAndVerifies() throws {
    let file = TemporaryFile()
    let dispatcher = Dispatcher()
    let count = 1_000
    let store = Self.makeStore(count: count)
    let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
    try dispatcher.register(store: store)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file.url, codecs: Self.codecs)
    for action in Self.actions(count: count) { try dispatcher.dispatchSync(action: action) }
    recorder.flush()
    #expect(recorder.persistenceError == nil)
    let final = store.model

    let session = try Session.load(from: file.url, codecs: Self.codecs)
    #expect(session.recordCount == 40)
    let reductions = Locked(0)
    let restoring = Dispatcher()
    let restored = Self.makeStore(count: count, reductions: reductions)
    try restoring.register(store: restored)
    try session.restore(into: restoring)
    #expect(restored.model == final)
    #expect(reductions.withLock { $0 } == 0)

    let verifying = Dispatcher()
    let fresh = Self.makeStore(count: count, reductions: reductions)
    try verifying.register(store: fresh)
    try session.verify(against: verifying)
    #expect(fresh.model == final)
    #expect(reductions.withLock { $0 } == 40)
  }
}
