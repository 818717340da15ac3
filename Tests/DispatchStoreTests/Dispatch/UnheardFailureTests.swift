import Testing

@testable import DispatchStore

/// A fire-and-forget dispatch that fails, which nobody awaits, reaches the dispatcher's `onUnheardFailure`.
@Suite("Failures nobody awaits", .timeLimit(.minutes(1)), .watchdog)
struct UnheardFailureTests {
  enum Unhandled: ActionType {
    case ping
    /// Fired after the failures a test expects, to see that nothing more came before it.
    case sentinel
  }

  struct Refused: Error {}

  /// What `onUnheardFailure` heard: the action, as text, and the error.
  typealias Heard = (action: String, error: DispatchError)

  /// A dispatcher whose `onUnheardFailure` appends to `heard`, with a counter store whose reducer throws `Refused`
  /// for `.fail`.
  private func makeDispatcher(_ heard: Collector<Heard>) throws -> (Dispatcher, Store<Counter, CounterAction>) {
    let dispatcher = Dispatcher(onUnheardFailure: { action, error in heard.append(("\(action)", error)) })
    let counter = Store(identifier: "counter", model: Counter()) { (action: CounterAction, model: inout Counter) in
      switch action {
      case .increase(let amount): model.count += amount
      case .fail: throw Refused()
      default: break
      }
    }
    try dispatcher.register(store: counter)
    return (dispatcher, counter)
  }

  /// Fires and forgets, as synchronous code does (the form is unavailable from `async` code).
  private func fire(_ dispatcher: Dispatcher, _ action: some ActionType, to store: String? = nil, mode: Dispatcher.Mode)
  {
    dispatcher.dispatch(action: action, to: store, mode: mode)
  }

  private func fire(_ dispatcher: Dispatcher, actions: [any ActionType], mode: Dispatcher.Mode) {
    dispatcher.dispatch(actions: actions, mode: mode)
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func anActionNoStoreHandlesIsHeard(mode: Dispatcher.Mode) async throws {
    let heard = Collector<Heard>()
    let (dispatcher, _) = try makeDispatcher(heard)

    fire(dispatcher, Unhandled.ping, mode: mode)
    fire(dispatcher, CounterAction.increase(1), to: "nobody", mode: mode)

    let values = await exactly(2, heard, dispatcher, mode: mode)
    #expect(values.count == 2)
    let noStore = DispatchError.noRespondingStore(actionType: String(reflecting: Unhandled.self))
    #expect(values.contains { $0.action == "ping" && $0.error == noStore })
    #expect(values.contains { $0.action == "increase(1)" && $0.error == .unknownStore(identifier: "nobody") })
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aReducerThatThrowsIsHeardAndASuccessIsNot(mode: Dispatcher.Mode) async throws {
    let heard = Collector<Heard>()
    let (dispatcher, counter) = try makeDispatcher(heard)

    fire(dispatcher, CounterAction.increase(2), mode: mode)
    fire(dispatcher, CounterAction.fail, mode: mode)

    #expect(await waitForModel(of: counter, where: { $0.count == 2 }) != nil)
    let values = await exactly(1, heard, dispatcher, mode: mode)
    #expect(values.first?.action == "fail")
    guard case .operationsFailed(let failures) = values.first?.error else {
      Issue.record("expected operationsFailed, heard \(String(describing: values.first?.error))")
      return
    }
    #expect(failures.map(\.storeIdentifier) == ["counter"])
    #expect(failures.first?.error is Refused)
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func anActionAnInterceptorBlockedIsHeard(mode: Dispatcher.Mode) async throws {
    let heard = Collector<Heard>()
    let (dispatcher, counter) = try makeDispatcher(heard)
    dispatcher.register(interceptor: BlockingInterceptor())

    fire(dispatcher, CounterAction.increase(5), mode: mode)

    let values = await exactly(1, heard, dispatcher, mode: mode)
    #expect(values.first?.action == "increase(5)")
    #expect(
      values.first?.error == .blocked(interceptor: String(reflecting: BlockingInterceptor.self), reason: "closed"))
    #expect(counter.model.count == 0)
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aSequenceIsHeardNamingTheActionThatFailed(mode: Dispatcher.Mode) async throws {
    let heard = Collector<Heard>()
    let (dispatcher, counter) = try makeDispatcher(heard)

    fire(dispatcher, actions: [CounterAction.increase(1), CounterAction.fail, CounterAction.increase(4)], mode: mode)

    let values = await exactly(1, heard, dispatcher, mode: mode)
    #expect(values.map(\.action) == ["fail"])
    // The sequence stopped at the failure.
    #expect(counter.model.count == 1)
  }

  @Test func whatSomeoneAskedForIsNotReported() throws {
    let heard = Collector<Heard>()
    let (dispatcher, _) = try makeDispatcher(heard)

    dispatcher.reportUnheard(.cancelled, of: CounterAction.increase(1))
    dispatcher.reportUnheard(.throttled, of: CounterAction.increase(2))
    dispatcher.reportUnheard(.superseded, of: CounterAction.increase(3))
    dispatcher.reportUnheard(.unknownStore(identifier: "x"), of: CounterAction.increase(4))

    #expect(heard.values.map(\.action) == ["increase(4)"])
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aHandlerWhoseOwnDispatchFailsIsNotCalledAgainForIt(mode: Dispatcher.Mode) async throws {
    let calls = Collector<String>()
    let box = Locked<Dispatcher?>(nil)
    let dispatcher = Dispatcher(onUnheardFailure: { action, _ in
      calls.append("\(action)")
      // Logging through a store that is not there: this dispatch fails too, and nobody awaits it.
      guard let dispatcher = box.withLock({ $0 }) else { return }
      dispatcher.dispatch(action: Unhandled.sentinel, mode: mode)
      dispatcher.start(action: Unhandled.sentinel, mode: mode)
    })
    box.withLock { $0 = dispatcher }

    fire(dispatcher, Unhandled.ping, mode: mode)
    _ = await calls.wait(for: 1)
    // Both of the handler's dispatches have failed once this one, made after them in the same mode, ran.
    try? await dispatcher.start(action: Unhandled.sentinel, mode: mode).value
    await dispatcher.drain()

    // Called once, for `ping`; its own dispatches' failures went to standard error, not back to it: no loop.
    #expect(calls.values == ["ping"])
    box.withLock { $0 = nil }
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aDependencysFailureIsReportedAndItsDependentsIsNot(mode: Dispatcher.Mode) async throws {
    let heard = Collector<Heard>()
    let (dispatcher, _) = try makeDispatcher(heard)

    do {
      let load = dispatcher.prepare(action: CounterAction.fail, mode: mode)
      let show = dispatcher.prepare(action: CounterAction.increase(1), mode: mode)
      try show.depend(on: load)
      show.start()
      load.start()
    }

    let values = await exactly(1, heard, dispatcher, mode: mode)
    // The cause, `load`'s failure; not `show`'s `dependencyFailed`, which says only that `load` failed.
    #expect(values.map(\.action) == ["fail"])
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aStartedDispatchWhoseHandleIsReleasedUnreadIsHeardOnce(mode: Dispatcher.Mode) async throws {
    let heard = Collector<Heard>()
    let (dispatcher, _) = try makeDispatcher(heard)

    start(dispatcher, CounterAction.fail, mode: mode)  // the handle is dropped, as an operation's follow-up's is

    let values = await exactly(1, heard, dispatcher, mode: mode)
    #expect(values.map(\.action) == ["fail"])
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aStartedDispatchWhoseOutcomeWasReadIsNotReported(mode: Dispatcher.Mode) async throws {
    let heard = Collector<Heard>()
    let (dispatcher, _) = try makeDispatcher(heard)

    do {
      let handle = dispatcher.start(action: CounterAction.fail, mode: mode)
      await #expect(throws: DispatchError.self) { try await handle.value }
    }
    do {
      let handle = dispatcher.start(action: CounterAction.fail, mode: mode)
      let token = handle.observe { _ in }
      _ = await handle.result
      token.cancel()
    }

    #expect(await exactly(0, heard, dispatcher, mode: mode).isEmpty)
  }

  /// Fires and forgets with `start`, dropping the handle.
  private func start(_ dispatcher: Dispatcher, _ action: some ActionType, mode: Dispatcher.Mode) {
    dispatcher.start(action: action, mode: mode)
  }

  /// The failures heard before a sentinel failure, fired and forgotten in `mode` after the `count` expected ones
  /// were heard: a duplicate report, or a sequence that went on, shows among them (in the lanes and in `.sync`, the
  /// sentinel comes after everything dispatched before it).
  private func exactly(
    _ count: Int, _ heard: Collector<Heard>, _ dispatcher: Dispatcher, mode: Dispatcher.Mode = .sync
  ) async -> [Heard] {
    _ = await heard.wait(for: count)
    fire(dispatcher, Unhandled.sentinel, mode: mode)
    let values = await heard.wait(for: count + 1)
    return Array(values.prefix { $0.action != "sentinel" })
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func aDispatchThatIsAwaitedIsNotReported(mode: Dispatcher.Mode) async throws {
    let heard = Collector<Heard>()
    let (dispatcher, _) = try makeDispatcher(heard)

    await #expect(throws: DispatchError.unknownStore(identifier: "nobody")) {
      try await dispatcher.dispatch(action: CounterAction.increase(1), to: "nobody", mode: mode)
    }
    // A later failure nobody awaits is the only one heard.
    fire(dispatcher, Unhandled.ping, mode: mode)
    #expect(await heard.wait(for: 1).map(\.action) == ["ping"])
  }
}

/// Blocks every action, giving "closed" as its reason.
private final class BlockingInterceptor: Interceptor {
  func intercept(_ action: any ActionType, dispatcher: Dispatcher) -> Interception { .block(reason: "closed") }
}
