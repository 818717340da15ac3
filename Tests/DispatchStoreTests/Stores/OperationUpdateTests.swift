import Dispatch
import Testing

@testable import DispatchStore

/// `ActionOperation.updateModel`: each call is a change, announced at once with the model it produced.
@Suite("Operation updates", .timeLimit(.minutes(1)), .watchdog)
struct OperationUpdateTests {
  /// An operation that updates the model once per step, telling `between` after each, then finishes.
  final class StepsReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
    let steps: Int
    let between: @Sendable (Int) -> Void
    let notify: Bool
    /// How many times `shouldNotifyObservers` was asked.
    let asked = Locked(0)

    init(steps: Int, notify: Bool = true, between: @escaping @Sendable (Int) -> Void = { _ in }) {
      self.steps = steps
      self.notify = notify
      self.between = between
    }

    override func shouldNotifyObservers(for action: CounterAction, in store: Store<Counter, CounterAction>) -> Bool {
      asked.withLock { $0 += 1 }
      return notify
    }

    override func operation(
      for action: CounterAction, in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
      ActionOperation(action: action, store: store) { [steps, between] operation, action, _ in
        guard case .increase(let amount) = action else { return operation.finish() }
        for _ in 1...steps {
          let count = operation.updateModel { model -> Int in
            model.count += amount
            return model.count
          }
          between(count)
        }
        operation.finish()
      }
    }
  }

  @Test func eachUpdateIsHeardAtOnceWithTheModelItMade() throws {
    let heardBeforeNextStep = Locked<[Int]>([])
    let heard = Locked<[Int]>([])
    let reducer = StepsReducer(steps: 3) { count in
      // The observer already heard this update when the operation goes on.
      heardBeforeNextStep.withLock { $0.append(heard.withLock { $0.last ?? -1 } == count ? 1 : 0) }
    }
    let dispatcher = Dispatcher()
    let store = Store(identifier: "steps", model: Counter(), reducer: reducer)
    try dispatcher.register(store: store)
    let token = store.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.count) } }

    try dispatchSync(dispatcher, CounterAction.increase(2)).get()

    #expect(heard.withLock { $0 } == [2, 4, 6])
    #expect(heardBeforeNextStep.withLock { $0 } == [1, 1, 1])
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func theReducerIsAskedWhetherToNotifyOncePerUpdateNotAgainAtTheEnd(mode: Dispatcher.Mode) async throws {
    let reducer = StepsReducer(steps: 3)
    let dispatcher = Dispatcher()
    let store = Store(identifier: "steps", model: Counter(), reducer: reducer)
    try dispatcher.register(store: store)
    let heard = Locked<[Int]>([])
    let token = store.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.count) } }

    try await dispatcher.dispatch(action: CounterAction.increase(1), mode: mode)

    #expect(heard.withLock { $0 } == [1, 2, 3])
    #expect(reducer.asked.withLock { $0 } == 3)
    withExtendedLifetime(token) {}
  }

  @Test func mainThreadObserversHearEachUpdateInOrder() async throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "steps", model: Counter(), reducer: StepsReducer(steps: 4))
    try dispatcher.register(store: store)
    let heard = Collector<Int>()
    let token = store.observe { change in heard.append(change.model.count) }

    try await dispatcher.dispatch(action: CounterAction.increase(1), mode: .mainThread)

    #expect(await heard.wait(for: 4) == [1, 2, 3, 4])
    withExtendedLifetime(token) {}
  }

  @Test func anUpdateThatThrowsKeepsAndAnnouncesItsChangeAndRethrowsTheTypedError() throws {
    let dispatcher = Dispatcher()
    let caught = Locked<TestFailure?>(nil)
    let store = Store(
      identifier: "throwing", model: Counter(),
      reducer: BlockReducer { operation in
        do throws(TestFailure) {
          try operation.updateModel { (model: inout Counter) throws(TestFailure) in
            model.count = 7
            throw TestFailure(reason: "after the change")
          }
        } catch {
          caught.withLock { $0 = error }
        }
        operation.finish()
      })
    try dispatcher.register(store: store)
    let heard = Locked<[Int]>([])
    let token = store.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.count) } }

    try dispatchSync(dispatcher, CounterAction.noop).get()

    #expect(caught.withLock { $0 } == TestFailure(reason: "after the change"))
    #expect(store.model.count == 7)
    #expect(heard.withLock { $0 } == [7])
    withExtendedLifetime(token) {}
  }

  @Test func updatesTheReducerKeepsQuietAreNotHeard() throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "quiet", model: Counter(), reducer: StepsReducer(steps: 2, notify: false))
    try dispatcher.register(store: store)
    let heard = Locked<[Int]>([])
    let token = store.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.count) } }

    try dispatchSync(dispatcher, CounterAction.increase(1)).get()

    #expect(heard.withLock { $0 }.isEmpty)
    #expect(store.model.count == 2)
    withExtendedLifetime(token) {}
  }

  @Test func anUnobservedStoreIsUpdatedWithoutNotifications() throws {
    let dispatcher = Dispatcher()
    let store = Store(identifier: "alone", model: Counter(), reducer: StepsReducer(steps: 5))
    try dispatcher.register(store: store)

    try dispatchSync(dispatcher, CounterAction.increase(3)).get()

    #expect(store.model.count == 15)
  }
}

/// A reducer whose operations run `block`.
final class BlockReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
  let block: @Sendable (ActionOperation<Counter, CounterAction>) -> Void

  init(_ block: @escaping @Sendable (ActionOperation<Counter, CounterAction>) -> Void) {
    self.block = block
  }

  override func operation(
    for action: CounterAction, in store: Store<Counter, CounterAction>
  ) -> ActionOperation<Counter, CounterAction> {
    ActionOperation(action: action, store: store) { [block] operation, _, _ in block(operation) }
  }
}
