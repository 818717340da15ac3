import Testing

@testable import DispatchStore

/// The handle's state machine alone: transitions, what each party is told, and in which order.
@Suite("Handle state machine", .watchdog)
struct HandleStateMachineTests {
  /// An operation of a store `store` whose block does nothing, not started.
  static func idleOperation(_ store: String) -> ActionOperation<Counter, CounterAction> {
    ActionOperation(action: CounterAction.noop, store: makeCounterStore(store)) { _, _, _ in }
  }

  /// Drains the notification queue as the delivering thread would, recording what each observer heard.
  func deliver(_ machine: inout HandleStateMachine) -> [String] {
    var heard: [String] = []
    while let (state, observers, _) = machine.nextNotification() {
      for _ in observers { heard.append(state.description) }
    }
    return heard
  }

  @Test func startedThenFinishedTellsObserversInOrder() {
    var machine = HandleStateMachine()
    _ = machine.observerAdded { _ in }

    let started = machine.started()
    let finished = machine.finished(.success(()))
    let heard = deliver(&machine)

    #expect(started.run)
    #expect(finished.finished)
    #expect(heard == ["pending", "started", "completed"])
  }

  @Test func aCancelledHandleDoesNotStartAndIgnoresItsLateResult() {
    var machine = HandleStateMachine()

    let cancelled = machine.cancelled()
    let start = machine.started()
    let late = machine.finished(.success(()))

    #expect(cancelled.finished)
    #expect(!start.run)
    #expect(!late.finished)
    #expect(machine.state.description == "cancelled")
  }

  @Test func cancellingTellsTheRunningOperationsOnce() {
    var machine = HandleStateMachine()
    _ = machine.started()
    let operation = Self.idleOperation("s")
    let tracked = machine.operationRunning(operation, starting: false)

    let first = machine.cancelled()
    let second = machine.cancelled()
    // An operation still starting when the dispatch was cancelled is told by its caller.
    let trackedAfter = machine.operationRunning(operation, starting: false)

    #expect(tracked)
    #expect(first.cancel.count == 1)
    #expect(second.cancel.isEmpty)
    #expect(!trackedAfter)
  }

  @Test func finishingLetsTheRunningOperationsGo() {
    var machine = HandleStateMachine()
    _ = machine.started()
    let operation = Self.idleOperation("s")
    _ = machine.operationRunning(operation, starting: false)

    _ = machine.finished(.failure(.cancelled))
    let cancelled = machine.cancelled()

    #expect(cancelled.cancel.isEmpty)
  }

  /// The machine holds a running operation weakly: one its reducer let go of without finishing is freed (and fails
  /// its dispatch), instead of being kept alive by the handle until the dispatch ends, which it then never does
  /// (helper-61).
  @Test func aRunningOperationIsHeldWeakly() {
    var machine = HandleStateMachine()
    _ = machine.started()
    weak var released: ActionOperation<Counter, CounterAction>?
    do {
      let operation = Self.idleOperation("s")
      released = operation
      let tracked = machine.operationRunning(operation, starting: false)
      #expect(tracked)
    }
    #expect(released == nil)
    let cancelled = machine.cancelled()
    #expect(cancelled.cancel.isEmpty)
  }

  /// An operation is held while its start runs, so that a cancellation then reaches it; once its start returned, it
  /// is let go of if it finished there, and held weakly if not.
  @Test func anOperationIsHeldWhileItStartsThenLetGoOfOrHeldWeakly() {
    var machine = HandleStateMachine()
    _ = machine.started()
    weak var finishing: ActionOperation<Counter, CounterAction>?
    weak var continuing: ActionOperation<Counter, CounterAction>?
    do {
      let first = Self.idleOperation("a")
      let second = Self.idleOperation("b")
      (finishing, continuing) = (first, second)
      _ = machine.operationRunning(first, starting: true)
      _ = machine.operationRunning(second, starting: true)
    }
    #expect(finishing != nil && continuing != nil)
    if let operation = finishing { machine.operationStarted(operation, finished: true) }
    if let operation = continuing { machine.operationStarted(operation, finished: false) }
    #expect(finishing == nil && continuing == nil)
    let cancelled = machine.cancelled()
    #expect(cancelled.cancel.isEmpty)
  }

  /// A cancellation while operations start tells them, the one not noted last too (helper-63).
  ///
  /// The end of a start after it finds nothing to let go of.
  @Test func aCancellationWhileOperationsStartTellsThem() {
    var machine = HandleStateMachine()
    _ = machine.started()
    let first = Self.idleOperation("a")
    let second = Self.idleOperation("b")
    _ = machine.operationRunning(first, starting: true)
    _ = machine.operationRunning(second, starting: true)
    // The first one's start returns first, unfinished: it is not the last noted.
    machine.operationStarted(first, finished: false)
    let cancelled = machine.cancelled()
    #expect(Set(cancelled.cancel.map { ObjectIdentifier($0) }) == [ObjectIdentifier(first), ObjectIdentifier(second)])
    machine.operationStarted(second, finished: true)
    let again = machine.cancelled()
    #expect(again.cancel.isEmpty)
  }

  /// Of two operations starting at once, the first one's start finishing lets go of it alone.
  @Test func anOperationThatIsNotTheLastNotedIsLetGoOfAlone() {
    var machine = HandleStateMachine()
    _ = machine.started()
    weak var finishing: ActionOperation<Counter, CounterAction>?
    let second = Self.idleOperation("b")
    do {
      let first = Self.idleOperation("a")
      finishing = first
      _ = machine.operationRunning(first, starting: true)
      _ = machine.operationRunning(second, starting: true)
      machine.operationStarted(first, finished: true)
    }
    #expect(finishing == nil)
    let cancelled = machine.cancelled()
    #expect(cancelled.cancel.map { ObjectIdentifier($0) } == [ObjectIdentifier(second)])
  }

  /// What a final state lets go of (the dispatches it waited for, its observers) goes to the caller, which releases
  /// it after the handle's lock: a handle's action and observers are the app's, and their deinit may use the handle.
  @Test func aFinalStateHandsWhatItLetsGoOfToTheCaller() {
    var machine = HandleStateMachine()
    let dependency = Dispatcher().prepare(action: CounterAction.noop)
    let added = machine.dependencyAdded(dependency)
    #expect(added)
    _ = machine.observerAdded { _ in }
    _ = machine.submitted()
    _ = machine.started()
    let finished = machine.finished(.success(()))
    #expect(finished.released?.map(ObjectIdentifier.init) == [ObjectIdentifier(dependency)])
    #expect(machine.dependencies.isEmpty)
    var released = 0
    while let (_, _, letGo) = machine.nextNotification() { released += letGo?.count ?? 0 }
    #expect(released == 1)
  }

  /// An observer added after some transitions hears the current state, then only later ones, never an earlier
  /// state still queued for the observers before it.
  @Test func aLateObserverHearsTheCurrentStateThenLaterOnes() {
    var machine = HandleStateMachine()
    let early = Locked<[String]>([])
    let late = Locked<[String]>([])
    _ = machine.observerAdded { state in early.withLock { $0.append(state.description) } }
    _ = machine.started()
    let lateID = machine.observerAdded { state in late.withLock { $0.append(state.description) } }.id
    _ = machine.finished(.success(()))

    while let (state, observers, _) = machine.nextNotification() {
      for observer in observers { observer(state) }
    }

    #expect(early.withLock { $0 } == ["pending", "started", "completed"])
    #expect(late.withLock { $0 } == ["started", "completed"])
    let removed = machine.observerRemoved(lateID)
    #expect(removed == nil)  // Dropped once the final state was delivered.
  }
}
