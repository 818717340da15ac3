import Dispatch
import Foundation
import Testing

@testable import DispatchStore

/// `drain()` and `waitUntilDrained()` wait for every dispatch in flight, the follow-ups they start, and the main
/// queue's work; inside a dispatch they return `false` at once (issue 26: a command-line tool could not await
/// follow-ups).
@Suite("Dispatcher.drain", .timeLimit(.minutes(1)), .watchdog)
struct DrainTests {
  /// A store whose operation waits at `gate`, then adds 1 and dispatches a follow-up to `log`, which waits at the
  /// gate too (an operation of its own) and appends the follow-up's text; `heard` is what a main-thread observer of
  /// `log` heard.
  struct App {
    let dispatcher: Dispatcher
    let gate: AsyncGate
    let counter: Store<Counter, CounterAction>
    let log: Store<Text, TextAction>
    let heard: Locked<[String]>
    let token: ObservationToken
  }

  func makeApp() throws -> App {
    let dispatcher = Dispatcher(mainQueue: .runLoopThread(MainRunLoopThread(name: "drain", idlePolling: .zero)))
    let gate = AsyncGate()
    let counter = Store(identifier: "counter", model: Counter()) { (action: CounterAction, context) in
      await gate.wait()
      context.updateModel { $0.count += 1 }
      context.dispatcher?.start(action: TextAction.append("follow-up \(context.model.count)"))
    }
    let log = Store(identifier: "log", model: Text()) { (action: TextAction, context) in
      await gate.wait()
      if case .append(let line) = action { context.updateModel { $0.value += line + ";" } }
    }
    try dispatcher.register(store: counter)
    try dispatcher.register(store: log)
    let heard = Locked<[String]>([])
    let token = log.observe { change in heard.withLock { $0.append(change.model.value) } }
    return App(dispatcher: dispatcher, gate: gate, counter: counter, log: log, heard: heard, token: token)
  }

  /// Awaits `drain()` in a task of its own until it waits for the count of dispatches in flight, then opens the
  /// gate: the drain cannot have returned before the operations ran.
  func drainWhileHeld(_ app: App) async -> Bool {
    let returned = Locked(false)
    let drain = Task {
      let drained = await app.dispatcher.drain()
      returned.withLock { $0 = true }
      return drained
    }
    while !app.dispatcher.inFlight.isAwaited, !returned.withLock({ $0 }) { await Task.yield() }
    #expect(!returned.withLock { $0 }, "drain returned while the operation was held")
    app.gate.open()
    return await drain.value
  }

  @Test(arguments: [Dispatcher.Mode.async, .serial, .mainThread])
  func drainWaitsForADispatchWithoutAHandleAndTheFollowUpItStarts(mode: Dispatcher.Mode) async throws {
    let app = try makeApp()
    // Fire and forget, as synchronous code does it.
    app.dispatcher.dispatch(action: CounterAction.increase(1), mode: mode, then: nil)

    #expect(await drainWhileHeld(app))
    #expect(app.counter.model.count == 1)
    #expect(app.log.model.value == "follow-up 1;")
    #expect(app.heard.withLock { $0 } == ["follow-up 1;"])  // The main queue's notification ran too.
    #expect(app.dispatcher.inFlight.isIdle)
    withExtendedLifetime(app.token) {}
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func drainWaitsForAStartedHandleAndTheFollowUpItStarts(mode: Dispatcher.Mode) async throws {
    let app = try makeApp()
    // A `.sync` handle returns once its operation finished; started here from a thread of its own, so that the
    // drain below is awaited while it runs.
    let started = startAside(CounterAction.increase(1), mode: mode, on: app.dispatcher)
    guard await eventually({ !app.dispatcher.inFlight.isIdle }) else {
      Issue.record("the dispatch was not counted in flight within 60 s")
      return
    }

    #expect(await drainWhileHeld(app))
    #expect(app.counter.model.count == 1)
    #expect(app.log.model.value == "follow-up 1;")
    #expect(app.heard.withLock { $0 } == ["follow-up 1;"])
    #expect(app.dispatcher.inFlight.isIdle)
    withExtendedLifetime((app.token, started)) {}
  }

  @Test func drainWaitsForASequenceOfActionsToItsLast() async throws {
    let app = try makeApp()
    let actions: [any ActionType] = [CounterAction.increase(1), CounterAction.increase(1), CounterAction.increase(1)]
    app.dispatcher.dispatch(actions: actions, mode: .serial, then: nil)

    #expect(await drainWhileHeld(app))
    #expect(app.counter.model.count == 3)
    #expect(app.log.model.value.split(separator: ";").sorted() == ["follow-up 1", "follow-up 2", "follow-up 3"])
    withExtendedLifetime(app.token) {}
  }

  @Test func drainWaitsForADebouncedDispatchItsQuietIntervalAndRun() async throws {
    let dispatcher = Dispatcher(mainQueue: .runLoopThread(MainRunLoopThread(name: "drain", idlePolling: .zero)))
    let counter = makeCounterStore("counter")
    try dispatcher.register(store: counter)
    let options = DispatchOptions(cancellationID: "typing", debounce: .milliseconds(20))
    dispatcher.start(action: CounterAction.increase(1), options: options)
    dispatcher.start(action: CounterAction.increase(2), options: options)

    #expect(await dispatcher.drain())
    #expect(counter.model.count == 2)  // The later one replaced the first, and ran before the drain returned.
    #expect(dispatcher.inFlight.isIdle)
  }

  /// The dispatch cancelled is one not yet run: debounced for an hour. (Started plainly, its operation could reach
  /// the gate before the cancellation, on a busy machine, and drain would rightly wait for it: the test once hung so.)
  @Test func cancelledAndPreparedButNeverStartedHandlesDoNotKeepItWaiting() async throws {
    let app = try makeApp()
    let prepared = app.dispatcher.prepare(action: CounterAction.increase(1))
    let cancelled = app.dispatcher.start(
      action: CounterAction.increase(1), options: DispatchOptions(cancellationID: "later", debounce: .seconds(3_600)))
    cancelled.cancel()
    prepared.cancel()
    prepared.start()  // Cancelled before it started: it never runs.

    #expect(await app.dispatcher.drain())
    #expect(app.dispatcher.inFlight.isIdle)
    #expect(app.counter.model.count == 0)
    withExtendedLifetime(app.token) {}
  }

  /// "Cancel everything, then drain": a dispatch cancelled while its operation runs is waited for until the
  /// operation returned (the review of the change found the drain returning at the cancellation).
  @Test(arguments: Dispatcher.Mode.allCases)
  func drainWaitsForTheOperationOfADispatchCancelledWhileItRuns(mode: Dispatcher.Mode) async throws {
    let app = try makeApp()
    let handle = startAside(CounterAction.increase(1), mode: mode, on: app.dispatcher)
    guard await eventually({ app.gate.waiting > 0 }) else {
      Issue.record("the operation did not reach the gate within 60 s")
      return
    }
    app.dispatcher.cancelAll()

    #expect(await drainWhileHeld(app))
    #expect(app.dispatcher.inFlight.isIdle)
    withExtendedLifetime((app.token, handle)) {}
  }

  /// Awaited in an operation's `async` body, it would wait for the dispatch that runs the body.
  @Test(arguments: Dispatcher.Mode.allCases)
  func drainInsideAnOperationReturnsFalseAtOnce(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher(mainQueue: .runLoopThread(MainRunLoopThread(name: "drain", idlePolling: .zero)))
    let drained = Locked<[Bool]>([])
    let store = Store(identifier: "drainer", model: Counter()) { (_: CounterAction, context) in
      drained.withLock { $0.append(false) }
      let inside = await context.dispatcher?.drain()
      // And in a task made in the body, which inherits where it runs.
      let inTask = await Task { await context.dispatcher?.drain() }.value
      drained.withLock { $0 = [inside ?? true, inTask ?? true] }
    }
    try dispatcher.register(store: store)
    if mode == .sync {
      try await onOwnThread { () throws(DispatchError) in try dispatcher.dispatchSync(action: CounterAction.increase(1))
      }
    } else {
      try await dispatcher.dispatch(action: CounterAction.increase(1), mode: mode)
    }
    #expect(drained.withLock { $0 } == [false, false])
    #expect(await dispatcher.drain())
  }

  /// Called in a reducer, or an observer hearing the change the reducer made, it would block the dispatch it runs in.
  @Test(arguments: Dispatcher.Mode.allCases)
  func waitUntilDrainedInsideAReducerOrItsObserverReturnsFalseAtOnce(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher(mainQueue: .runLoopThread(MainRunLoopThread(name: "drain", idlePolling: .zero)))
    let results = Locked<[Bool]>([])
    let store = Store(identifier: "counter", model: Counter()) { (_: CounterAction, model) in
      results.withLock { $0.append(dispatcher.waitUntilDrained()) }
      model.count += 1
    }
    try dispatcher.register(store: store)
    let token = store.observe(synchronously: true) { _ in results.withLock { $0.append(dispatcher.waitUntilDrained()) }
    }
    try await onOwnThread { () throws(DispatchError) in
      if mode == .sync {
        try dispatcher.dispatchSync(action: CounterAction.increase(1))
      } else {
        dispatcher.dispatch(action: CounterAction.increase(1), mode: mode)
      }
      #expect(dispatcher.waitUntilDrained())  // From the tool's own code, it waits.
    }
    #expect(results.withLock { $0 } == [false, false])
    #expect(store.model.count == 1)
    withExtendedLifetime(token) {}
  }

  /// The blocking form waits for what the awaited form waits for: a tool whose top-level code never awaits.
  @Test func waitUntilDrainedWaitsForOperationsAndTheirFollowUps() async throws {
    let app = try makeApp()
    let returned = Locked(false)
    let drained = try await onOwnThread { () throws(DispatchError) -> Bool in
      app.dispatcher.dispatch(action: CounterAction.increase(1), mode: .async)
      // Opened from another thread once this one waits for the count of dispatches in flight.
      Thread {
        while !app.dispatcher.inFlight.isAwaited, !returned.withLock({ $0 }) { sched_yield() }
        app.gate.open()
      }.start()
      defer { returned.withLock { $0 = true } }
      return app.dispatcher.waitUntilDrained()
    }
    #expect(drained)
    #expect(app.counter.model.count == 1)
    #expect(app.log.model.value == "follow-up 1;")
    #expect(app.heard.withLock { $0 } == ["follow-up 1;"])
    withExtendedLifetime(app.token) {}
  }
}
