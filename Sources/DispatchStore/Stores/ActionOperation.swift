import Synchronization

/// The work a ``Reducer`` returns for one action: a block that mutates the store's model and then calls
/// ``finish()``, possibly later and on another thread.
///
/// ```swift
/// ActionOperation(action: action, store: store) { operation, action, store in
///   operation.updateModel { $0.count += 1 }
///   operation.finish()
/// }
/// ```
///
/// Each ``updateModel(_:)`` is one change, which observers hear at once, with the model it produced.
///
/// > Important: The block must eventually call ``finish()`` or ``finish(throwing:)`` exactly once; later calls
/// > are ignored. If the operation is released without finishing, its transaction fails with
/// > ``DispatchError/releasedWithoutFinishing(storeIdentifier:)`` instead of hanging the dispatch. To
/// > finish later, keep a reference to the operation (capture it in your asynchronous work).
public final class ActionOperation<Model: ModelType, Action: ActionType>: Sendable {
  /// The work of an operation: it receives the operation (to finish it), the action and the store.
  typealias Block = @Sendable (ActionOperation<Model, Action>, Action, Store<Model, Action>) -> Void

  /// The action this operation handles.
  public let action: Action
  /// The store whose model this operation changes.
  @usableFromInline let store: Store<Model, Action>

  private let block: Block
  /// The error and handlers; the phase is in `status`.
  private let state = LockedValue(OperationState())
  /// The phase, and whether the operation has handlers (``OperationStatus``).
  ///
  /// Two transitions take no lock, since nearly every operation makes them and nothing else: starting one (pending
  /// to running), and finishing one successfully that nobody registered to hear (running to
  /// succeeded). Each is one compare-and-swap from the exact value it leaves; every other transition is made under
  /// the lock, also by compare-and-swap, so that the two lock-free ones cannot be lost.
  private let status = Atomic<UInt8>(OperationStatus.pending)
  /// Where the operation files its transaction's entries, while a hook follows the dispatch (``TransactionHook``):
  /// one at each change of its store's model, or one when it finishes if it made none.
  ///
  /// `nonisolated(unsafe)`, and unchecked by the runtime's exclusivity checks (which would cost more than the
  /// read): written once, by the dispatching thread before the operation starts, and read by the threads that change
  /// the model and finish it, which the start happened before. Filing at finish is claimed in `status`.
  @usableFromInline @exclusivity(unchecked) nonisolated(unsafe) var hooked: HookedTransaction?
  /// The index of the first entry filed at a change of the model, or -1.
  ///
  /// `nonisolated(unsafe)`, and unchecked by the runtime: written and read only under the store's lock
  /// (``fileChange(_:)``, and the filing at finish, ``Store/fileFinishedOperation(_:_:)``).
  @usableFromInline @exclusivity(unchecked) nonisolated(unsafe) var firstChangeIndex = -1
  /// How many entries the operation filed at its changes; under the store's lock, as `firstChangeIndex`.
  @usableFromInline @exclusivity(unchecked) nonisolated(unsafe) var changeCount: UInt32 = 0

  /// Creates an operation whose work is `async`: it runs as a task, finishes when `body` returns, and fails with
  /// what `body` throws.
  ///
  /// ```swift
  /// ActionOperation(action: action, store: store) { operation in
  ///   let profile = try await api.profile(id)       // cancelled with the dispatch (task cancellation)
  ///   operation.updateModel { $0.profile = profile }
  ///   operation.dispatcher?.start(action: FeedAction.reload) // a follow-up action
  /// }
  /// ```
  ///
  /// When the dispatch is cancelled, the task is cancelled: `Task.isCancelled` becomes `true` and cancellable
  /// awaits (`Task.sleep`, `URLSession`) throw `CancellationError`, which fails the operation. The task runs on
  /// Dispatch's global queue, not on Swift's cooperative pool, so that a `.sync` dispatch waiting for it on a pool
  /// thread does not take the thread it needs.
  /// - Parameters:
  ///   - action: The action being handled.
  ///   - store: The store whose model `body` changes.
  ///   - body: The work; it must not call ``finish()``: returning finishes the operation.
  public convenience init(
    action: Action, store: Store<Model, Action>,
    body: @escaping @Sendable (ActionOperation<Model, Action>) async throws -> Void
  ) {
    self.init(action: action, store: store) { operation, _, _ in
      // The task runs inside the dispatch that started it (``Dispatcher/drain()`` there would wait for itself); in an
      // all-or-nothing one, dispatches made in the task are part of it (``Reservation``). The dispatcher is the one
      // marked running on this thread, where the dispatch starts the operation.
      let scope =
        ThreadContext.withCurrent { $0.innermostRunning }.map {
          OperationTaskScope.entering($0, operation: operation, reserving: ThreadContext.admission())
        } ?? OperationTaskScope.current
      let task = Task(executorPreference: OperationTaskExecutor.shared) {
        do {
          try await OperationTaskScope.$current.withValue(scope) { try await body(operation) }
          operation.finish()
        } catch {
          operation.finish(throwing: error)
        }
      }
      operation.onCancel { task.cancel() }
    }
  }

  /// The dispatcher the operation's store is registered with, for dispatching follow-up actions
  /// (`operation.dispatcher?.start(action: FeedAction.reload)`) and reading other stores.
  public var dispatcher: Dispatcher? {
    store.dispatcher
  }

  /// A snapshot of the model of the store this operation changes.
  public var model: Model {
    store.model
  }

  /// The model of another store registered with the same dispatcher, by identifier: typically one this store waits
  /// for, which has finished handling the action.
  /// - Parameters:
  ///   - identifier: The other store's identifier.
  ///   - type: The other store's model type.
  /// - Returns: A snapshot of that store's model, or `nil` if no store with that identifier and model type is
  ///   registered.
  ///
  /// While a recorder records the dispatch, it notes which of that store's records the model read is. While
  /// ``Session/verify(against:mode:)`` re-runs the operation, this returns the model the recorded run read, so
  /// that the re-run sees what the app saw, however other dispatches changed that store meanwhile.
  public func model<OtherModel: ModelType>(of identifier: String, as type: OtherModel.Type) -> OtherModel? {
    guard let dispatcher, let other = dispatcher.store(with: identifier) else { return nil }
    // A session's verify re-runs the operation: the model the recorded run read, if the session has it.
    if dispatcher.isReplaying.load(ordering: .relaxed), let replay = dispatcher.replay.withLock({ $0 }),
      let recorded = replay.recordedModel(of: identifier)
    {
      return recorded as? OtherModel
    }
    guard let hooked, let typed = other as? any TypedStore else { return other.anyModel as? OtherModel }
    let reader = store.identifier
    return typed.anyModel { hooked.noteRead(of: identifier, reader: reader) } as? OtherModel
  }

  /// Creates an operation; it runs when the dispatcher starts it.
  /// - Parameters:
  ///   - action: The action being handled.
  ///   - store: The store whose model the block changes.
  ///   - block: The work; it must call `finish()` or `finish(throwing:)` on the operation it receives.
  public init(
    action: Action, store: Store<Model, Action>,
    block: @escaping @Sendable (ActionOperation<Model, Action>, Action, Store<Model, Action>) -> Void
  ) {
    self.action = action
    self.store = store
    self.block = block
  }

  deinit {
    let current = status.load(ordering: .acquiring)
    // Finished, or never started: nothing to tell.
    guard !OperationStatus.isFinished(current), OperationStatus.phase(of: current) != OperationStatus.pending else {
      return
    }
    // Nobody else holds the operation any more: no transition can race with this one.
    let error = DispatchError.releasedWithoutFinishing(storeIdentifier: store.identifier)
    fileFinish(error: error, cancelled: current & OperationStatus.cancelled != 0)
    status.store(OperationStatus.finished(current, failed: true), ordering: .releasing)
    store.leaveForOperation()
    let handlers = state.withLock { $0.takeHandlers() }
    handlers.notify(error)
  }

  /// Changes the store's model atomically and announces the change at once, with this operation's action.
  ///
  /// Each call is one change: observers hear it exactly once, with the model this call produced, in the order of
  /// the store's changes, also while other threads change the same store. A synchronous observer hears it before
  /// this returns, so before the operation can finish, except while the thread that delivers (or will deliver) the
  /// store's notifications is blocked in a `.sync` dispatch an observer made: the change is then queued for that
  /// thread (see Threading). ``Reducer/shouldNotifyObservers(for:in:)`` is asked once per call.
  /// - Parameter body: Mutates the model in place and may return a value.
  /// - Returns: What `body` returned.
  /// - Throws: What `body` threw; the mutations it made before throwing are kept, and announced.
  ///
  /// > Important: `body` runs under the store's lock: keep it short, and do not read or update this store from
  /// > inside it (that traps: the lock is not recursive).
  @inlinable
  @discardableResult
  public func updateModel<Value, Failure: Error>(
    _ body: (inout Model) throws(Failure) -> Value
  ) throws(Failure) -> Value {
    try store.change(by: action, operation: hooked != nil ? self : nil, body).get()
  }

  /// Files the entry of the change just made to the store's model, in its critical section, while a hook follows
  /// the operation: the entry holds the model this change produced and takes its place in the order of the store's
  /// changes (proposal 0014, section 2).
  ///
  /// Called under the store's lock, after the change. A change made once the operation claimed its filing at finish
  /// is not filed here: the finish files it if it takes the store's lock after the change, and otherwise the store's
  /// next entry holds it (the store's version moved).
  ///
  /// Inlinable, so that it is compiled for the store's types: unspecialised, reading the generic state would look up
  /// its type's metadata at every change.
  @inlinable
  func fileChange(_ state: inout StoreState<Model, Action>) {
    guard let hooked, !hasClaimedFiling else { return }
    state.filedVersion = state.version
    // `nil` for a store the hook leaves out.
    guard
      let filed = hooked.fileChange(
        store: store.identifier, action: action, model: state.model, change: changeCount, first: firstChangeIndex)
    else { return }
    state.filedEvent = filed.event
    // The lowest: a move back and a dispatch may have dropped the first, and this one took a lower position.
    if firstChangeIndex < 0 || filed.index < firstChangeIndex { firstChangeIndex = filed.index }
    changeCount &+= 1
  }

  /// Whether the operation finished and claimed its filing (``fileFinish(error:cancelled:)``).
  @usableFromInline
  var hasClaimedFiling: Bool {
    status.load(ordering: .acquiring) & OperationStatus.filed != 0
  }

  /// Marks the operation as successfully finished.
  ///
  /// > Important: Call it exactly once, from any thread; later calls are ignored.
  public func finish() {
    complete(with: nil)
  }

  /// Marks the operation as failed; the dispatch that ran it fails with this error.
  /// - Parameter error: Why the operation failed.
  ///
  /// > Important: Call it at most once instead of ``finish()``; later calls are ignored.
  public func finish(throwing error: any Error) {
    complete(with: error)
  }

  /// Whether the dispatch running this operation was cancelled (``DispatchHandle/cancel()``).
  ///
  /// Long or repeated work can check it and stop early; the operation must still finish (``finish()``, or
  /// ``finish(throwing:)`` with a `CancellationError` or an error of yours).
  public var isCancelled: Bool {
    status.load(ordering: .acquiring) & OperationStatus.cancelled != 0
  }

  /// Calls `handler` once if the dispatch running this operation is cancelled: at once, on the calling thread, if
  /// it already was; otherwise on the cancelling thread.
  /// - Parameter handler: Stops the operation's work (cancels a request, a timer); it must not block.
  public func onCancel(_ handler: @escaping @Sendable () -> Void) {
    let cancelled = state.withLock { state -> Bool in
      guard status.load(ordering: .acquiring) & OperationStatus.cancelled == 0 else { return true }
      state.cancelHandlers.append(handler)
      return false
    }
    if cancelled { handler() }
  }

  /// Whether the operation has finished, successfully or not.
  var isFinished: Bool {
    OperationStatus.isFinished(status.load(ordering: .acquiring))
  }

  /// Whether something registered to hear this operation finish.
  ///
  /// That is a dispatch that found it still running when its start returned. Tests use it
  /// to finish an operation only once it is late.
  var isAwaited: Bool {
    status.load(ordering: .acquiring) & OperationStatus.hasHandlers != 0
  }

  // MARK: - Implementation

  private func complete(with error: (any Error)?) {
    // Filed before the operation counts as finished: whoever hears it finish finds the entry.
    if hooked != nil, !isFinished { fileFinish(error: error, cancelled: isCancelled) }
    if error == nil {
      // Running, with nobody to tell: succeed without the lock.
      var current = status.load(ordering: .relaxed)
      while OperationStatus.phase(of: current) == OperationStatus.running,
        current & OperationStatus.hasHandlers == 0
      {
        let (exchanged, original) = status.compareExchange(
          expected: current, desired: OperationStatus.finished(current, failed: false),
          ordering: .acquiringAndReleasing)
        if exchanged {
          store.leaveForOperation()
          return
        }
        current = original
      }
    }
    let handlers = state.withLock { state -> Handlers? in
      // Ignored if the operation had finished. The error is only read under this lock, so it is set after the phase.
      let previous = update { current in
        OperationStatus.isFinished(current) ? nil : OperationStatus.finished(current, failed: error != nil)
      }
      guard previous != nil else { return nil }
      state.error = error
      return state.takeHandlers()
    }
    // Consumed, not copied: a copy would retain and release every handler.
    guard case .some(let handlers) = consume handlers else { return }
    store.leaveForOperation()
    handlers.notify(error)
  }

  /// Files what the operation's finish leaves for the hook, if one follows it, once: its entry if it filed none at
  /// its changes, otherwise its outcome (``Store/fileFinishedOperation(_:_:)``).
  private func fileFinish(error: (any Error)?, cancelled: Bool) {
    guard let hooked else { return }
    // `finish()` may be called twice, from two threads: the first to set the flag files the entry.
    guard update({ $0 & OperationStatus.filed == 0 ? $0 | OperationStatus.filed : nil }) != nil else { return }
    // The duration, on the coarse clock the transaction identifier came from. (A reduction in place takes less than
    // that clock's tick; its entries say zero without reading it.)
    let now = TransactionID.now()
    let started = hooked.transactionID.rawValue
    let finished = FinishedOperation(
      error: error, cancelled: cancelled, elapsed: now > started ? now - started : 0, hooked: hooked,
      operation: self)
    withUnsafePointer(to: finished) { _ = store.specialised(store, action, .fileFinished($0)) }
  }

  private func runBlock() {
    block(self, action, store)
  }

  /// Applies `transition` to the status until it is stored (compare-and-swap); returns the status it replaced, or
  /// `nil` if `transition` returned `nil` (no change).
  @discardableResult
  private func update(_ transition: (UInt8) -> UInt8?) -> UInt8? {
    var current = status.load(ordering: .acquiring)
    while let desired = transition(current) {
      let (exchanged, original) = status.compareExchange(
        expected: current, desired: desired, ordering: .acquiringAndReleasing)
      if exchanged { return current }
      current = original
    }
    return nil
  }

  /// The error of a failed operation; `nil` if it succeeded.
  private var finishedError: (any Error)? {
    state.withLock { $0.error }
  }
}

// MARK: - Starting (internal)

/// Something that reacts to an operation finishing; the dispatcher's runs are.
protocol OperationCompletionHandler: AnyObject, Sendable {
  /// Called once, after the operation's internal lock was released.
  func operationFinished(token: Int, error: (any Error)?)
}

/// The type-erased face of an ``ActionOperation`` that the dispatcher uses.
protocol OperationStarting: AnyObject, Sendable {
  /// Registers `handler`, then starts the operation if it has not started; a finished operation calls `handler`
  /// at once.
  func start(notifying handler: any OperationCompletionHandler, token: Int)
  /// Starts the operation, if it has not started, with nobody registered to hear when it finishes; returns how
  /// far it got by the time its start returned.
  ///
  /// A caller that gets ``OperationOutcome/unfinished`` registers a handler with ``start(notifying:token:)``, which
  /// then only registers it (or calls it at once, if the operation finished meanwhile).
  func startUnobserved() -> OperationOutcome
  /// Tells the operation that the dispatch running it was cancelled; later calls do nothing.
  func cancel()
  /// Makes the operation file its transaction's entries with the hook, at its changes or when it finishes; called
  /// before it starts.
  func attach(_ hooked: HookedTransaction)
}

/// How far an operation got.
enum OperationOutcome {
  case unfinished
  case succeeded
  case failed(any Error)
}

/// The handlers of one operation: one inline slot, since an operation almost always has exactly one.
enum Handlers {
  case none
  case one(any OperationCompletionHandler, token: Int)
  case many([(handler: any OperationCompletionHandler, token: Int)])

  mutating func append(_ handler: any OperationCompletionHandler, token: Int) {
    switch self {
    case .none:
      self = .one(handler, token: token)
    case .one(let first, let firstToken):
      self = .many([(first, firstToken), (handler, token)])
    case .many(var list):
      self = .none  // So that `list` is the array's only reference, and grows in place.
      list.append((handler, token))
      self = .many(list)
    }
  }

  /// Tells every handler, then releases them.
  ///
  /// Consuming, and moving the handlers out by `switch consume`: a copy would retain and release each.
  consuming func notify(_ error: (any Error)?) {
    switch consume self {
    case .none:
      break
    case .one(let handler, let token):
      handler.operationFinished(token: token, error: error)
    case .many(let list):
      for entry in list { entry.handler.operationFinished(token: entry.token, error: error) }
    }
  }
}

extension ActionOperation: OperationStarting {
  func start(notifying handler: any OperationCompletionHandler, token: Int) {
    let action = state.withLock { state -> OperationStartAction in
      var pending = false
      let previous = update { current in
        if OperationStatus.isFinished(current) { return nil }
        pending = OperationStatus.phase(of: current) == OperationStatus.pending
        let registered = current | OperationStatus.hasHandlers
        guard pending else { return registered }
        return OperationStatus.running(registered)
      }
      guard previous != nil else { return .alreadyFinished }
      state.handlers.append(handler, token: token)
      return pending ? .run : .none
    }
    switch action {
    case .alreadyFinished: handler.operationFinished(token: token, error: finishedError)
    case .run: runBlock()
    case .none: break
    }
  }

  func startUnobserved() -> OperationOutcome {
    // Nobody registered: start without the lock. (A cancellation may have set its flag while the operation was
    // pending: the phase alone decides whether it starts.)
    if update({ OperationStatus.phase(of: $0) == OperationStatus.pending ? OperationStatus.running($0) : nil }) != nil {
      runBlock()
    }
    let now = status.load(ordering: .acquiring)
    switch OperationStatus.phase(of: now) {
    case OperationStatus.succeeded: return .succeeded
    case OperationStatus.failed:
      return .failed(finishedError ?? DispatchError.releasedWithoutFinishing(storeIdentifier: store.identifier))
    default: return .unfinished
    }
  }

  func attach(_ hooked: HookedTransaction) {
    self.hooked = hooked
  }

  func cancel() {
    // Set before the handlers are taken under the lock, so that one registering after sees it.
    let (previous, _) = status.bitwiseOr(OperationStatus.cancelled, ordering: .acquiringAndReleasing)
    guard previous & OperationStatus.cancelled == 0 else { return }
    let handlers = state.withLock { state in
      defer { state.cancelHandlers = [] }
      return state.cancelHandlers
    }
    for handler in handlers { handler() }
  }
}

// MARK: - State (top level, not nested in the generic class, so that unspecialised code finds its metadata at once)

/// The bits of an operation's status word: its phase (the low three bits), and flags.
enum OperationStatus {
  static let pending: UInt8 = 0
  static let running: UInt8 = 2
  static let succeeded: UInt8 = 3
  static let failed: UInt8 = 4
  static let phaseMask: UInt8 = 0b111
  /// A handler registered to hear the operation finish: finishing must take the lock to tell it.
  static let hasHandlers: UInt8 = 0b1000
  /// The dispatch running the operation was cancelled.
  static let cancelled: UInt8 = 0b10_0000
  /// The operation finished and claimed its filing (a hook follows the dispatch): a later change is not filed.
  static let filed: UInt8 = 0b100_0000

  static func phase(of status: UInt8) -> UInt8 { status & phaseMask }
  static func isFinished(_ status: UInt8) -> Bool { phase(of: status) >= succeeded }
  static func withPhase(_ status: UInt8, _ phase: UInt8) -> UInt8 { status & ~phaseMask | phase }
  static func finished(_ status: UInt8, failed: Bool) -> UInt8 { withPhase(status, failed ? Self.failed : succeeded) }
  static func running(_ status: UInt8) -> UInt8 { withPhase(status, running) }
}

/// The mutable state of an ``ActionOperation`` beside its status word, behind its lock.
struct OperationState {
  var error: (any Error)?
  var handlers = Handlers.none
  /// What ``ActionOperation/onCancel(_:)`` registered.
  var cancelHandlers: [@Sendable () -> Void] = []

  /// Moves the handlers out, leaving none: a swap, so that nothing is retained or released.
  mutating func takeHandlers() -> Handlers {
    var taken = Handlers.none
    swap(&taken, &handlers)
    return taken
  }
}

/// What `start(notifying:token:)` does once the lock is released.
enum OperationStartAction {
  case none
  case run
  case alreadyFinished
}
