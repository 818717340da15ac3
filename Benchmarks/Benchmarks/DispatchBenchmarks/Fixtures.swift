import Benchmark
import Dispatch
import DispatchStore

/// The model every benchmark store holds: one counter.
struct Tally: ModelType, Equatable, Codable {
  var count = 0
}

enum TallyAction: ActionType, Codable {
  /// Adds one and finishes at once, on the dispatching thread.
  case increment
  /// Adds one on a global-queue thread and finishes there.
  case incrementElsewhere
}

/// A reducer whose operation increments the counter; `waits` is its wait list for every action.
final class TallyReducer: Reducer<Tally, TallyAction>, @unchecked Sendable {
  let waits: [String]

  init(waits: [String] = []) {
    self.waits = waits
  }

  override func waitList(for action: TallyAction) -> [String] { waits }

  override func operation(for action: TallyAction, in store: Store<Tally, TallyAction>) -> ActionOperation<
    Tally, TallyAction
  > {
    ActionOperation(action: action, store: store) { operation, action, _ in
      switch action {
      case .increment:
        operation.updateModel { $0.count += 1 }
        operation.finish()
      case .incrementElsewhere:
        DispatchQueue.global().async {
          operation.updateModel { $0.count += 1 }
          operation.finish()
        }
      }
    }
  }
}

/// The same increment, reduced in place: no operation.
final class TallySynchronousReducer: SynchronousReducer<Tally, TallyAction>, @unchecked Sendable {
  let waits: [String]

  init(waits: [String] = []) {
    self.waits = waits
  }

  override func waitList(for action: TallyAction) -> [String] { waits }

  override func reduce(_ action: TallyAction, into model: inout Tally) {
    model.count += 1
  }
}

/// An action no benchmark store handles, so that its stores are registered but never respond.
enum OtherAction: ActionType {
  case ping
}

final class OtherReducer: Reducer<Tally, OtherAction>, @unchecked Sendable {}

/// A middleware that does nothing with what it sees.
final class PassThroughMiddleware: Middleware {
  func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
  func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
}

/// A middleware that reads each transaction's duration, like a timing logger.
final class DurationMiddleware: Middleware {
  func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
  func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    precondition(transaction.duration != nil)
  }
}

/// A dispatcher with `responding` stores that handle ``TallyAction`` and `idle` stores that do not.
struct Fixture {
  let dispatcher = Dispatcher()
  var stores: [Store<Tally, TallyAction>] = []
  var tokens: [ObservationToken] = []

  /// - Parameter synchronous: Whether the responding stores reduce in place (``TallySynchronousReducer``) rather
  ///   than through operations.
  init(responding: Int = 1, idle: Int = 0, chained: Bool = false, synchronous: Bool = false) {
    for index in 0..<responding {
      let waits = chained && index > 0 ? ["tally-\(index - 1)"] : []
      let reducer: Reducer<Tally, TallyAction> =
        synchronous ? TallySynchronousReducer(waits: waits) : TallyReducer(waits: waits)
      let store = Store(identifier: "tally-\(index)", model: Tally(), reducer: reducer)
      try! dispatcher.register(store: store)
      stores.append(store)
    }
    let reducer = OtherReducer()
    for index in 0..<idle {
      try! dispatcher.register(store: Store(identifier: "idle-\(index)", model: Tally(), reducer: reducer))
    }
  }

  /// Adds `count` observations to the first store, notified on the finishing thread (the one way to observe: a
  /// token; the same as ``observeWithTokens(count:)``, kept so that the benchmark names go on).
  mutating func observe(count: Int) {
    observeWithTokens(count: count)
  }

  /// Calls `done` each time the first store's count reaches `target` (or any count, with `nil`), on the thread that
  /// changed it: how a benchmark waits for dispatches it fired and forgot.
  func whenCount(reaches target: Int?, _ done: @escaping @Sendable () -> Void) -> ObservationToken {
    stores[0].observe(synchronously: true) { change in
      if target == nil || change.model.count == target { done() }
    }
  }

  /// Adds `count` token observations to the first store, notified on the finishing thread.
  mutating func observeWithTokens(count: Int) {
    for _ in 0..<count {
      tokens.append(stores[0].observe(synchronously: true) { change in blackHole(change.model.count) })
    }
  }

  func addMiddleware(count: Int, needingDurations: Bool = false) {
    for _ in 0..<count {
      dispatcher.register(middleware: needingDurations ? DurationMiddleware() : PassThroughMiddleware())
    }
  }

  /// Checks that the first store saw exactly `expected` increments, so that a broken path cannot look fast.
  func verify(_ expected: Int) {
    let count = stores[0].model.count
    precondition(count == expected, "benchmark store counted \(count), expected \(expected)")
  }
}
