import Testing

@testable import DispatchStore

/// The turns of a store's synchronous notifications, as a thread delivering them blocks (a `.sync` dispatch made
/// from inside an observer): the threads waiting for their turn go on, their changes queued in their places.
@Suite("Observer turns", .watchdog)
struct ObserverTurnTests {
  typealias Lists = ObserverLists<Counter, CounterAction>

  static func change(_ count: Int) -> StoreChange<Counter, CounterAction> {
    StoreChange(model: Counter(count: count), action: .increase(count), origin: .dispatch, observers: [])
  }

  /// Entries a transform drops leave no hole: the queue pops the ones after them.
  @Test func elementsDroppedInPlaceLeaveNoHole() {
    var queue = FIFOQueue<Int>()
    for value in 1...6 { queue.append(value) }
    _ = queue.popFirst()
    queue.replaceEach { $0 % 2 == 0 ? nil : $0 * 10 }
    var popped: [Int] = []
    while let value = queue.popFirst() { popped.append(value) }
    #expect(popped == [30, 50])
    #expect(queue.isEmpty)
  }

  /// A thread waiting only for the notifications before it (an operation's finish, with no change of its own) is let
  /// go, and a change queued after it is still delivered next.
  @Test func aWaiterWithoutAChangeLetGoLeavesTheChangesAfterItDelivered() {
    let lists = Lists()
    let token = ObservationToken()
    lists.synchronous.append(ObserverEntry(token: token) { _ in })
    let deliverer = ObjectIdentifier(Lists.self)
    let (finisher, changer) = (ObjectIdentifier(Counter.self), ObjectIdentifier(Int.self))
    lists.deliveringThread = deliverer
    guard case .wait(let finishing) = lists.turnAfterCurrentDelivery(deliverer: (finisher, true)) else {
      Issue.record("the finishing thread did not wait for its turn")
      return
    }
    let waitingChange = TurnWaiter(change: Self.change(2))
    lists.pendingSynchronous.append(.waiting(waitingChange, thread: changer))
    let released = lists.delivererBlocks()
    #expect(released.count == 2 && released[0] === finishing && released[1] === waitingChange)
    // While the deliverer is blocked, another change is queued, not waited for.
    let store = makeCounterStore("turns")
    let turn = lists.changes(
      of: Counter(count: 3), by: .increase(1), store: store, mainQueue: .libraryThread, deliverer: (changer, true))
    guard case .none = turn else {
      Issue.record("a change waited for a blocked deliverer's turn")
      return
    }
    lists.delivererUnblocked()
    // The deliverer then delivers the released change, in its place, then the one queued meanwhile.
    var delivered: [Int] = []
    while case .deliver(let next) = lists.endSynchronousTurn() { delivered.append(next.model.count) }
    #expect(delivered == [2, 3])
    #expect(lists.deliveringThread == nil)
    withExtendedLifetime(token) {}
  }
}
