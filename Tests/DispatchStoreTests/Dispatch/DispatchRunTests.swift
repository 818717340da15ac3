import Dispatch
import Foundation
import Synchronization
import Testing

@testable import DispatchStore

/// `DispatchRun` with one store that waits for nobody and no middleware: the run that keeps no state, and shares it
/// only when the operation outlives its start.
@Suite("DispatchRun, one store", .timeLimit(.minutes(1)), .watchdog)
struct DispatchRunTests {
  @Test(arguments: Dispatcher.Mode.allCases)
  func lateFinishAnnouncesOnTheFinishingThreadBeforeTheCompletion(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let finishingThread = Locked<ObjectIdentifier?>(nil)
    let store = Store(
      identifier: "late", model: Counter(), reducer: FinishesOnceAwaitedReducer(finishingThread: finishingThread))
    try dispatcher.register(store: store)
    let observerThreads = Locked<[ObjectIdentifier]>([])
    let token = store.observe(synchronously: true) { change in
      observerThreads.withLock { $0.append(ObjectIdentifier(Thread.current)) }
    }
    let caller = Locked<ObjectIdentifier?>(nil)

    let result = await withCheckedContinuation { continuation in
      caller.withLock { $0 = ObjectIdentifier(Thread.current) }
      dispatcher.dispatch(action: CounterAction.increase(3), mode: mode) { result in
        // The observer already heard, and the model is final.
        #expect(observerThreads.withLock { $0.count } == 1)
        #expect(store.model.count == 3)
        continuation.resume(returning: result)
      }
    }

    #expect(result.isSuccess)
    // The operation finished on a global-queue thread only after the dispatch found it running, and the observer ran
    // on that thread.
    let finisher = try #require(finishingThread.withLock { $0 })
    #expect(observerThreads.withLock { $0 } == [finisher])
    if mode == .sync {
      #expect(finisher != caller.withLock { $0 })
    }
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func failureNamesTheStoreAndANewTransaction(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeCounterStore("failing"))
    let before = TransactionID.next()

    let result = await withCheckedContinuation { continuation in
      dispatcher.dispatch(action: CounterAction.fail, mode: mode) { continuation.resume(returning: $0) }
    }

    guard case .operationsFailed(let failures) = result.dispatchError else {
      Issue.record("expected operationsFailed, got \(result)")
      return
    }
    #expect(failures.map(\.storeIdentifier) == ["failing"])
    #expect(failures.first?.error as? TestFailure == TestFailure(reason: "fail in failing"))
    #expect(failures.first.map { $0.transactionID.rawValue > before.rawValue } == true)
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func middlewareSeesOneTransactionWhoseIdentifierTheFailureCarries(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let middleware = RecordingMiddleware()
    try dispatcher.register(store: makeCounterStore("watched"))
    dispatcher.register(middleware: middleware)

    let succeeded = await withCheckedContinuation { continuation in
      dispatcher.dispatch(action: CounterAction.increase(1), mode: mode) { continuation.resume(returning: $0) }
    }
    let failed = await withCheckedContinuation { continuation in
      dispatcher.dispatch(action: CounterAction.fail, mode: mode) { continuation.resume(returning: $0) }
    }

    #expect(succeeded.isSuccess)
    let transactions = middleware.transactions.withLock { $0 }
    #expect(transactions.count == 2)
    #expect(transactions.first?.succeeded == true)
    #expect(transactions.last?.error is TestFailure)
    #expect(transactions.allSatisfy { $0.duration != nil })
    guard case .operationsFailed(let failures) = failed.dispatchError else {
      Issue.record("expected operationsFailed, got \(failed)")
      return
    }
    #expect(failures.map(\.transactionID) == [transactions.last?.id].compactMap { $0 })
    let events = middleware.events.withLock { $0 }
    guard case .will(_, let firstWill) = events.first, case .did(_, let firstDid, false) = events.dropFirst().first
    else {
      Issue.record("unexpected events \(events)")
      return
    }
    #expect(firstWill == firstDid)
  }

  @Test func reducerIsAskedForItsWaitListOncePerDispatch() throws {
    let dispatcher = Dispatcher()
    let asked = Atomic<Int>(0)
    // Waits for a registered store that does not handle counter actions: the general path, satisfied at once.
    let waiting = makeCounterStore("waiting") { _ in
      asked.add(1, ordering: .relaxed)
      return ["text"]
    }
    try dispatcher.register(store: waiting)
    try dispatcher.register(store: Store(identifier: "text", model: Text(), reducer: TextReducer()))

    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.increase(1), storeIdentifier: "waiting").isSuccess)

    #expect(asked.load(ordering: .relaxed) == 2)
    #expect(waiting.model.count == 2)
  }

  @Test func operationThatFinishesWhileTheDispatcherRegistersForItCompletesOnce() async throws {
    // The operation finishes on another thread, racing with the dispatch registering for its completion: the
    // completion must run exactly once whichever side wins.
    let dispatcher = Dispatcher()
    let store = makeCounterStore("race")
    try dispatcher.register(store: store)
    let completions = Atomic<Int>(0)

    // Each change is announced on the thread that finished it, before the completion: none is merged into the
    // next, whichever side of the race wins.
    let heard = Locked<[Int]>([])
    let token = store.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.count) } }

    for expected in 1...2_000 {
      dispatcher.dispatch(action: CounterAction.increaseLater(1), mode: .sync) { _ in
        #expect(heard.withLock { $0.last } == expected)
        completions.add(1, ordering: .relaxed)
      }
    }

    #expect(completions.load(ordering: .relaxed) == 2_000)
    #expect(store.model.count == 2_000)
    #expect(heard.withLock { $0 } == Array(1...2_000))
    withExtendedLifetime(token) {}
  }
}

/// A reducer whose operations finish late, on a global-queue thread that it records.
final class FinishesOnceAwaitedReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
  let finishingThread: Locked<ObjectIdentifier?>

  init(finishingThread: Locked<ObjectIdentifier?>) {
    self.finishingThread = finishingThread
  }

  override func operation(
    for action: CounterAction, in store: Store<Counter, CounterAction>
  ) -> ActionOperation<Counter, CounterAction> {
    ActionOperation(action: action, store: store) { [finishingThread] operation, action, store in
      finishLate(operation) {
        finishingThread.withLock { $0 = ObjectIdentifier(Thread.current) }
        if case .increase(let amount) = action { operation.updateModel { $0.count += amount } }
      }
    }
  }
}
