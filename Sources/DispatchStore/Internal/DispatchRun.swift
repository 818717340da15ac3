import Dispatch
import Synchronization

/// One dispatch of one action to its responding stores: starts each store's operation once the stores it waits
/// for finished, tells middleware, and reports one result when every operation finished.
///
/// All mutable state is in `state`; user code (middleware, reducers, operations, observers, the completion) is
/// only called after the lock was released.
final class DispatchRun<Action: ActionType>: OperationCompletionHandler {
  /// Where operations start.
  enum Placement: Sendable {
    /// On whichever thread makes them ready: the caller, or the thread that finished a store waited for.
    case anyThread
    /// On the main queue's thread.
    case main(MainQueue)
  }

  struct Node: Sendable {
    let store: any ActionHandler<Action>
    var transaction: Transaction
    var started = ContinuousClock.Instant.now
    var remainingWaits: Int
    var dependents: [Int]
  }

  struct State {
    var nodes: [Node]
    var unfinished: Int
    var failures: [(node: Int, failure: OperationFailure)] = []
    /// Nodes ready to start, taken by the thread in `isStarting`; this keeps long wait chains off the stack.
    var ready: [Int] = []
    var isStarting = false
    var result: Result<Void, DispatchError>?
    var waiter: DispatchSemaphore?
  }

  let dispatcherID: ObjectIdentifier
  let action: Action
  let middleware: [any Middleware]
  let placement: Placement
  let onComplete: (@Sendable (Result<Void, DispatchError>) -> Void)?
  private let state: Mutex<State>

  /// Prepares a run, or returns the error that forbids running any operation.
  static func make(
    dispatcher: Dispatcher,
    storeIdentifier: String?,
    action: Action,
    placement: Placement,
    onComplete: (@Sendable (Result<Void, DispatchError>) -> Void)?
  ) -> Result<DispatchRun, DispatchError> {
    let (route, stores, middleware) = dispatcher.registry.withLock(owner: dispatcher) { registry in
      (registry.route(for: Action.self), registry.stores, registry.middleware)
    }
    let targets: [any ActionHandler<Action>]
    if let storeIdentifier {
      guard let store = stores[storeIdentifier] else { return .failure(.unknownStore(identifier: storeIdentifier)) }
      guard let handler = store as? any ActionHandler<Action> else {
        return .failure(
          .actionTypeMismatch(
            storeIdentifier: storeIdentifier, expected: String(reflecting: store.actionType),
            dispatched: String(reflecting: Action.self)))
      }
      targets = [handler]
    } else {
      guard let route, !route.stores.isEmpty else {
        return .failure(.noRespondingStore(actionType: String(reflecting: Action.self)))
      }
      targets = route.stores
    }
    // Reducers' wait lists are user code: asked outside the registry lock.
    let waitLists = targets.map { $0.waitList(for: action) }
    var dependents = Array(repeating: [Int](), count: targets.count)
    var waitCounts = Array(repeating: 0, count: targets.count)
    if waitLists.contains(where: { !$0.isEmpty }) {
      let graph = WaitGraph.make(
        identifiers: targets.map(\.identifier), waitLists: waitLists, isRegistered: { stores[$0] != nil })
      switch graph {
      case .failure(let error): return .failure(error)
      case .success(let graph):
        dependents = graph.dependents
        waitCounts = graph.waitCounts
      }
    }
    let nodes = targets.indices.map { index in
      Node(
        store: targets[index],
        transaction: Transaction(
          id: TransactionID(rawValue: 0), storeIdentifier: targets[index].identifier, action: action),
        remainingWaits: waitCounts[index], dependents: dependents[index])
    }
    return .success(
      DispatchRun(
        dispatcherID: ObjectIdentifier(dispatcher), action: action, middleware: middleware, placement: placement,
        nodes: nodes, onComplete: onComplete))
  }

  private init(
    dispatcherID: ObjectIdentifier, action: Action, middleware: [any Middleware], placement: Placement,
    nodes: [Node], onComplete: (@Sendable (Result<Void, DispatchError>) -> Void)?
  ) {
    self.dispatcherID = dispatcherID
    self.action = action
    self.middleware = middleware
    self.placement = placement
    self.onComplete = onComplete
    self.state = Mutex(State(nodes: nodes, unfinished: nodes.count))
  }

  /// Starts every store that waits for nobody.
  func start() {
    let initial = state.withLock(owner: self) { state in
      state.nodes.indices.filter { state.nodes[$0].remainingWaits == 0 }
    }
    startWhenPlaced(initial)
  }

  /// Blocks the calling thread until the run completed; returns at once if it already has.
  func waitForResult() -> Result<Void, DispatchError> {
    let semaphore = state.withLock(owner: self) { state -> DispatchSemaphore? in
      guard state.result == nil else { return nil }
      let semaphore = DispatchSemaphore(value: 0)
      state.waiter = semaphore
      return semaphore
    }
    semaphore?.wait()
    return state.withLock(owner: self) { $0.result! }
  }

  // MARK: - Starting operations

  private func startWhenPlaced(_ nodes: [Int]) {
    guard !nodes.isEmpty else { return }
    if case .main(let mainQueue) = placement, !mainQueue.isCurrent {
      mainQueue.schedule { [self] in startNow(nodes) }
    } else {
      startNow(nodes)
    }
  }

  /// Starts `nodes` and any that become ready meanwhile on this thread, unless another thread is already doing
  /// so (it then starts them too, in order).
  private func startNow(_ nodes: [Int]) {
    var next = state.withLock(owner: self) { state -> Int? in
      state.ready.append(contentsOf: nodes)
      guard !state.isStarting else { return nil }
      state.isStarting = true
      return state.ready.isEmpty ? nil : state.ready.removeFirst()
    }
    while let node = next {
      startOperation(node)
      next = state.withLock(owner: self) { state -> Int? in
        if state.ready.isEmpty {
          state.isStarting = false
          return nil
        }
        return state.ready.removeFirst()
      }
    }
  }

  private func startOperation(_ index: Int) {
    let transaction = TransactionID.next()
    let node = state.withLock(owner: self) { state -> Node in
      state.nodes[index].transaction = Transaction(
        id: transaction, storeIdentifier: state.nodes[index].store.identifier, action: action)
      state.nodes[index].started = .now
      return state.nodes[index]
    }
    for middleware in middleware {
      middleware.willDispatch(transaction: node.transaction, action: action, in: node.store)
    }
    ThreadContext.current.withRunning(dispatcherID) {
      node.store.startOperation(for: action, notifying: self, token: index)
    }
  }

  // MARK: - Finishing

  func operationFinished(token index: Int, error: (any Error)?) {
    // `finish()` is often called from inside the operation's block: what follows (observers, middleware, the
    // completion) is not part of the operation, so `.sync` dispatch is allowed there.
    ThreadContext.current.withoutRunningDispatchers {
      afterOperationFinished(index, error: error)
    }
  }

  private func afterOperationFinished(_ index: Int, error: (any Error)?) {
    let finished = ContinuousClock.now
    let store = state.withLock(owner: self) { $0.nodes[index].store }
    store.announceChange(for: action)
    let transaction = state.withLock(owner: self) { state -> Transaction in
      state.nodes[index].transaction.duration = finished - state.nodes[index].started
      state.nodes[index].transaction.error = error
      return state.nodes[index].transaction
    }
    for middleware in middleware {
      middleware.didDispatch(transaction: transaction, action: action, in: store)
    }
    let (ready, result) = state.withLock(owner: self) { state -> ([Int], Result<Void, DispatchError>?) in
      if let error {
        state.failures.append(
          (index, OperationFailure(storeIdentifier: store.identifier, transactionID: transaction.id, error: error)))
      }
      var ready: [Int] = []
      for dependent in state.nodes[index].dependents {
        state.nodes[dependent].remainingWaits -= 1
        if state.nodes[dependent].remainingWaits == 0 { ready.append(dependent) }
      }
      state.unfinished -= 1
      guard state.unfinished == 0 else { return (ready, nil) }
      let result: Result<Void, DispatchError> =
        state.failures.isEmpty
        ? .success(()) : .failure(.operationsFailed(state.failures.sorted { $0.node < $1.node }.map(\.failure)))
      return (ready, result)
    }
    startWhenPlaced(ready)
    if let result { complete(with: result) }
  }

  private func complete(with result: Result<Void, DispatchError>) {
    let waiter = state.withLock(owner: self) { state -> DispatchSemaphore? in
      state.result = result
      return state.waiter
    }
    waiter?.signal()
    guard let onComplete else { return }
    if case .main(let mainQueue) = placement, !mainQueue.isCurrent {
      mainQueue.schedule { onComplete(result) }
    } else {
      onComplete(result)
    }
  }
}
