import Testing

@testable import DispatchStore

/// Operations whose work is `async`: finished when the body returns, failed with what it throws, cancelled with
/// their dispatch through task cancellation, and able to dispatch follow-ups.
@Suite("Async operations", .timeLimit(.minutes(1)), .watchdog)
struct AsyncOperationTests {
  /// Steps the body through: `.increase` adds after a suspension, `.fail` throws, `.noop` sleeps until cancelled,
  /// `.increaseLater` adds and dispatches a follow-up `.increase(1)`.
  final class AsyncReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
    let sawCancellation = Locked(false)
    /// Hears each `.noop` body begin.
    let began = Collector<Bool>()

    override func operation(
      for action: CounterAction, in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
      ActionOperation(action: action, store: store) { [sawCancellation, began] operation in
        switch operation.action {
        case .increase(let amount):
          await Task.yield()
          operation.updateModel { $0.count += amount }
        case .increaseLater(let amount):
          operation.updateModel { $0.count += amount }
          try await operation.dispatcher?.dispatch(action: CounterAction.increase(1))
        case .fail:
          throw TestFailure(reason: "async")
        case .noop:
          began.append(true)
          do {
            try await Task.sleep(for: .seconds(600))
          } catch {
            sawCancellation.withLock { $0 = Task.isCancelled }
            throw error
          }
        case .abandon:
          break
        }
      }
    }
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func anAsyncOperationFinishesWhenItsBodyReturns(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "async", model: Counter(), reducer: AsyncReducer())
    try dispatcher.register(store: store)

    try await dispatcher.dispatch(action: CounterAction.increase(3), mode: mode)

    #expect(store.model.count == 3)
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func anAsyncOperationFailsWithWhatItsBodyThrows(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: Store(identifier: "async", model: Counter(), reducer: AsyncReducer()))

    let handle = dispatcher.start(action: CounterAction.fail, mode: mode)
    let result = await handle.result

    guard case .failure(.operationsFailed(let failures)) = result else {
      Issue.record("expected a failure, got \(result)")
      return
    }
    #expect(failures.first?.error as? TestFailure == TestFailure(reason: "async"))
  }

  /// Cancelling the dispatch cancels the operation's task: a cancellable await throws, and the operation fails
  /// with it; the dispatch is cancelled at once.
  @Test(arguments: Dispatcher.Mode.allCases)
  func cancellingTheDispatchCancelsTheTask(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let reducer = AsyncReducer()
    try dispatcher.register(store: Store(identifier: "async", model: Counter(), reducer: reducer))
    let middleware = RecordingMiddleware()
    dispatcher.register(middleware: middleware)
    let ended = Collector<Transaction>()
    let watcher = EndWatcher(ended: ended)
    dispatcher.register(middleware: watcher)

    let handle = await startThenCancel(CounterAction.noop, mode: mode, on: dispatcher) {
      _ = await reducer.began.wait(for: 1)
    }

    #expect(handle.state.description == "cancelled")
    let transaction = await ended.wait(for: 1)[0]
    #expect(transaction.error is CancellationError)
    #expect(transaction.wasCancelled)
    #expect(reducer.sawCancellation.withLock { $0 })
  }

  /// The body reaches the dispatcher through the operation, and dispatches a follow-up there.
  @Test func anAsyncOperationDispatchesAFollowUp() async throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "async", model: Counter(), reducer: AsyncReducer())
    try dispatcher.register(store: store)

    try await dispatcher.dispatch(action: CounterAction.increaseLater(10))

    #expect(store.model.count == 11)
    #expect(store.dispatcher === dispatcher)
    _ = dispatcher.unregister(storeIdentifier: "async")
    #expect(store.dispatcher == nil)
  }
}

/// Hands each finished transaction to a collector.
final class EndWatcher: Middleware {
  let ended: Collector<Transaction>
  init(ended: Collector<Transaction>) { self.ended = ended }
  func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
  func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    ended.append(transaction)
  }
}
