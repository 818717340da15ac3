import Dispatch
import Testing

@testable import DispatchStore

@Suite("ActionOperation", .timeLimit(.minutes(1)), .watchdog)
struct ActionOperationTests {
  @Test func laterFinishCallsAreIgnored() throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "twice", model: Counter(), reducer: TwiceFinishingReducer())
    try dispatcher.register(store: store)
    let middleware = RecordingMiddleware()
    dispatcher.register(middleware: middleware)

    #expect(dispatchSync(dispatcher, CounterAction.noop).isSuccess)
    #expect(middleware.transactions.withLock { $0 }.count == 1)
  }

  /// An operation finished on another thread at any moment, also while the dispatcher registers to hear it (a race
  /// the operation settles without its lock), is reported once, with its own outcome.
  @Test(arguments: [false, true])
  func anOperationFinishedElsewhereAtAnyMomentIsReportedOnce(failing: Bool) async throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "racing", model: Counter(), reducer: ElsewhereFinishingReducer(failing: failing))
    try dispatcher.register(store: store)
    let completions = Locked<[Int: Int]>([:])
    let wrongOutcomes = Locked(0)
    let perThread = 300

    await onThreads(4) { thread in
      for index in 0..<perThread {
        let key = thread * perThread + index
        let check: Dispatcher.Completion = { result in
          completions.withLock { $0[key, default: 0] += 1 }
          if result.isSuccess == failing { wrongOutcomes.withLock { $0 += 1 } }
        }
        // Half `.sync` (the dispatching thread may wait), half `.async` (a completion hears it).
        dispatcher.dispatch(
          action: CounterAction.increase(1), mode: index.isMultiple(of: 2) ? .sync : .async, then: check)
      }
    }
    let total = 4 * perThread
    while completions.withLock({ $0.count }) < total { await Task.yield() }

    #expect(completions.withLock { $0.values.allSatisfy { $0 == 1 } })
    #expect(wrongOutcomes.withLock { $0 } == 0)
    #expect(store.model.count == total)
  }

  /// Changes the count, then finishes (or fails) on a global-queue thread at once: sometimes before the dispatcher
  /// registered to hear it, sometimes during, sometimes after.
  final class ElsewhereFinishingReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
    let failing: Bool

    init(failing: Bool) {
      self.failing = failing
    }

    override func operation(
      for action: CounterAction, in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
      ActionOperation(action: action, store: store) { [failing] operation, _, _ in
        DispatchQueue.global().async {
          operation.updateModel { $0.count += 1 }
          if failing {
            operation.finish(throwing: TestFailure(reason: "elsewhere"))
          } else {
            operation.finish()
          }
        }
      }
    }
  }

  /// Finishes, then tries to fail.
  final class TwiceFinishingReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
    override func operation(
      for action: CounterAction, in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
      ActionOperation(action: action, store: store) { operation, _, _ in
        operation.finish()
        #expect(operation.isFinished)
        operation.finish(throwing: TestFailure(reason: "too late"))
      }
    }
  }
}
