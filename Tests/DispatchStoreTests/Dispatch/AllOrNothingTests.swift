import Dispatch
import Foundation
import Testing

@testable import DispatchStore

/// The ids of the dispatches a ledger store applied.
struct Ledger: ModelType, Equatable {
  var applied: Set<Int> = []
}

/// Adds `id` to the stores in `stores`, by number.
///
/// The one numbered `failIn`, if any, fails instead. With `later`, an operation store changes and finishes on
/// another thread, after its start returned.
struct LedgerAction: ActionType, Equatable {
  let id: Int
  var stores: Set<Int> = [0, 1, 2, 3]
  var failIn: Int?
  var later = false
}

/// A ledger store's number from its identifier (`"s2"` is 2).
private func number(of store: Store<Ledger, LedgerAction>) -> Int { Int(store.identifier.dropFirst())! }

/// Reduces in place, given its store's number.
final class NumberedLedger: SynchronousReducer<Ledger, LedgerAction>, @unchecked Sendable {
  let number: Int
  init(number: Int) { self.number = number }

  override func reduce(_ action: LedgerAction, into model: inout Ledger) throws {
    guard action.stores.contains(number) else { return }
    if action.failIn == number { throw TestFailure(reason: "s\(number) failed \(action.id)") }
    model.applied.insert(action.id)
  }
}

/// Changes the model through an operation: within its start, or later on another thread.
final class OperationLedger: Reducer<Ledger, LedgerAction>, @unchecked Sendable {
  override func operation(for action: LedgerAction, in store: Store<Ledger, LedgerAction>) -> ActionOperation<
    Ledger, LedgerAction
  > {
    ActionOperation(action: action, store: store) { operation, action, store in
      let work: @Sendable () -> Void = {
        let me = number(of: store)
        guard action.stores.contains(me) else { return operation.finish() }
        if action.failIn == me { return operation.finish(throwing: TestFailure(reason: "s\(me) failed \(action.id)")) }
        operation.updateModel { $0.applied.insert(action.id) }
        operation.finish()
      }
      if action.later { DispatchQueue.global().async(execute: work) } else { work() }
    }
  }
}

/// Four ledger stores: `s0` and `s1` reduce in place, `s2` and `s3` through operations.
struct LedgerApp {
  let dispatcher = Dispatcher()
  let stores: [Store<Ledger, LedgerAction>]

  init() {
    stores = (0..<4).map { number in
      Store(
        identifier: "s\(number)", model: Ledger(),
        reducer: number < 2 ? NumberedLedger(number: number) : OperationLedger())
    }
    for store in stores { try! dispatcher.register(store: store) }
  }

  var applied: [Set<Int>] { stores.map(\.model.applied) }
}

@Suite("All-or-nothing dispatches", .timeLimit(.minutes(3)))
struct AllOrNothingTests {
  static var allOrNothing: DispatchOptions {
    var options = DispatchOptions()
    options.allOrNothing = true
    return options
  }

  @Test(arguments: Dispatcher.Mode.allCases, [false, true])
  func aFailingStorePutsBackEveryStoreTheDispatchChanged(mode: Dispatcher.Mode, later: Bool) async throws {
    let app = LedgerApp()
    let heard = Locked<[(String, Bool)]>([])
    let tokens = app.stores.map { store in
      store.observe(synchronously: true) { change in heard.withLock { $0.append((store.identifier, change.isRestore)) }
      }
    }
    try await app.dispatcher.start(action: LedgerAction(id: 1, later: later), mode: mode).value
    let failing = app.dispatcher.start(
      action: LedgerAction(id: 2, failIn: 2, later: later), mode: mode, options: Self.allOrNothing)
    let result = await failing.result
    guard case .failure(.rolledBack(let restored, let failures)) = result else {
      Issue.record("expected rolledBack, got \(result)")
      return
    }
    // s2 failed before changing; the others changed and were put back.
    #expect(restored == ["s0", "s1", "s3"])
    #expect(failures.map(\.storeIdentifier) == ["s2"])
    #expect(app.applied == Array(repeating: [1], count: 4))
    // Each changed store's observers heard the first dispatch, this one's change, then the restore; the failed
    // store's, only the first dispatch.
    let events = heard.withLock { $0 }
    for store in ["s0", "s1", "s3"] {
      #expect(events.filter { $0.0 == store }.map(\.1) == [false, false, true], "\(store): \(events)")
    }
    #expect(events.filter { $0.0 == "s2" }.map(\.1) == [false])
    // A dispatch that succeeds keeps its changes.
    try await app.dispatcher.start(action: LedgerAction(id: 3, later: later), mode: mode, options: Self.allOrNothing)
      .value
    #expect(app.applied == Array(repeating: [1, 3], count: 4))
    withExtendedLifetime(tokens) {}
  }

  /// A plain dispatch to a store that an all-or-nothing dispatch holds waits for it to end, so that putting the
  /// store back overwrites nothing it made.
  @Test(arguments: Dispatcher.Mode.allCases)
  func aDispatchToAHeldStoreWaitsAndIsNotOverwritten(mode: Dispatcher.Mode) async throws {
    let gate = Gate()
    let dispatcher = Dispatcher()
    let plain = Store(identifier: "a", model: Counter(), reducer: CounterSynchronousReducer())
    let held = Store(identifier: "b", model: Counter(), reducer: GatedReducer(gate: gate))
    try dispatcher.register(store: plain)
    try dispatcher.register(store: held)
    // Both stores handle it; "b" holds its operation until the gate opens.
    let holding = dispatcher.start(action: CounterAction.increase(1), mode: .async, options: Self.allOrNothing)
    let operations = await gate.waitForOperations(1)
    #expect(plain.model.count == 1)
    // From a thread of its own: a `.sync` dispatch blocks its thread until "a" is released.
    let finished = Collector<Result<Void, DispatchError>>()
    let dispatching = Collector<Bool>()
    Thread {
      dispatching.append(true)
      dispatcher.dispatch(action: CounterAction.increase(10), to: "a", mode: mode) { finished.append($0) }
    }.start()
    _ = await dispatching.wait(for: 1)
    // It cannot run while "a" is held.
    #expect(finished.values.isEmpty)
    #expect(plain.model.count == 1)
    operations[0].finish(throwing: TestFailure(reason: "b failed"))
    let result = await holding.result
    guard case .failure(.rolledBack(let restored, _)) = result else {
      Issue.record("expected rolledBack, got \(result)")
      return
    }
    #expect(restored == ["a"])
    #expect(await finished.wait(for: 1).first?.isSuccess == true)
    #expect(plain.model.count == 10)
    #expect(held.model.count == 0)
  }

  /// Eight threads dispatch plain and all-or-nothing actions to overlapping stores, one in five all-or-nothing ones
  /// failing: every store ends with exactly the dispatches that succeeded, and every plain one.
  @Test(.serialized, arguments: Dispatcher.Mode.allCases)
  func eightThreadsKeepExactlyTheSucceededDispatches(mode: Dispatcher.Mode) async throws {
    let app = LedgerApp()
    let steps = isSanitized ? 60 : 300
    let outcomes = Locked<[Int: (stores: Set<Int>, succeeded: Bool)]>([:])
    await onThreads(8) { thread in
      var seed = UInt64(thread + 1) &* 0x9E37_79B9_7F4A_7C15
      func next() -> Int {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int(truncatingIfNeeded: seed >> 33)
      }
      let done = DispatchGroup()
      for step in 0..<steps {
        let id = thread * 100_000 + step
        let later = next() % 2 == 0
        if next() % 2 == 0 {
          // A plain dispatch to one store; it never fails.
          let store = next() % 4
          let action = LedgerAction(id: id, stores: [store], later: later)
          done.enter()
          app.dispatcher.dispatch(action: action, to: "s\(store)", mode: mode) { result in
            outcomes.withLock { $0[id] = ([store], result.isSuccess) }
            done.leave()
          }
        } else {
          var chosen = Set((0..<4).filter { _ in next() % 2 == 0 })
          if chosen.isEmpty { chosen = [next() % 4] }
          let stores = chosen
          let fails = next() % 5 == 0 ? stores.randomElement() : nil
          let action = LedgerAction(id: id, stores: stores, failIn: fails, later: later)
          let handle = app.dispatcher.start(action: action, mode: mode, options: Self.allOrNothing)
          done.enter()
          handle.whenFinished { result in
            outcomes.withLock { $0[id] = (stores, result.isSuccess) }
            done.leave()
          }
        }
      }
      done.wait()
    }
    let all = outcomes.withLock { $0 }
    #expect(all.count == 8 * steps)
    #expect(all.values.contains { !$0.succeeded })
    for (number, store) in app.stores.enumerated() {
      let expected = Set(all.filter { $0.value.succeeded && $0.value.stores.contains(number) }.keys)
      let applied = store.model.applied
      #expect(
        applied == expected,
        "s\(number): \(applied.subtracting(expected).count) extra, \(expected.subtracting(applied).count) missing")
    }
  }
}
