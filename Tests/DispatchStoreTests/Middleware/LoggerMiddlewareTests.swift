import Foundation
import Testing

@testable import DispatchStore

struct Profile: ModelType, Codable, Equatable {
  struct User: Codable, Equatable {
    var name = "A"
    var tags: [String] = []
  }

  var user = User()
  var visits = 0
}

enum ProfileAction: ActionType, Codable {
  case rename(String)
  case tag(String)
  case visit
}

final class ProfileReducer: Reducer<Profile, ProfileAction>, @unchecked Sendable {
  override func operation(
    for action: ProfileAction, in store: Store<Profile, ProfileAction>
  ) -> ActionOperation<Profile, ProfileAction> {
    ActionOperation(action: action, store: store) { operation, action, store in
      operation.updateModel { profile in
        switch action {
        case .rename(let name): profile.user.name = name
        case .tag(let tag): profile.user.tags.append(tag)
        case .visit: break
        }
      }
      operation.finish()
    }
  }
}

@Suite("LoggerMiddleware", .timeLimit(.minutes(1)), .watchdog)
struct LoggerMiddlewareTests {
  @Test func writesOneLinePerTransactionWithTheChangedFieldsAsKeyPaths() throws {
    let lines = Locked<[String]>([])
    let dispatcher = Dispatcher()
    let store = Store(identifier: "profile", model: Profile(), reducer: ProfileReducer())
    try dispatcher.register(store: store)
    let recorder = RecordingMiddleware()
    dispatcher.register(middleware: recorder)
    dispatcher.register(middleware: LoggerMiddleware { line in lines.withLock { $0.append(line) } })

    #expect(dispatchSync(dispatcher, ProfileAction.rename("B")).isSuccess)
    #expect(dispatchSync(dispatcher, ProfileAction.tag("x")).isSuccess)
    #expect(dispatchSync(dispatcher, ProfileAction.visit).isSuccess)

    let logged = lines.withLock { $0 }
    let ids = recorder.transactions.withLock { $0.map(\.id) }
    #expect(logged.count == 3)
    let first = logged[0].split(separator: "\n").map(String.init)
    #expect(first[0].hasPrefix("[\(ids[0])] profile <- rename(\"B\") ("))
    #expect(first[0].hasSuffix(" µs)"))
    #expect(first.dropFirst() == ["  user.name: \"A\" -> \"B\""])
    #expect(logged[1].hasSuffix("\n  user.tags[0]: (none) -> \"x\""))
    #expect(logged[2].hasSuffix(" no change"))
  }

  @Test func anElementInsertedOrRemovedIsOneLineNotAChangeOfEveryElementAfterIt() throws {
    struct Item: Codable, Equatable {
      var id: Int
      var done = false
    }
    struct List: ModelType, Codable {
      var items = (1...5).map { Item(id: $0) }
    }
    enum ListAction: ActionType {
      case insertFirst(Int)
      case removeFirst
      case finish(Int)
      case replaceLast(Int)
    }
    let lines = Locked<[String]>([])
    let dispatcher = Dispatcher()
    let store = Store(identifier: "list", model: List()) { (action: ListAction, list: inout List) in
      switch action {
      case .insertFirst(let id): list.items.insert(Item(id: id), at: 0)
      case .removeFirst: list.items.removeFirst()
      case .finish(let id): list.items[list.items.firstIndex { $0.id == id }!].done = true
      case .replaceLast(let id): list.items[list.items.count - 1] = Item(id: id)
      }
    }
    try dispatcher.register(store: store)
    dispatcher.register(middleware: LoggerMiddleware { line in lines.withLock { $0.append(line) } })

    for action in [ListAction.insertFirst(0), .removeFirst, .finish(3), .replaceLast(9)] {
      #expect(dispatchSync(dispatcher, action).isSuccess)
    }

    let fields = lines.withLock { $0 }.map { Array($0.split(separator: "\n").dropFirst().map(String.init)) }
    #expect(
      fields == [
        ["  items[0]: (none) -> {\"done\":false,\"id\":0}"],
        ["  items[0]: {\"done\":false,\"id\":0} -> (none)"],
        ["  items[2].done: false -> true"],
        ["  items[4].id: 5 -> 9"],
      ])
  }

  @Test func alignedArraysReportEachGapOnceAtItsIndex() {
    func array(_ values: [Int64]) -> JSONValue { .array(values.map(JSONValue.integer)) }

    let aligned = JSONValue.differences(
      expected: array([1, 2, 3, 4]), actual: array([0, 1, 3, 4, 5]), alignsArrays: true)
    let byIndex = JSONValue.differences(expected: array([1, 2, 3, 4]), actual: array([0, 1, 3, 4, 5]))

    #expect(
      aligned == [
        FieldDifference(path: "[0]", expected: nil, actual: "0"),
        FieldDifference(path: "[1]", expected: "2", actual: nil),
        FieldDifference(path: "[4]", expected: nil, actual: "5"),
      ])
    // Verify's comparison stays index by index: each position whose values differ.
    #expect(
      byIndex == [
        FieldDifference(path: "[0]", expected: "1", actual: "0"),
        FieldDifference(path: "[1]", expected: "2", actual: "1"),
        FieldDifference(path: "[4]", expected: nil, actual: "5"),
      ])
  }

  @Test func largeArraysAreAlignedAfterTheirEqualEndsOrComparedIndexByIndexPastTheLimit() {
    let large = (0..<20_000).map { JSONValue.integer(Int64($0)) }
    var inserted = large
    inserted.insert(.integer(-1), at: 10_000)

    let one = JSONValue.differences(expected: .array(large), actual: .array(inserted), alignsArrays: true)
    let reversed = JSONValue.differences(
      expected: .array(large), actual: .array(large.reversed()), alignsArrays: true)

    #expect(one == [FieldDifference(path: "[10000]", expected: nil, actual: "-1")])
    // Nothing equal at the ends and 40,000 elements between them: index by index, every position differs.
    #expect(reversed.count == 20_000)
    #expect(reversed.first == FieldDifference(path: "[0]", expected: "0", actual: "19999"))
  }

  @Test(.disabled(if: isSanitized, "value code on one thread; under a sanitizer its load starved other suites"))
  func aGridWhoseEveryRowChangedStaysWithinTheAlignmentBudget() async {
    @Sendable func grid(_ offset: Int64) -> JSONValue {
      .array((0..<500).map { row in .array((0..<500).map { .integer(Int64(row * 1_000 + $0) + offset) }) })
    }

    // Off the cooperative pool (see `onOwnThread`).
    let differences: [FieldDifference] = await onOwnThread {
      JSONValue.differences(expected: grid(0), actual: grid(1), alignsArrays: true)
    }

    // Each row is its old one shifted by one (first value gone, a new last one). The top level aligns its 1,000
    // elements (every row differs), which leaves 3,000 of the budget: the first three rows align, at 1,000 each,
    // into two differences (a value removed, one inserted); the other 497 compare index by index, 500 each.
    let expectedCount: Int = 3 * 2 + 497 * 500
    #expect(differences.count == expectedCount)
    #expect(differences.first == FieldDifference(path: "[0][0]", expected: "0", actual: nil))
    #expect(differences.last == FieldDifference(path: "[499][499]", expected: "499499", actual: "499500"))
  }

  @Test func failuresAreLoggedWithTheirErrorAndOpaqueModelsWithoutFields() throws {
    struct Opaque: ModelType { var count = 0 }
    final class OpaqueReducer: Reducer<Opaque, CounterAction>, @unchecked Sendable {
      override func operation(for action: CounterAction, in store: Store<Opaque, CounterAction>) -> ActionOperation<
        Opaque, CounterAction
      > {
        ActionOperation(action: action, store: store) { operation, action, store in
          operation.updateModel { $0.count += 1 }
          if action == .fail { return operation.finish(throwing: TestFailure(reason: "no")) }
          operation.finish()
        }
      }
    }
    let lines = Locked<[String]>([])
    let dispatcher = Dispatcher()
    try dispatcher.register(store: Store(identifier: "opaque", model: Opaque(), reducer: OpaqueReducer()))
    dispatcher.register(middleware: LoggerMiddleware { line in lines.withLock { $0.append(line) } })
    #expect(dispatchSync(dispatcher, CounterAction.noop).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.fail).dispatchError != nil)
    let logged = lines.withLock { $0 }
    #expect(logged.count == 2)
    #expect(logged[0].contains("opaque <- noop ("))
    #expect(!logged[0].contains("\n"))  // Not Codable: no field lines, and no claim of "no change".
    #expect(!logged[0].contains("no change"))
    #expect(logged[1].contains("opaque <- fail ("))
    #expect(logged[1].contains("failed: TestFailure(reason: \"no\")"))
  }

  @Test func aCancelledTransactionIsLoggedAsCancelledNotFailed() async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    try dispatcher.register(store: Store(identifier: "gated", model: Counter(), reducer: GatedReducer(gate: gate)))
    let lines = Locked<[String]>([])
    dispatcher.register(middleware: LoggerMiddleware { line in lines.withLock { $0.append(line) } })
    let handle = dispatcher.start(action: CounterAction.increase(1), mode: .async)
    _ = await gate.waitForOperations(1)
    handle.cancel()  // The gate finishes the operation with CancellationError.
    _ = await handle.result
    // The handle reports its cancellation at once; the transaction ends, and is logged, when the operation returns.
    #expect(await eventually { lines.withLock { !$0.isEmpty } }, "the cancelled transaction was never logged")
    let logged = lines.withLock { $0 }
    #expect(logged.count == 1)
    #expect(logged.first?.contains("gated <- increase(1) (") == true)
    #expect(logged.first?.contains(" cancelled") == true)
    #expect(logged.first?.contains("failed") == false)
  }
}
