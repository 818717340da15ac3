// Transactions users hold (proposal 0009): a handle per action, a cancellation per action, and an async operation
// per action, each next to the plain dispatch it adds to.
import Benchmark
import Dispatch
import DispatchStore

func registerTransactions() {
  // Next to `Dispatcher.dispatch(sync,synchronousReducer,observers:0)`.
  Benchmark("Dispatcher.start(sync,synchronousReducer,handle)") { benchmark in
    let fixture = Fixture(synchronous: true)
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      blackHole(fixture.dispatcher.start(action: TallyAction.increment, mode: .sync))
    }
    benchmark.stopMeasurement()
    fixture.verify(benchmark.scaledIterations.count)
  }

  // A handle made, queued in the serial lane behind a dispatch that holds it, and cancelled: nothing runs.
  Benchmark("Dispatcher.start(serial,cancelled)") { benchmark in
    let fixture = Fixture(synchronous: true)
    let gate = DispatchSemaphore(value: 0)
    try! fixture.dispatcher.register(store: Store(identifier: "gate", model: Tally(), reducer: GateReducer(gate)))
    fixture.dispatcher.start(action: GateAction.hold, mode: .serial)
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      fixture.dispatcher.start(action: TallyAction.increment, mode: .serial).cancel()
    }
    benchmark.stopMeasurement()
    gate.signal()
    let drained = DispatchSemaphore(value: 0)
    let token = fixture.dispatcher.start(action: GateAction.pass, mode: .serial).observe { state in
      if case .completed = state { drained.signal() }
    }
    drained.wait()
    withExtendedLifetime(token) {}
    fixture.verify(0)
  }

  // Next to `Dispatcher.dispatch(sync,observers:0)`: the operation's body is `async`, run as a task.
  Benchmark("Dispatcher.dispatch(sync,asyncOperation)") { benchmark in
    let fixture = Fixture(responding: 0)
    let store = Store(identifier: "async", model: Tally(), reducer: AsyncTallyReducer())
    try! fixture.dispatcher.register(store: store)
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      try? fixture.dispatcher.dispatchSync(action: TallyAction.increment)
    }
    benchmark.stopMeasurement()
    precondition(store.model.count == benchmark.scaledIterations.count)
  }
}

enum GateAction: ActionType {
  /// Holds the lane until the gate is signalled.
  case hold
  case pass
}

/// Finishes `.hold` once its semaphore is signalled, on another thread.
final class GateReducer: Reducer<Tally, GateAction>, @unchecked Sendable {
  let gate: DispatchSemaphore
  init(_ gate: DispatchSemaphore) { self.gate = gate }

  override func operation(for action: GateAction, in store: Store<Tally, GateAction>) -> ActionOperation<
    Tally, GateAction
  > {
    ActionOperation(action: action, store: store) { [gate] operation, action, _ in
      guard case .hold = action else { return operation.finish() }
      DispatchQueue.global().async {
        gate.wait()
        operation.finish()
      }
    }
  }
}

/// Increments in an `async` body.
final class AsyncTallyReducer: Reducer<Tally, TallyAction>, @unchecked Sendable {
  override func operation(for action: TallyAction, in store: Store<Tally, TallyAction>) -> ActionOperation<
    Tally, TallyAction
  > {
    ActionOperation(action: action, store: store) { operation in
      operation.updateModel { $0.count += 1 }
    }
  }
}
