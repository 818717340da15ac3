import Dispatch
import Synchronization
import Testing

@testable import DispatchStore

/// Synchronous observers while eight threads dispatch `.sync` to one store at once.
@Suite("Observers under contention", .timeLimit(.minutes(2)), .watchdog)
struct ObserverContentionTests {
  static let threads = 8
  static let perThread = 500

  /// A unique amount per dispatch, so that each notification names the change it carries.
  static func amount(thread: Int, index: Int) -> Int { thread * perThread + index + 1 }

  /// How the store's reducer changes the model.
  enum Changes: String, CaseIterable, Sendable {
    /// A `SynchronousReducer`.
    case inPlace
    /// An operation calling `ActionOperation.updateModel`.
    case operationUpdates

    /// A new reducer that changes the model this way.
    func makeReducer() -> Reducer<Counter, CounterAction> {
      switch self {
      case .inPlace: CounterSynchronousReducer()
      case .operationUpdates: OperationUpdateReducer()
      }
    }
  }

  /// Every change is heard exactly once, in the order of the changes, with the model that change made (each
  /// notified count is the previous one plus its own amount), and before its dispatch completed.
  @Test(arguments: Changes.allCases)
  func changesAreEachHeardOnceWithTheirOwnModelBeforeTheirDispatchCompletes(_ changes: Changes) async throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "contended", model: Counter(), reducer: changes.makeReducer())
    try dispatcher.register(store: store)
    let heard = Locked<(order: [(amount: Int, count: Int)], amounts: Set<Int>)>(([], []))
    let token = store.observe(synchronously: true) { change in
      guard case .increase(let amount) = change.action else { return }
      heard.withLock {
        $0.order.append((amount, change.model.count))
        $0.amounts.insert(amount)
      }
    }
    let completedUnheard = Atomic<Int>(0)

    await onThreads(Self.threads) { thread in
      for index in 0..<Self.perThread {
        let amount = Self.amount(thread: thread, index: index)
        dispatcher.dispatch(action: CounterAction.increase(amount), mode: .sync) { result in
          if !result.isSuccess || !heard.withLock({ $0.amounts.contains(amount) }) {
            completedUnheard.add(1, ordering: .relaxed)
          }
        }
      }
    }

    let total = Self.threads * Self.perThread
    let order = heard.withLock { $0.order }
    #expect(order.count == total)
    #expect(Set(order.map(\.amount)).count == total)
    var previous = 0
    var inconsistent = 0
    for entry in order {
      if entry.count != previous + entry.amount { inconsistent += 1 }
      previous = entry.count
    }
    #expect(inconsistent == 0)
    #expect(completedUnheard.load(ordering: .relaxed) == 0)
    #expect(store.model.count == (1...total).reduce(0, +))
    withExtendedLifetime(token) {}
  }

  /// An observer registered while another thread dispatches: once `observe` returned, a change that the model it
  /// reads does not show yet is announced to it. (A dispatch that looked for observers before taking the store's
  /// lock, found none and reduced without announcing, missed such observers.)
  @Test(arguments: Changes.allCases)
  func anObserverRegisteredDuringADispatchHearsTheChangeItsFirstReadDidNotSee(_ changes: Changes) async throws {
    let rounds = 3_000
    let missed = Locked(0)
    await onThreads(1) { _ in
      for _ in 0..<rounds {
        let dispatcher = Dispatcher()
        let store = Store(identifier: "raced", model: Counter(), reducer: changes.makeReducer())
        try! dispatcher.register(store: store)
        let dispatched = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
          _ = dispatchSync(dispatcher, CounterAction.increase(1))
          dispatched.signal()
        }
        let heard = Locked(false)
        let token = store.observe(synchronously: true) { change in
          if change.model.count == 1 { heard.withLock { $0 = true } }
        }
        let seenAtRegistration = store.model.count
        dispatched.wait()
        if seenAtRegistration == 0 && !heard.withLock({ $0 }) { missed.withLock { $0 += 1 } }
        withExtendedLifetime(token) {}
      }
    }
    #expect(missed.withLock { $0 } == 0, "of \(rounds) rounds")
  }
}

/// Increases the count by the action's amount through `ActionOperation.updateModel`.
private final class OperationUpdateReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
  override func operation(
    for action: CounterAction, in store: Store<Counter, CounterAction>
  ) -> ActionOperation<Counter, CounterAction> {
    ActionOperation(action: action, store: store) { operation, action, _ in
      if case .increase(let amount) = action { operation.updateModel { $0.count += amount } }
      operation.finish()
    }
  }

  /// A synchronous observer may dispatch `.sync` to its own store, whose operation changes it on another thread.
  ///
  /// That thread would wait for the observer's turn, and the observer for the operation (helper-65): its change is
  /// queued for the observer's thread instead, which delivers it once the observer returns.
  @Test func anObserversSyncDispatchWhoseOperationChangesTheStoreOnAnotherThreadCompletes() async throws {
    let dispatcher = Dispatcher()
    let store = makeCounterStore("self")
    try dispatcher.register(store: store)
    let heard = Locked<[Int]>([])
    let inner = Locked<Result<Void, DispatchError>?>(nil)
    let token = store.observe(synchronously: true) { change in
      heard.withLock { $0.append(change.model.count) }
      guard change.model.count == 1 else { return }
      let result = dispatchSync(dispatcher, CounterAction.increaseLater(10))
      inner.withLock { $0 = result }
    }
    let outer = await onOwnThread { dispatchSync(dispatcher, CounterAction.increase(1)) }
    #expect(outer.isSuccess)
    #expect(inner.withLock { $0 }?.isSuccess == true)
    #expect(store.model.count == 11)
    #expect(heard.withLock { $0 } == [1, 11])
    withExtendedLifetime(token) {}
  }

  /// Two stores whose observers each dispatch `.sync` to the other, whose operations change it on another thread:
  /// neither delivering thread waits for the other's turn.
  @Test func observersOfTwoStoresDispatchingSyncToEachOtherComplete() async throws {
    let dispatcher = Dispatcher()
    let first = makeCounterStore("first")
    let second = makeCounterStore("second")
    try dispatcher.register(store: first)
    try dispatcher.register(store: second)
    let (firstRuns, secondRuns) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
    func observe(
      _ store: Store<Counter, CounterAction>, sendingTo other: String, runs: DispatchSemaphore,
      otherRuns: DispatchSemaphore
    ) -> ObservationToken {
      store.observe(synchronously: true) { change in
        guard change.model.count == 1 else { return }
        // Both observers are running before either dispatches.
        runs.signal()
        otherRuns.wait()
        _ = dispatchSync(dispatcher, CounterAction.increaseLater(10), storeIdentifier: other)
      }
    }
    let tokens = [
      observe(first, sendingTo: "second", runs: firstRuns, otherRuns: secondRuns),
      observe(second, sendingTo: "first", runs: secondRuns, otherRuns: firstRuns),
    ]
    async let one = onOwnThread { dispatchSync(dispatcher, CounterAction.increase(1), storeIdentifier: "first") }
    async let two = onOwnThread { dispatchSync(dispatcher, CounterAction.increase(1), storeIdentifier: "second") }
    let results = await [one, two]
    #expect(results.allSatisfy { $0.isSuccess })
    #expect(first.model.count == 11)
    #expect(second.model.count == 11)
    withExtendedLifetime(tokens) {}
  }

  /// An undo that puts two stores back holds both turns while it delivers the first store's notification.
  ///
  /// That store's observer dispatches `.sync` to the second, whose operation changes it on another thread: that
  /// thread does not wait for the second store's turn, which the blocked thread holds (helper-67).
  @Test func anObserverOfAStorePutBackDispatchingSyncToAnotherStorePutBackCompletes() async throws {
    let dispatcher = Dispatcher()
    let (first, second) = (makeCounterStore("first"), makeCounterStore("second"))
    try dispatcher.register(store: first)
    try dispatcher.register(store: second)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    // One dispatch to both stores: one undo puts both back.
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    let secondHeard = Locked<[Int]>([])
    let inner = Locked<Result<Void, DispatchError>?>(nil)
    let tokens = [
      first.observe(synchronously: true) { change in
        guard change.isRestore else { return }
        let result = dispatchSync(dispatcher, CounterAction.increaseLater(10), storeIdentifier: "second")
        inner.withLock { $0 = result }
      },
      second.observe(synchronously: true) { change in secondHeard.withLock { $0.append(change.model.count) } },
    ]
    // Back before the only dispatch: no record at the cursor.
    let atCursor = try await onOwnThread { () throws(SessionError) -> Record? in try recorder.undo() }
    #expect(atCursor == nil)
    #expect(inner.withLock { $0 }?.isSuccess == true)
    #expect(first.model.count == 0)
    #expect(second.model.count == 10)
    // Both of the second store's changes were heard, the operation's after the restore it was made on.
    #expect(secondHeard.withLock { $0 }.sorted() == [0, 10])
    withExtendedLifetime(tokens) {}
  }
}
