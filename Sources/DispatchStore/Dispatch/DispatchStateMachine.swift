import Dispatch

/// The state of one ``DispatchRun``: which stores wait, which are ready, who is starting them, the failures and
/// the result.
///
/// A value type: each event decides, under the run's lock once the run is shared (on the dispatching thread alone
/// before), and returns what to do, which the run does after the lock (starting stores, completing), as
/// swift-async-algorithms' state machines do.
///
/// No user code, no lock and no thread here, so that every decision of a run is made in one place. The fields are
/// internal only so that Swift's memberwise initialiser builds the machine in place (an initialiser of its own
/// copies the whole machine per dispatch; proposal 0008 has the measurements); the run changes them only through
/// the events below.
struct DispatchStateMachine: Sendable {
  /// How many stores the run has, one per node.
  let nodeCount: Int
  /// Who waits for whom, counted down as stores finish; `nil` when nobody waits.
  var graph: WaitGraph?
  var unfinished: Int
  /// The watched transactions of the stores still running after their start, by node, when middleware watches
  /// the run; empty (not allocated) until one is.
  var nodes: [StoreTransaction.Watch?] = []
  var failures: [(node: Int, failure: OperationFailure)] = []
  /// The nodes that must not start, each with the node it waits for that failed.
  ///
  /// A node that did not start for this reason counts as failed for the nodes waiting for it. Empty, and not
  /// allocated, while nothing failed.
  var failedTargets: [Int: Int] = [:]
  /// Nodes ready to start, taken by the starter in order; this keeps long wait chains off the stack.
  var ready = ReadyQueue()
  /// The thread starting nodes, by its ``ThreadContext``; `nil` when none is.
  var starter: ObjectIdentifier?
  /// Set once, when the last store finished (for a run that ``endsLater``, once it ended).
  var result: Result<Void, DispatchError>?
  var waiter: DispatchSemaphore?
  /// Whether the run does more after its last store finished (an all-or-nothing dispatch releases its stores):
  /// the result is then set by ``ended(with:)``.
  var endsLater = false

  /// Makes the state of a run of `count` stores, with `graph` if any store waits.
  @inline(__always)
  static func start(count: Int, graph: consuming WaitGraph?) -> DispatchStateMachine {
    DispatchStateMachine(nodeCount: count, graph: graph, unfinished: count)
  }

  // MARK: - Events

  /// The run starts: every store that waits for nobody is ready, in node order.
  @inline(__always)
  mutating func runStarted() {
    for index in 0..<nodeCount where (graph?.waitCount(of: index) ?? 0) == 0 { ready.append(index) }
  }

  /// A thread would start ready stores.
  ///
  /// Returns the first for it to start (it is then the starter), or `nil` if another thread is starting them (it
  /// starts these too, in order) or none is ready.
  @inline(__always)
  mutating func startRequested(by thread: ObjectIdentifier) -> Int? {
    guard starter == nil, let first = ready.popFirst() else { return nil }
    starter = thread
    return first
  }

  /// Store `index`, whose transaction middleware watches, is still running after its start.
  @inline(__always)
  mutating func storeRunning(_ index: Int, watch: StoreTransaction.Watch) {
    if nodes.isEmpty { nodes = Array(repeating: nil, count: nodeCount) }
    nodes[index] = watch
  }

  /// The watched transaction of store `index`, which is still running, if middleware watches the dispatch.
  @inline(__always)
  func watch(of index: Int) -> StoreTransaction.Watch? {
    nodes.isEmpty ? nil : nodes[index]
  }

  /// The starter, which held the state alone, shares it: it is still the starter.
  @inline(__always)
  mutating func sharedByStarter(_ thread: ObjectIdentifier) {
    starter = thread
  }

  /// The starter finished starting a store.
  ///
  /// Returns the next ready store, or `nil`, which ends its turn.
  @inline(__always)
  mutating func starterNeedsNext() -> Int? {
    if let next = ready.popFirst() { return next }
    starter = nil
    return nil
  }

  /// What the run does after a store finished.
  struct AfterStoreFinished {
    /// A store made ready that the finishing thread, the starter, starts next itself.
    var handedOff: Int?
    /// Stores were made ready and no thread is starting them: the finishing thread must.
    var startsReady = false
    /// The run completed: its result, and the thread waiting for it, to wake.
    var completion: (result: Result<Void, DispatchError>, waiter: DispatchSemaphore?)?
    /// The last store of a run that ``endsLater`` finished: what the stores' results make, for it to end with.
    var ending: Result<Void, DispatchError>?
  }

  /// A store finished, with its failure if it failed.
  ///
  /// `thread` is the finishing thread, `nil` for the starter right after the store's start returned.
  /// `mayHandOff`: the starter has no store handed to it yet.
  mutating func storeFinished(
    _ index: Int, failure: OperationFailure?, on thread: ObjectIdentifier?, mayHandOff: @autoclosure () -> Bool
  ) -> AfterStoreFinished {
    // A thread already starting stores picks the new ones up: it pops them after this, or, if it is this thread
    // (the store finished inside or right after its start), takes the first handed to it.
    let isStarter = thread == nil || starter == thread
    // Asked only of the starter: the hand-off slot is the starter's own (another thread must not even read it).
    let finished = finish(index, failure: failure, takeFirstReady: isStarter && mayHandOff())
    var after = AfterStoreFinished(handedOff: finished.handedOff, startsReady: finished.madeReady && starter == nil)
    if finished.completed {
      if let result { after.completion = (result, waiter) } else { after.ending = finished.outcome }
    }
    return after
  }

  /// A run that ``endsLater`` ended with `result`: sets it; returns the thread waiting for it, to wake.
  mutating func ended(with result: Result<Void, DispatchError>) -> DispatchSemaphore? {
    self.result = result
    return waiter
  }

  /// Store `index` finished while the starting thread holds the state alone: as
  /// ``storeFinished(_:failure:on:mayHandOff:)`` for the starter, without the lock; returns the store it starts next,
  /// if it made one ready.
  @inline(__always)
  mutating func storeFinishedAlone(_ index: Int, failure: OperationFailure?) -> Int? {
    finish(index, failure: failure, takeFirstReady: true).handedOff
  }

  /// The next ready store, while the starting thread holds the state alone.
  @inline(__always)
  mutating func nextReadyAlone() -> Int? {
    ready.popFirst()
  }

  /// What a caller waiting for the result does.
  enum AwaitAction {
    case done(Result<Void, DispatchError>)
    /// Wait on it; the run signals it when it completes, and the result is then read again.
    case wait(DispatchSemaphore)
  }

  /// A caller waits for the result.
  mutating func resultAwaited() -> AwaitAction {
    if let result { return .done(result) }
    let semaphore = DispatchSemaphore(value: 0)
    waiter = semaphore
    return .wait(semaphore)
  }

  /// The node that `index` waits for and that failed, if one did: `index` then does not start.
  @inline(__always)
  func failedTarget(of index: Int) -> Int? {
    failedTargets.isEmpty ? nil : failedTargets[index]
  }

  // MARK: - Counting down

  /// Node `index` failed: its failure is kept for the result, and the nodes waiting for it do not start (each
  /// finishes, when its turn comes, with this one named).
  ///
  /// Out of line: the path where nothing fails stays small enough to inline.
  @inline(never)
  private mutating func failed(_ index: Int, with failure: OperationFailure) {
    failures.append((index, failure))
    guard let graph else { return }
    for dependent in graph.dependents(of: index) where failedTargets[dependent] == nil {
      failedTargets[dependent] = index
    }
  }

  /// Counts node `index` as finished, with its failure if it failed; sets the result once every node finished.
  ///
  /// With `takeFirstReady`, the first node it makes ready is returned rather than queued, if no other node is
  /// ready (nodes start in the order they became ready); `madeReady` says whether any was queued.
  @inline(__always)
  private mutating func finish(
    _ index: Int, failure: OperationFailure?, takeFirstReady: Bool
  ) -> (handedOff: Int?, madeReady: Bool, completed: Bool, outcome: Result<Void, DispatchError>?) {
    if let failure { failed(index, with: failure) }
    let (handedOff, madeReady) = graph?.nodeFinished(index, into: &ready, takeFirst: takeFirstReady) ?? (nil, false)
    unfinished -= 1
    guard unfinished == 0 else { return (handedOff, madeReady, false, nil) }
    let outcome: Result<Void, DispatchError> =
      failures.isEmpty
      ? .success(()) : .failure(.operationsFailed(failures.sorted { $0.node < $1.node }.map(\.failure)))
    if !endsLater { result = outcome }
    return (handedOff, madeReady, true, outcome)
  }
}
