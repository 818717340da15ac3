import Dispatch
import Foundation
import Testing

@testable import DispatchStore

/// The ids of the dispatches a ledger store applied.
struct Ledger: ModelType, Equatable, Codable {
  var applied: Set<Int> = []

  init() {}

  // Sorted, so that equal ledgers encode alike: verify then compares the bytes, not decoded sets.
  init(from decoder: any Decoder) throws {
    applied = Set(try decoder.singleValueContainer().decode([Int].self))
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(applied.sorted())
  }
}

/// Adds `id` to the stores in `stores`, by number.
///
/// The one numbered `failIn`, if any, fails instead. With `later`, an operation store changes and finishes on
/// another thread, after its start returned.
struct LedgerAction: ActionType, Equatable, Codable {
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

/// Store "a" reduces in place; store "b"'s operations wait at `gate` until the test finishes them.
struct HeldStores {
  let gate = Gate()
  let dispatcher: Dispatcher
  let plain = Store(identifier: "a", model: Counter(), reducer: CounterSynchronousReducer())
  let held: Store<Counter, CounterAction>

  init(mainQueue: MainQueue = .default) throws {
    dispatcher = Dispatcher(mainQueue: mainQueue)
    held = Store(identifier: "b", model: Counter(), reducer: GatedReducer(gate: gate))
    try dispatcher.register(store: plain)
    try dispatcher.register(store: held)
  }

  /// Starts an all-or-nothing dispatch of `.increase(amount)` to both stores in `mode`, and waits until "b"'s
  /// operation runs: "a" is held until the test finishes that operation.
  func hold(
    _ amount: Int, mode: Dispatcher.Mode
  ) async -> (handle: DispatchHandle, operation: ActionOperation<Counter, CounterAction>) {
    let handle = dispatcher.start(
      action: CounterAction.increase(amount), mode: mode, options: DispatchOptions(allOrNothing: true))
    return (handle, await gate.waitForOperations(1)[0])
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

@Suite("All-or-nothing dispatches", .timeLimit(.minutes(3)), .watchdog)
struct AllOrNothingTests {
  /// Cancelled while one store's operation runs, an all-or-nothing dispatch puts back what that operation changed
  /// after the cancellation and the store before it changed, and the store after it does not start. (A review found
  /// the skipped store counted as a success: no rollback, and the handle said cancelled with two stores changed.)
  @Test(arguments: Dispatcher.Mode.allCases)
  func aDispatchCancelledWhileAnOperationRunsPutsBackEveryStoreItChanged(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher(mainQueue: .runLoopThread(MainRunLoopThread(name: "cancel", idlePolling: .zero)))
    let gate = AsyncGate()
    let first = Store(identifier: "first", model: Counter()) { (_: CounterAction, model) in model.count += 1 }
    let slow = Store(identifier: "slow", model: Counter(), waitFor: ["first"]) { (_: CounterAction, operation) in
      await gate.wait()  // Goes on after the cancellation.
      operation.updateModel { $0.count += 1 }
    }
    let last = Store(identifier: "last", model: Counter(), waitFor: ["slow"]) { (_: CounterAction, model) in
      model.count += 1
    }
    for store in [first, slow, last] { try dispatcher.register(store: store) }
    let handle = Locked<DispatchHandle?>(nil)
    let start = { @Sendable in
      handle.withLock {
        $0 = dispatcher.start(
          action: CounterAction.increase(1), mode: mode, options: DispatchOptions(allOrNothing: true))
      }
    }
    // A `.sync` start returns once the dispatch ended: from a thread of its own.
    if mode == .sync { Thread(block: start).start() } else { start() }
    while gate.waiting == 0 { await Task.yield() }
    #expect(first.model.count == 1)
    dispatcher.cancelAll()
    gate.open()

    #expect(await dispatcher.drain())
    #expect([first.model.count, slow.model.count, last.model.count] == [Int](repeating: 0, count: 3))
    let state = handle.withLock { $0 }?.currentState
    #expect(state.map { if case .cancelled = $0 { true } else { false } } == true)
  }

  static let allOrNothing = DispatchOptions(allOrNothing: true)

  static let codecs: SessionCodecs = {
    var codecs = SessionCodecs()
    for number in 0..<4 {
      codecs.register(storeIdentifier: "s\(number)", model: Ledger.self, action: LedgerAction.self)
    }
    return codecs
  }()

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

  /// A rollback is recorded: its records put the stores back, undo and redo step over it whole, and the saved
  /// session verifies (which fails if verify does not put the stores back: the next dispatch's models differ) and
  /// restores.
  @Test(arguments: Dispatcher.Mode.allCases, [false, true])
  func aRollbackIsRecordedAndTheSessionVerifiesUndoesAndRestores(mode: Dispatcher.Mode, later: Bool) async throws {
    let app = LedgerApp()
    let recorder = RecorderMiddleware()
    app.dispatcher.register(middleware: recorder)
    try await app.dispatcher.start(action: LedgerAction(id: 1, later: later), mode: mode).value
    let failed = await app.dispatcher.start(
      action: LedgerAction(id: 2, failIn: 2, later: later), mode: mode, options: Self.allOrNothing
    ).result
    #expect(failed.isSuccess == false)
    try await app.dispatcher.start(action: LedgerAction(id: 3, later: later), mode: mode, options: Self.allOrNothing)
      .value
    let records = recorder.records
    let rollbacks = records.filter(\.isRollback)
    #expect(rollbacks.map(\.storeIdentifier).sorted() == ["s0", "s1", "s3"])
    #expect(rollbacks.allSatisfy { ($0.model as? Ledger)?.applied == [1] && $0.description.hasSuffix("(rolled back)") })
    // The failed dispatch's records: each store's change (s2's failure), then the rollbacks, all of one dispatch.
    let second = records.filter { ($0.transaction.action as? LedgerAction)?.id == 2 }
    #expect(Set(second.map(\.transaction.dispatchID)).count == 1)
    #expect(second.suffix(3).allSatisfy { $0.isRollback })

    let file = TemporaryFile()
    try recorder.save(to: file.url, codecs: Self.codecs)
    #expect(file.lines.filter { $0.contains(#""b":true"#) }.count == 3)
    let session = try Session.load(from: file.url, codecs: Self.codecs)
    let verified = LedgerApp()
    try session.verify(against: verified.dispatcher, mode: mode)
    #expect(verified.applied == Array(repeating: [1, 3], count: 4))
    let restored = LedgerApp()
    try session.restore(into: restored.dispatcher)
    #expect(restored.applied == Array(repeating: [1, 3], count: 4))

    // Undo: the third dispatch, then the rolled-back one (which shows the same models), then the first.
    try recorder.undo()
    #expect(app.applied == Array(repeating: [1], count: 4))
    try recorder.undo()
    #expect(app.applied == Array(repeating: [1], count: 4))
    try recorder.undo()
    #expect(app.applied == Array(repeating: [], count: 4))
    try recorder.redo()
    try recorder.redo()
    #expect(app.applied == Array(repeating: [1], count: 4))
    try recorder.redo()
    #expect(app.applied == Array(repeating: [1, 3], count: 4))
  }

  /// Undo, redo, jump, resume and restores refuse a store an all-or-nothing dispatch holds, changing nothing, and
  /// work once it ended.
  @Test func movesAndRestoresRefuseAHeldStore() async throws {
    let app = try HeldStores()
    let (dispatcher, plain) = (app.dispatcher, app.plain)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "a", model: Counter.self, action: CounterAction.self)
    codecs.register(storeIdentifier: "b", model: Counter.self, action: CounterAction.self)
    dispatcher.dispatch(action: CounterAction.increase(1), to: "a", mode: .sync) { _ in }
    let file = TemporaryFile()
    try recorder.save(to: file.url, codecs: codecs)
    let session = try Session.load(from: file.url, codecs: codecs)

    let (holding, operation) = await app.hold(2, mode: .async)
    #expect(plain.model.count == 3)
    let before = recorder.records.count
    let busy = SessionError.storeBusy(storeIdentifier: "a")
    #expect(throws: busy) { try recorder.undo() }
    #expect(throws: busy) { try recorder.jump(to: -1) }
    #expect(throws: busy) { try session.restore(into: dispatcher) }
    #expect(throws: busy) { try RecorderMiddleware().resume(session, in: dispatcher) }
    #expect(plain.model.count == 3)
    #expect(recorder.records.count == before)

    operation.finish()
    try await holding.value
    try recorder.undo()
    #expect(plain.model.count == 1)
    try recorder.redo()
    #expect(plain.model.count == 3)
    try session.restore(into: dispatcher)
    #expect(plain.model.count == 1)
  }

  /// A `.sync` dispatch on the main thread to a store a `.mainThread` all-or-nothing dispatch holds fails at once:
  /// waiting would block the thread that dispatch needs to end.
  @Test func aSyncDispatchOnTheMainThreadBehindAMainThreadHolderFailsAtOnce() async throws {
    let app = try HeldStores(mainQueue: .libraryThread)
    let (dispatcher, plain) = (app.dispatcher, app.plain)
    let (holding, operation) = await app.hold(1, mode: .mainThread)
    let results = Collector<Result<Void, DispatchError>>()
    MainQueue.libraryThread.schedule {
      dispatcher.dispatch(action: CounterAction.increase(10), to: "a", mode: .sync) { results.append($0) }
    }
    let result = try #require(await results.wait(for: 1).first)
    guard case .failure(.operationsFailed(let failures)) = result,
      case .reentrantSynchronousDispatch = failures.first?.error as? DispatchError
    else {
      Issue.record("expected a re-entrant failure, got \(result)")
      return
    }
    #expect(plain.model.count == 1)
    // The holder was not disturbed: it ends, and the store is free again.
    operation.finish()
    try await holding.value
    dispatcher.dispatch(action: CounterAction.increase(10), to: "a", mode: .sync) { _ in }
    #expect(plain.model.count == 11)
  }

  /// An operation of an all-or-nothing dispatch that awaits a dispatch to its own store, in any mode, finishes: the
  /// dispatch runs inside it, and is put back with it if it fails.
  ///
  /// Also when an interceptor decides about each dispatch later, on another thread.
  @Test(arguments: Dispatcher.Mode.allCases, [(false, false), (true, false), (false, true), (true, true)])
  func anOperationAwaitingAFollowUpToItsOwnStoreFinishes(
    mode: Dispatcher.Mode, outcome: (fails: Bool, intercepted: Bool)
  )
    async throws
  {
    let (fails, intercepted) = outcome
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    let store = Store(identifier: "f", model: Ledger(), reducer: FollowUpLedger())
    try dispatcher.register(store: store)
    if intercepted { dispatcher.register(interceptor: DecidesLater()) }
    let outer = dispatcher.start(
      action: FollowUpAction.outer(mode: mode, fails: fails), mode: .async, options: Self.allOrNothing)
    guard let result = await firstValue(within: .seconds(90), { outer.whenFinished($0) }) else {
      Issue.record("the dispatch did not finish within 90 s")
      return
    }
    if fails {
      guard case .failure(.rolledBack(let restored, _)) = result else {
        Issue.record("expected rolledBack, got \(result)")
        return
      }
      #expect(restored == ["f"])
      #expect(store.model.applied == [])
    } else {
      #expect(result.isSuccess)
      #expect(store.model.applied == [1, 2])
    }
  }

  /// A follow-up that an all-or-nothing dispatch's operation awaits passes its stores on a route decided later too.
  ///
  /// In any mode: debounced (it runs on the clock's thread), started after a dependency that ends on another thread,
  /// or made by an operation whose start waited at a store another all-or-nothing dispatch held (it resumes on another
  /// thread). Before, each parked behind the dispatch that awaited it, for ever.
  @Test(arguments: Dispatcher.Mode.allCases, LaterRoute.allCases)
  func aFollowUpOnARouteDecidedLaterPassesTheHoldersStores(mode: Dispatcher.Mode, route: LaterRoute) async throws {
    let app = try LaterRouteApp(mode: mode)
    if route == .parkedResume {
      // "p" is held by an all-or-nothing dispatch of its own until the test opens `app.holding`.
      _ = app.dispatcher.start(action: LaterRouteAction.hold, to: "p", mode: .async, options: Self.allOrNothing)
      guard await awaited({ await app.reached.wait(for: 1) }) != nil else {
        Issue.record("the dispatch holding \"p\" did not start within 60 s")
        return
      }
    }
    let outer = app.dispatcher.start(
      action: LaterRouteAction.outer(route), to: "f", mode: .async, options: Self.allOrNothing)
    switch route {
    case .debounced:
      break
    case .afterDependency:
      // The dependency, held at "b", ends on this thread, which is inside no dispatch.
      guard await awaited({ await app.reached.wait(for: 1) }) != nil else {
        Issue.record("the follow-up was not started within 60 s")
        return
      }
      // The dependency's own dispatch may reach "b" after the follow-up started: the gate opens only what it holds.
      guard await awaited({ await app.gate.waitForOperations(1) }) != nil else {
        Issue.record("the dependency did not reach \"b\" within 60 s")
        return
      }
      app.gate.open()
    case .parkedResume:
      // `middle` waits at "p"; it resumes on another thread once the dispatch holding "p" ends.
      guard await eventually({ app.parked.state.withLock({ $0.gate?.parked.count ?? 0 }) > 0 }) else {
        Issue.record("middle did not reach \"p\" within 60 s")
        return
      }
      app.holding.open()
    }
    guard let result = await firstValue(within: .seconds(90), { outer.whenFinished($0) }) else {
      Issue.record("the all-or-nothing dispatch did not finish within 90 s: its follow-up waited for it")
      return
    }
    #expect(result.isSuccess)
    #expect(app.followed.model.applied == [1, 2])
  }

  /// The model a rollback replaces is released after the store's lock: a class inside it may read the store in its
  /// `deinit`. (Before, the read waited for the lock held by the rollback that released it, for ever.)
  @Test func aModelReplacedByARollbackIsReleasedOutsideTheStoresLock() async throws {
    let dispatcher = Dispatcher()
    let box = Locked<Store<ProbedModel, ProbeAction>?>(nil)
    let read = Collector<Int>()
    let probed = Store(identifier: "r", model: ProbedModel()) { (_: ProbeAction, model: inout ProbedModel) in
      model.generation += 1
      model.probe = ReleaseProbe {
        if let store = box.withLock({ $0 }) { read.append(store.model.generation) }
      }
    }
    box.withLock { $0 = probed }
    try dispatcher.register(store: probed)
    try dispatcher.register(
      store: Store(identifier: "z", model: ProbedModel()) { (_: ProbeAction, _: inout ProbedModel) in
        throw TestFailure(reason: "z failed")
      })
    let handle = dispatcher.start(action: ProbeAction(), mode: .async, options: Self.allOrNothing)
    guard let result = await firstValue(within: .seconds(90), { handle.whenFinished($0) }) else {
      Issue.record("the rollback did not end within 90 s: the released model's deinit waited for the store's lock")
      return
    }
    guard case .failure(.rolledBack(let restored, _)) = result else {
      Issue.record("expected rolledBack, got \(result)")
      return
    }
    #expect(restored.contains("r"))
    // The deinit read the model put back.
    #expect(await read.wait(for: 1) == [0])
    box.withLock { $0 = nil }
  }

  /// An operation that awaits an all-or-nothing dispatch to its own store, in any mode, gets its result.
  ///
  /// The dispatch does not wait for the operation it was made in. If it fails, the store is put back to where the
  /// operation had brought it. Before, the dispatch waited for the operation to finish, which awaited it, for ever.
  @Test(arguments: Dispatcher.Mode.allCases, [false, true])
  func anOperationAwaitingAnAllOrNothingDispatchToItsOwnStoreGetsItsResult(
    mode: Dispatcher.Mode, fails: Bool
  ) async throws {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    let heard = Collector<Result<Void, DispatchError>>()
    let own = Store(identifier: "c", model: Ledger()) { (action: AwaitingAction, operation) in
      switch action {
      case .outer:
        operation.updateModel { $0.applied.insert(1) }
        let handle = operation.dispatcher?.start(
          action: AwaitingAction.inner, mode: mode, options: DispatchOptions(allOrNothing: true))
        if let handle { heard.append(await handle.result) }
      case .inner:
        operation.updateModel { $0.applied.insert(2) }
      }
    }
    let other = Store(identifier: "d", model: Ledger()) { (action: AwaitingAction, model: inout Ledger) in
      guard case .inner = action else { return }
      if fails { throw TestFailure(reason: "d failed") }
      model.applied.insert(2)
    }
    try dispatcher.register(store: own)
    try dispatcher.register(store: other)
    let outer = dispatcher.start(action: AwaitingAction.outer, to: "c")
    guard let result = await firstValue(within: .seconds(90), { outer.whenFinished($0) }) else {
      Issue.record("the operation did not finish within 90 s: the dispatch it awaited waited for it")
      return
    }
    #expect(result.isSuccess)
    let inner = heard.values.first
    if fails {
      guard case .failure(.rolledBack(let restored, _)) = inner else {
        Issue.record("expected rolledBack, got \(String(describing: inner))")
        return
      }
      #expect(restored.contains("c"))
      #expect(own.model.applied == [1])
      #expect(other.model.applied == [])
    } else {
      #expect(inner?.isSuccess == true)
      #expect(own.model.applied == [1, 2])
      #expect(other.model.applied == [2])
    }
  }

  /// A holder whose operation awaits a follow-up on a lane gets its result while that lane's job in flight is parked
  /// at the holder's store: the follow-up, part of the holder, runs beside the lane, not behind the parked job.
  ///
  /// Both orders: the job parks before the follow-up is made, or the follow-up is queued behind the job while an
  /// earlier job of the lane still runs (an operation waiting at a gate: no thread is blocked), and the job parks
  /// once that one finished. Before, the follow-up waited behind the job, the job for the holder, and the holder for
  /// the follow-up, for ever.
  @Test(arguments: [Dispatcher.Mode.serial, .mainThread], [true, false])
  func aHoldersFollowUpOnALaneRunsBesideTheLanesJobParkedBehindIt(mode: Dispatcher.Mode, parksFirst: Bool)
    async throws
  {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    let holding = AsyncGate()
    let release = AsyncGate()
    let followUpQueued = AsyncGate()
    let earlierRunning = AsyncGate()
    let earlierMayFinish = AsyncGate()
    let followUps = Collector<Result<Void, DispatchError>>()
    let held = Store(identifier: "held", model: Ledger()) { (action: LaneAction, operation) in
      switch action {
      case .hold:
        holding.open()
        await release.wait()
        let followUp = operation.dispatcher?.start(action: FollowAction(), mode: mode)
        followUpQueued.open()
        if let followUp { followUps.append(await followUp.result) }
        operation.updateModel { $0.applied.insert(1) }
      case .touch:
        operation.updateModel { $0.applied.insert(2) }
      case .earlier:
        break
      }
    }
    let other = Store(identifier: "other", model: Ledger()) { (_: FollowAction, model: inout Ledger) in
      model.applied.insert(3)
    }
    let earlier = Store(identifier: "earlier", model: Ledger()) { (action: LaneAction, operation) in
      guard case .earlier = action else { return }
      earlierRunning.open()
      await earlierMayFinish.wait()
    }
    try dispatcher.register(store: held)
    try dispatcher.register(store: other)
    try dispatcher.register(store: earlier)
    let holder = dispatcher.start(action: LaneAction.hold, to: "held", options: DispatchOptions(allOrNothing: true))
    await holding.wait()
    let lane = mode == .serial ? dispatcher.serialLane : dispatcher.mainLane
    let job: DispatchHandle
    if parksFirst {
      job = dispatcher.start(action: LaneAction.touch, to: "held", mode: mode)
      #expect(await eventually { lane.isParked }, "the lane's job did not park at the held store")
      release.open()
    } else {
      // The lane runs an earlier job until the follow-up is queued behind the one that will park.
      let running = dispatcher.start(action: LaneAction.earlier, to: "earlier", mode: mode)
      await earlierRunning.wait()
      job = dispatcher.start(action: LaneAction.touch, to: "held", mode: mode)
      release.open()
      await followUpQueued.wait()
      earlierMayFinish.open()
      #expect(await firstValue(within: .seconds(90), { running.whenFinished($0) })?.isSuccess == true)
    }
    guard let result = await firstValue(within: .seconds(90), { holder.whenFinished($0) }) else {
      Issue.record("the holder did not finish within 90 s: its follow-up waited behind the lane's parked job")
      return
    }
    #expect(result.isSuccess)
    #expect(followUps.values.count == 1 && followUps.values.first?.isSuccess == true)
    #expect(await firstValue(within: .seconds(90), { job.whenFinished($0) })?.isSuccess == true)
    #expect(held.model.applied == [1, 2])
    #expect(other.model.applied == [3])
  }

  /// A holder's follow-ups that run beside the lane keep their order among themselves: the second starts once the
  /// first finished, as in the lane.
  @Test(arguments: [Dispatcher.Mode.serial, .mainThread])
  func aHoldersFollowUpsBesideTheLaneKeepTheirOrder(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    let holding = AsyncGate()
    let release = AsyncGate()
    let firstMayFinish = AsyncGate()
    let log = Collector<String>()
    let held = Store(identifier: "held", model: Ledger()) { (action: LaneAction, operation) in
      switch action {
      case .hold:
        holding.open()
        await release.wait()
        // Neither awaited before the other is made.
        let first = operation.dispatcher?.start(action: StepAction.first, mode: mode)
        let second = operation.dispatcher?.start(action: StepAction.second, mode: mode)
        _ = await first?.result
        _ = await second?.result
      case .touch, .earlier:
        break
      }
    }
    let steps = Store(identifier: "steps", model: Ledger()) { (action: StepAction, _) in
      switch action {
      case .first:
        log.append("first started")
        await firstMayFinish.wait()
        log.append("first finished")
      case .second:
        log.append("second")
      }
    }
    try dispatcher.register(store: held)
    try dispatcher.register(store: steps)
    let holder = dispatcher.start(action: LaneAction.hold, to: "held", options: DispatchOptions(allOrNothing: true))
    await holding.wait()
    let lane = mode == .serial ? dispatcher.serialLane : dispatcher.mainLane
    let job = dispatcher.start(action: LaneAction.touch, to: "held", mode: mode)
    #expect(await eventually { lane.isParked }, "the lane's job did not park at the held store")
    release.open()
    #expect(await eventually { log.values.contains("first started") }, "the first follow-up did not start")
    firstMayFinish.open()
    guard await firstValue(within: .seconds(90), { holder.whenFinished($0) }) != nil else {
      Issue.record("the holder did not finish within 90 s")
      return
    }
    #expect(log.values == ["first started", "first finished", "second"])
    #expect(await firstValue(within: .seconds(90), { job.whenFinished($0) })?.isSuccess == true)
  }

  /// Two holders whose operations each await an all-or-nothing follow-up to the other's store both end.
  ///
  /// The follow-up that would close the cycle fails at once with `dependencyCycle`. (Before, both waited for
  /// ever; in a lane's modes, the first follow-up, waiting for the other holder, also kept the lane from starting the
  /// second, which now runs beside it.)
  @Test(arguments: Dispatcher.Mode.allCases)
  func twoHoldersAwaitingFollowUpsToEachOthersStoresBothEnd(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    let bothHold = AsyncGate()
    let holding = Collector<Bool>()
    let followUps = Collector<Result<Void, DispatchError>>()
    for (name, other) in [("s1", "s2"), ("s2", "s1")] {
      let store = Store(identifier: name, model: Ledger()) { (action: CycleAction, operation) in
        switch action {
        case .hold(let store) where store == name:
          holding.append(true)
          await bothHold.wait()
          let followUp = operation.dispatcher?.start(
            action: CycleAction.follow(other), to: other, mode: mode, options: DispatchOptions(allOrNothing: true))
          if let followUp { followUps.append(await followUp.result) }
        case .follow:
          operation.updateModel { $0.applied.insert(2) }
        case .hold:
          break
        }
      }
      try dispatcher.register(store: store)
    }
    let first = dispatcher.start(
      action: CycleAction.hold("s1"), to: "s1", mode: .async, options: DispatchOptions(allOrNothing: true))
    let second = dispatcher.start(
      action: CycleAction.hold("s2"), to: "s2", mode: .async, options: DispatchOptions(allOrNothing: true))
    guard await awaited({ await holding.wait(for: 2) }) != nil else {
      Issue.record("the two dispatches did not both hold their stores within 60 s")
      return
    }
    bothHold.open()
    for handle in [first, second] {
      guard let result = await firstValue(within: .seconds(90), { handle.whenFinished($0) }) else {
        Issue.record("a holder did not end within 90 s: the two waited for each other")
        return
      }
      #expect(result.isSuccess)
    }
    let results = followUps.values
    #expect(results.count == 2)
    #expect(results.filter(\.isSuccess).count == 1)
    #expect(
      results.contains {
        if case .failure(.dependencyCycle(let path)) = $0 { return path.count == 4 && path.first == path.last }
        return false
      })
  }

  /// A start that waited at a held store that was then removed from the dispatcher does not run.
  @Test func aParkedStartOfARemovedStoreDoesNotRun() async throws {
    let app = try HeldStores()
    let (dispatcher, plain) = (app.dispatcher, app.plain)
    let (holding, operation) = await app.hold(1, mode: .async)
    let parked = dispatcher.start(action: CounterAction.increase(10), to: "a", mode: .async)
    // Parked: it runs when "a" is released.
    while plain.state.withLock({ $0.gate?.parked.count ?? 0 }) == 0 { await Task.yield() }
    _ = dispatcher.unregister(storeIdentifier: "a")
    operation.finish()
    try await holding.value
    // Middleware saw its transaction begin: it ends, failed, naming the store.
    guard case .failure(.operationsFailed(let failures)) = await parked.result,
      case .unknownStore("a") = failures.first?.error as? DispatchError
    else {
      Issue.record("expected the parked start to fail with unknownStore(\"a\"), got \(await parked.result)")
      return
    }
    #expect(plain.model.count == 1)
  }

  /// A plain dispatch to a store that an all-or-nothing dispatch holds waits for it to end, so that putting the
  /// store back overwrites nothing it made.
  @Test(arguments: Dispatcher.Mode.allCases)
  func aDispatchToAHeldStoreWaitsAndIsNotOverwritten(mode: Dispatcher.Mode) async throws {
    let app = try HeldStores()
    let (dispatcher, plain) = (app.dispatcher, app.plain)
    let (holding, operation) = await app.hold(1, mode: .async)
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
    operation.finish(throwing: TestFailure(reason: "b failed"))
    let result = await holding.result
    guard case .failure(.rolledBack(let restored, _)) = result else {
      Issue.record("expected rolledBack, got \(result)")
      return
    }
    #expect(restored == ["a"])
    #expect(await finished.wait(for: 1).first?.isSuccess == true)
    #expect(plain.model.count == 10)
    #expect(app.held.model.count == 0)
  }

  /// Observers hear a rollback once every store of the dispatch is released: one may dispatch, `.sync`, to another
  /// store the dispatch held, and its change stays.
  @Test(arguments: Dispatcher.Mode.allCases)
  func observersOfARollbackMayDispatchToAnyStoreItHeld(mode: Dispatcher.Mode) async throws {
    let app = LedgerApp()
    let followUp = Collector<Result<Void, DispatchError>>()
    let token = app.stores[0].observe(synchronously: true) { change in
      guard change.isRestore else { return }
      app.dispatcher.dispatch(action: LedgerAction(id: 9, stores: [1]), to: "s1", mode: .sync) { followUp.append($0) }
    }
    // The other store's observers hear its change, its restore, then the follow-up, in order.
    let heard = Locked<[Set<Int>]>([])
    let other = app.stores[1].observe(synchronously: true) { change in
      heard.withLock { $0.append(change.model.applied) }
    }
    // From a thread of its own: a `.sync` dispatch blocks its caller until it ends.
    let result = await firstValue { deliver in
      Thread {
        app.dispatcher.start(
          action: LedgerAction(id: 2, stores: [0, 1, 2], failIn: 2), mode: mode, options: Self.allOrNothing
        ).whenFinished(deliver)
      }.start()
    }
    guard let result else {
      Issue.record("the rollback's observer was left waiting for a store its dispatch still held")
      return
    }
    guard case .failure(.rolledBack(let restored, _)) = result else {
      Issue.record("expected rolledBack, got \(result)")
      return
    }
    #expect(restored == ["s0", "s1"])
    #expect(await followUp.wait(for: 1).first?.isSuccess == true)
    #expect(app.applied == [[], [9], [], []])
    #expect(heard.withLock { $0 } == [[2], [], [9]])
    withExtendedLifetime((token, other)) {}
  }

  /// An all-or-nothing dispatch made inside another that holds a store it needs fails at once, naming both: it would
  /// wait for the dispatch that awaits it.
  @Test(arguments: Dispatcher.Mode.allCases)
  func aNestedAllOrNothingDispatchToAHeldStoreFailsAtOnce(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    let store = Store(identifier: "f", model: Ledger(), reducer: FollowUpLedger())
    try dispatcher.register(store: store)
    let outer = dispatcher.start(
      action: FollowUpAction.outer(mode: mode, fails: false, nested: true), mode: .async, options: Self.allOrNothing)
    guard let result = await firstValue(within: .seconds(90), { outer.whenFinished($0) }) else {
      Issue.record("the nested all-or-nothing dispatch waited for the one that awaited it")
      return
    }
    guard case .failure(.rolledBack(let restored, let failures)) = result,
      case .dependencyCycle(let cycle) = failures.first?.error as? DispatchError
    else {
      Issue.record("expected the outer dispatch to roll back after a dependency cycle, got \(result)")
      return
    }
    #expect(restored == ["f"])
    #expect(cycle.count == 3 && cycle[1] == outer.id && cycle[0] == cycle[2] && cycle[0] != outer.id)
    #expect(store.model.applied == [])
  }

  /// A follow-up made inside an all-or-nothing dispatch that was made inside another passes the stores of both:
  /// the outer one awaits the inner one, which awaits the follow-up to the outer one's store.
  @Test(arguments: Dispatcher.Mode.allCases)
  func aFollowUpOfANestedAllOrNothingDispatchPassesTheOuterOnesStores(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    let outerStore = Store(identifier: "f", model: Ledger(), reducer: NestingLedger(mode: mode))
    let innerStore = Store(identifier: "g", model: Ledger(), reducer: NestingLedger(mode: mode))
    try dispatcher.register(store: outerStore)
    try dispatcher.register(store: innerStore)
    let outer = dispatcher.start(action: NestingAction.outer, to: "f", mode: .async, options: Self.allOrNothing)
    guard let result = await firstValue(within: .seconds(90), { outer.whenFinished($0) }) else {
      Issue.record("the follow-up waited for the outer dispatch, which waited for it")
      return
    }
    #expect(result.isSuccess)
    #expect(outerStore.model.applied == [1, 3])
    #expect(innerStore.model.applied == [2])
  }

  /// A `.sync` dispatch made on the main thread fails at once when one of its stores, started later on another
  /// thread, is held by a `.mainThread` all-or-nothing dispatch: its caller blocks the thread that one needs.
  @Test func aSyncDispatchFromTheMainThreadFailsWhereverItsStoreParks() async throws {
    let holding = Gate()
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    // "a" waits for "x", whose operation finishes on a background thread: "a" usually starts there.
    let held = Store(identifier: "a", model: Counter(), reducer: GatedReducer(gate: holding, waits: ["x"]))
    let waited = makeCounterStore("x")
    try dispatcher.register(store: held)
    try dispatcher.register(store: waited)
    let holder = dispatcher.start(
      action: CounterAction.increase(1), to: "a", mode: .mainThread, options: Self.allOrNothing)
    _ = await holding.waitForOperations(1)
    let results = Collector<Result<Void, DispatchError>>()
    // Nothing here needs a thread of Swift's pool while the main thread waits: the holder ends on the main thread,
    // once the dispatch there returned.
    MainQueue.libraryThread.schedule {
      dispatcher.dispatch(action: CounterAction.increaseLater(5), mode: .sync) { results.append($0) }
    }
    MainQueue.libraryThread.schedule { holding.open() }
    guard let result = await firstValue({ deliver in Task { deliver(await results.wait(for: 1)[0]) } }) else {
      Issue.record("the .sync dispatch blocked the main thread behind a .mainThread holder")
      return
    }
    guard case .failure(.operationsFailed(let failures)) = result,
      case .reentrantSynchronousDispatch = failures.first?.error as? DispatchError
    else {
      Issue.record("expected a re-entrant failure, got \(result)")
      return
    }
    #expect(failures.map(\.storeIdentifier) == ["a"])
    #expect(waited.model.count == 5)
    try await holder.value
    #expect(held.model.count == 1)
  }

  /// A `.sync` all-or-nothing dispatch made on the main thread fails at once when a `.mainThread` all-or-nothing
  /// dispatch holds one of its stores, changing nothing.
  @Test func aSyncAllOrNothingDispatchFromTheMainThreadBehindAMainThreadHolderFailsAtOnce() async throws {
    let app = try HeldStores(mainQueue: .libraryThread)
    let (holding, operation) = await app.hold(1, mode: .mainThread)
    let results = Collector<Result<Void, DispatchError>>()
    MainQueue.libraryThread.schedule {
      app.dispatcher.start(
        action: CounterAction.increase(10), to: "a", mode: .sync, options: Self.allOrNothing
      ).whenFinished { results.append($0) }
    }
    // The holder ends only once the main thread is free.
    MainQueue.libraryThread.schedule { operation.finish() }
    guard let result = await firstValue({ deliver in Task { deliver(await results.wait(for: 1)[0]) } }) else {
      Issue.record("the .sync all-or-nothing dispatch blocked the main thread behind a .mainThread holder")
      return
    }
    guard case .failure(.reentrantSynchronousDispatch) = result else {
      Issue.record("expected a re-entrant failure, got \(result)")
      return
    }
    try await holding.value
    #expect(app.plain.model.count == 1)
  }

  /// A dispatch whose store starts on the thread of an all-or-nothing dispatch (an operation of that one finished
  /// the operation it waited for) is not part of that one: it waits for it, and is not put back with it.
  @Test func aDispatchStartedOnAHoldersThreadIsNotPartOfIt() async throws {
    let waitedFor = Gate()
    let dispatcher = Dispatcher()
    let first = Store(identifier: "p", model: Counter(), reducer: GatedReducer(gate: waitedFor))
    // The holder's operation on "a" finishes p's operation, on its own thread, then fails.
    let held = makeCounterStore(
      "a", waits: { _ in ["p"] },
      onStart: { action, _ in
        if action == .fail { waitedFor.open() }
      })
    try dispatcher.register(store: first)
    try dispatcher.register(store: held)
    let plain = dispatcher.start(action: CounterAction.increase(10), mode: .async)
    _ = await waitedFor.waitForOperations(1)
    let holder = dispatcher.start(action: CounterAction.fail, to: "a", mode: .async, options: Self.allOrNothing)
    guard let result = await firstValue({ holder.whenFinished($0) }) else {
      Issue.record("the holder did not finish")
      return
    }
    guard case .failure(.rolledBack(let restored, _)) = result else {
      Issue.record("expected rolledBack, got \(result)")
      return
    }
    // The plain dispatch's change to "a" came after the holder ended: nothing of it was put back.
    #expect(restored == [])
    try await plain.value
    #expect(held.model.count == 10)
  }

  /// Syncing each record, a failed all-or-nothing dispatch's rollback records are on disk before it completes.
  @Test func rollbackRecordsAreWrittenBeforeTheDispatchCompletes() async throws {
    let app = LedgerApp()
    let recorder = RecorderMiddleware()
    app.dispatcher.register(middleware: recorder)
    let file = TemporaryFile()
    try recorder.attach(appendingTo: file.url, codecs: Self.codecs, syncEachRecord: true)
    for id in 1...5 {
      _ = await app.dispatcher.start(
        action: LedgerAction(id: id, failIn: 3), mode: .async, options: Self.allOrNothing
      ).result
      #expect(file.lines.filter { $0.contains(#""b":true"#) }.count == 3 * id)
    }
  }

  /// Eight threads dispatch plain and all-or-nothing actions to overlapping stores, one in five all-or-nothing ones
  /// failing: every store ends with exactly the dispatches that succeeded, and every plain one; the recorded session
  /// verifies, rollbacks included, and ends at the same models.
  @Test(.serialized, arguments: Dispatcher.Mode.allCases)
  func eightThreadsKeepExactlyTheSucceededDispatches(mode: Dispatcher.Mode) async throws {
    try await Exclusive.stress { try await eightThreadsKeepExactlyTheSucceededDispatchesAlone(mode: mode) }
  }

  private func eightThreadsKeepExactlyTheSucceededDispatchesAlone(mode: Dispatcher.Mode) async throws {
    let app = LedgerApp()
    let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000_000)
    app.dispatcher.register(middleware: recorder)
    // Models grow with the steps, and each record holds one: the session's size grows with the square of the steps.
    let steps = isSanitized ? 25 : 60
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
    #expect(recorder.records.contains { $0.isRollback })
    let file = TemporaryFile()
    let url = file.url
    let verified = LedgerApp()
    // Saving and verifying block: off the cooperative pool (see `onOwnThread`).
    _ = try await onOwnThread {
      try recorder.save(to: url, codecs: Self.codecs)
      return try Session.load(from: url, codecs: Self.codecs).verify(against: verified.dispatcher, mode: mode)
    }
    #expect(verified.applied == app.applied)
  }
}

/// `outer` changes its store, then awaits `inner` to the same store in `mode` (all or nothing if `nested`), then fails
/// if `fails`.
enum FollowUpAction: ActionType {
  case outer(mode: Dispatcher.Mode, fails: Bool, nested: Bool = false)
  case inner(Int)
}

/// Runs ``FollowUpAction``s with `async` bodies.
final class FollowUpLedger: Reducer<Ledger, FollowUpAction>, @unchecked Sendable {
  override func operation(
    for action: FollowUpAction, in store: Store<Ledger, FollowUpAction>
  ) -> ActionOperation<Ledger, FollowUpAction> {
    ActionOperation(action: action, store: store) { operation in
      switch action {
      case .inner(let id):
        operation.updateModel { $0.applied.insert(id) }
      case .outer(let mode, let fails, let nested):
        operation.updateModel { $0.applied.insert(1) }
        try await operation.dispatcher?.start(
          action: FollowUpAction.inner(2), to: "f", mode: mode, options: DispatchOptions(allOrNothing: nested)
        ).value
        if fails { throw TestFailure(reason: "outer failed") }
      }
    }
  }
}

/// Passes every action on, deciding later on another thread.
final class DecidesLater: Interceptor {
  func intercept(_ action: any ActionType, dispatcher: Dispatcher) -> Interception {
    .later { decide in DispatchQueue.global().async { decide(.proceed) } }
  }
}

/// `outer` (to "f") awaits the all-or-nothing `middle` (to "g"), which awaits `inner` (to "f") in the ledger's mode.
///
/// `middle` runs `.async`: an operation of a lane's dispatch that awaits a dispatch in the same lane waits for ever.
enum NestingAction: ActionType {
  case outer, middle, inner
}

/// Runs ``NestingAction``s with `async` bodies, adding 1, 2 and 3.
final class NestingLedger: Reducer<Ledger, NestingAction>, @unchecked Sendable {
  let mode: Dispatcher.Mode
  init(mode: Dispatcher.Mode) { self.mode = mode }

  override func operation(
    for action: NestingAction, in store: Store<Ledger, NestingAction>
  ) -> ActionOperation<Ledger, NestingAction> {
    ActionOperation(action: action, store: store) { [mode] operation in
      switch action {
      case .outer:
        operation.updateModel { $0.applied.insert(1) }
        try await operation.dispatcher?.start(
          action: NestingAction.middle, to: "g", mode: .async, options: DispatchOptions(allOrNothing: true)
        ).value
      case .middle:
        operation.updateModel { $0.applied.insert(2) }
        try await operation.dispatcher?.start(action: NestingAction.inner, to: "f", mode: mode).value
      case .inner:
        operation.updateModel { $0.applied.insert(3) }
      }
    }
  }
}

/// The routes decided after the dispatch was made
/// (``AllOrNothingTests/aFollowUpOnARouteDecidedLaterPassesTheHoldersStores(mode:route:)``).
enum LaterRoute: CaseIterable, Sendable {
  case debounced, afterDependency, parkedResume
}

/// `outer` (to "f") awaits `inner(2)` to "f" by its route; `middle` (to "p") awaits `inner(2)` to "f"; `hold` (to
/// "p") waits until the test opens the gate.
enum LaterRouteAction: ActionType {
  case outer(LaterRoute), middle, hold
  case inner(Int)
}

/// Store "f" and "p" run ``LaterRouteAction``s; "b" holds its operations at `gate`.
struct LaterRouteApp {
  let dispatcher = Dispatcher(mainQueue: .libraryThread)
  let followed: Store<Ledger, LaterRouteAction>
  let parked: Store<Ledger, LaterRouteAction>
  let gate = Gate()
  /// Opened to end the dispatch holding "p".
  let holding = AsyncGate()
  /// Appended to when `hold` holds "p", and when `outer` started its dependent follow-up.
  let reached = Collector<Bool>()

  init(mode: Dispatcher.Mode) throws {
    let reducer = LaterRouteLedger(mode: mode, holding: holding, reached: reached)
    followed = Store(identifier: "f", model: Ledger(), reducer: reducer)
    parked = Store(identifier: "p", model: Ledger(), reducer: reducer)
    try dispatcher.register(store: followed)
    try dispatcher.register(store: parked)
    try dispatcher.register(store: Store(identifier: "b", model: Counter(), reducer: GatedReducer(gate: gate)))
  }
}

/// Runs ``LaterRouteAction``s with `async` bodies; follow-ups in `mode`.
final class LaterRouteLedger: Reducer<Ledger, LaterRouteAction>, @unchecked Sendable {
  let mode: Dispatcher.Mode
  let holding: AsyncGate
  let reached: Collector<Bool>

  init(mode: Dispatcher.Mode, holding: AsyncGate, reached: Collector<Bool>) {
    (self.mode, self.holding, self.reached) = (mode, holding, reached)
  }

  override func operation(
    for action: LaterRouteAction, in store: Store<Ledger, LaterRouteAction>
  ) -> ActionOperation<Ledger, LaterRouteAction> {
    ActionOperation(action: action, store: store) { [mode, holding, reached] operation in
      guard let dispatcher = operation.dispatcher else { return }
      let inner = LaterRouteAction.inner(2)
      switch action {
      case .outer(.debounced):
        operation.updateModel { $0.applied.insert(1) }
        let options = DispatchOptions(debounce: .milliseconds(1))
        try await dispatcher.start(action: inner, to: "f", mode: mode, options: options).value
      case .outer(.afterDependency):
        operation.updateModel { $0.applied.insert(1) }
        let dependency = dispatcher.start(action: CounterAction.increase(1), to: "b")
        let followUp = dispatcher.prepare(action: inner, to: "f", mode: mode)
        try followUp.depend(on: dependency)
        followUp.start()
        reached.append(true)
        try await followUp.value
      case .outer(.parkedResume):
        operation.updateModel { $0.applied.insert(1) }
        try await dispatcher.start(action: LaterRouteAction.middle, to: "p", mode: .async).value
      case .middle:
        try await dispatcher.start(action: inner, to: "f", mode: mode).value
      case .hold:
        reached.append(true)
        await holding.wait()
      case .inner(let id):
        operation.updateModel { $0.applied.insert(id) }
      }
    }
  }
}

/// Calls its closure when released.
final class ReleaseProbe: Sendable {
  let onRelease: @Sendable () -> Void
  init(onRelease: @escaping @Sendable () -> Void) { self.onRelease = onRelease }
  deinit { onRelease() }
}

/// A model holding a class (``ReleaseProbe``).
struct ProbedModel: ModelType {
  var generation = 0
  var probe: ReleaseProbe?
}

struct ProbeAction: ActionType {}

/// `outer` (to "c") awaits the all-or-nothing `inner` (to every store).
enum AwaitingAction: ActionType {
  case outer, inner
}

/// `hold(store)` (to that store) awaits `follow` to the other store, all or nothing.
enum CycleAction: ActionType {
  case hold(String), follow(String)
}

/// `hold` (to "held") awaits a follow-up on a lane; `touch` changes "held"; `earlier` keeps a lane busy.
enum LaneAction: ActionType, Equatable {
  case hold, touch, earlier
}

struct FollowAction: ActionType {}

enum StepAction: ActionType {
  case first, second
}
