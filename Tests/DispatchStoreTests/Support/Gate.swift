import Foundation

@testable import DispatchStore

/// Holds the operations of a ``GatedReducer`` until the test opens the gate, or their dispatch is cancelled.
final class Gate: Sendable {
  private let running = Collector<ActionOperation<Counter, CounterAction>>()
  private let held = Locked<[ActionOperation<Counter, CounterAction>]>([])
  /// How many operations were told that their dispatch was cancelled.
  let cancellations = Locked(0)

  func hold(_ operation: ActionOperation<Counter, CounterAction>) {
    held.withLock { $0.append(operation) }
    operation.onCancel { [self] in
      cancellations.withLock { $0 += 1 }
      let wasHeld = held.withLock { held in
        let index = held.firstIndex { $0 === operation }
        return index.map { held.remove(at: $0) } != nil
      }
      if wasHeld { operation.finish(throwing: CancellationError()) }
    }
    running.append(operation)
  }

  /// Suspends until `count` operations in all reached the gate.
  func waitForOperations(_ count: Int) async -> [ActionOperation<Counter, CounterAction>] {
    await running.wait(for: count)
  }

  /// Finishes every held operation, each increasing the count by its action's amount.
  func open() {
    let operations = held.withLock { held in
      defer { held = [] }
      return held
    }
    for operation in operations {
      if case .increase(let amount) = operation.action { operation.updateModel { $0.count += amount } }
      operation.finish()
    }
  }
}

/// Stops every operation at its ``Gate`` until the gate opens, or fails it with `CancellationError` when its
/// dispatch is cancelled.
///
/// Records the actions it made operations for.
final class GatedReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
  let gate: Gate
  let waits: [String]
  let asked = Locked<[CounterAction]>([])

  init(gate: Gate, waits: [String] = []) {
    self.gate = gate
    self.waits = waits
  }

  override func waitList(for action: CounterAction) -> [String] { waits }

  override func operation(
    for action: CounterAction, in store: Store<Counter, CounterAction>
  ) -> ActionOperation<Counter, CounterAction> {
    asked.withLock { $0.append(action) }
    return ActionOperation(action: action, store: store) { [gate] operation, _, _ in gate.hold(operation) }
  }
}

/// Starts `action` in `mode`, waits for `running` (the operation is under way), and cancels the dispatch; returns
/// its handle.
///
/// A `.sync` dispatch runs on a thread of its own, which it blocks until the dispatch ends, and is cancelled with
/// `cancelAll()` (its handle comes back only then); any other is cancelled through its handle.
func startThenCancel<Action: ActionType>(
  _ action: Action, mode: Dispatcher.Mode, on dispatcher: Dispatcher, once running: () async -> Void
) async -> DispatchHandle {
  guard mode == .sync else {
    let handle = dispatcher.start(action: action, mode: mode)
    await running()
    handle.cancel()
    return handle
  }
  let started = Collector<DispatchHandle>()
  Thread.detachNewThread { started.append(dispatcher.start(action: action, mode: .sync)) }
  await running()
  dispatcher.cancelAll()
  return await started.wait(for: 1)[0]
}

/// Starts `action` in `mode` and returns the box its handle lands in: a `.sync` dispatch from a thread of its own
/// (its handle comes back once its stores finished), so that the test goes on while it runs.
func startAside<Action: ActionType>(
  _ action: Action, mode: Dispatcher.Mode, on dispatcher: Dispatcher
) -> Locked<DispatchHandle?> {
  let box = Locked<DispatchHandle?>(nil)
  guard mode == .sync else {
    let handle = dispatcher.start(action: action, mode: mode)
    box.withLock { $0 = handle }
    return box
  }
  Thread.detachNewThread {
    let handle = dispatcher.start(action: action, mode: .sync)
    box.withLock { $0 = handle }
  }
  return box
}
