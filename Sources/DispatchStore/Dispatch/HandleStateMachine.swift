/// The state of a ``DispatchHandle``: its transitions, and who to tell, decided under the handle's lock.
///
/// Events return what the handle does once its lock is released. Notifications go through one queue and are
/// delivered by one thread at a time, so that every observer hears the states in order even when they change on
/// different threads (started on the dispatching thread, completed on the one that finished the last operation).
struct HandleStateMachine {
  typealias Observer = @Sendable (DispatchState) -> Void

  /// One notification waiting to be delivered: the state, and the observer it is for (`nil`: every observer
  /// registered before it was queued).
  struct Notification {
    let state: DispatchState
    let sequence: Int
    let observer: Int?
  }

  /// What the handle does after its lock, following an event.
  struct Effects {
    /// Deliver the notification queue: this thread is now the one delivering it.
    var deliver = false
    /// The final result for those awaiting it, and who awaits it.
    var resume: (Result<Void, DispatchError>, [CheckedContinuation<Result<Void, DispatchError>, Never>])?
    /// Operations to tell that the dispatch was cancelled.
    var cancel: [any OperationStarting] = []
    /// Whether the handle reached its final state (the result is then given to those awaiting it).
    var finished: Bool { resume != nil }
    /// Called with the final result: dispatches that depend on this one.
    var dependents: [@Sendable (Result<Void, DispatchError>) -> Void] = []
    /// The dispatch, counted in flight since it was submitted, ended: count it out (``InFlightCount/end()``), last.
    var endsInFlight = false
    /// The dispatches this one waited for, let go of at its final state: released after the lock, as a handle's
    /// action and observers are the app's.
    var released: [DispatchHandle]?
  }

  /// An operation told if the dispatch is cancelled.
  ///
  /// Held while its start runs; once the start returned, let go of if it finished, and held weakly if not: one its
  /// reducer let go of without finishing is then freed, and its release fails the dispatch
  /// (``DispatchError/releasedWithoutFinishing(storeIdentifier:)``), as it does without a handle. (A weak reference
  /// costs the operation an allocation, which most operations, finished inside their start, do without.)
  enum HeldOperation {
    case starting(any OperationStarting)
    case running(WeakOperation)

    var operation: (any OperationStarting)? {
      switch self {
      case .starting(let operation): operation
      case .running(let weak): weak.operation
      }
    }
  }

  struct WeakOperation {
    weak var operation: (any OperationStarting)?
  }

  private(set) var state = DispatchState.pending
  /// Incremented by every transition: an observer is told only of transitions after its registration.
  private var transitions = 0
  private var observers: [(id: Int, since: Int, observer: Observer)] = []
  private var nextObserverID = 0
  private var queue = FIFOQueue<Notification>()
  private var isDelivering = false
  private var waiters: [CheckedContinuation<Result<Void, DispatchError>, Never>] = []
  /// Operations still running when their start returned, told if the dispatch is cancelled.
  private var running: [HeldOperation] = []
  /// Told the final result: the dispatches waiting for this one (``DispatchHandle/depend(on:)``).
  private var dependents: [@Sendable (Result<Void, DispatchError>) -> Void] = []
  /// The dispatches this one waits for, until it finished (kept after it started, for finding cycles).
  private(set) var dependencies: [DispatchHandle] = []
  private var isStarted = false
  /// What interceptors routed, if they saw the dispatch (``DispatchHandle/dispatchedActions``).
  var dispatchedActions: [any ActionType]?
  /// Whether the dispatch left its queue and ran.
  private(set) var hasStarted = false

  /// Adds a dependency; `false` if the dispatch was started already.
  mutating func dependencyAdded(_ handle: DispatchHandle) -> Bool {
    guard !isStarted else { return false }
    dependencies.append(handle)
    return true
  }

  /// Whether the dispatch is counted in flight (``InFlightCount``): from its submission until its final state.
  private(set) var isInFlight = false

  /// The dispatch is started: returns its dependencies the first time, `nil` after.
  ///
  /// It is in flight from now on, unless it was cancelled before.
  mutating func submitted() -> [DispatchHandle]? {
    guard !isStarted else { return nil }
    isStarted = true
    isInFlight = !state.isFinished
    return dependencies
  }

  /// `body` hears the final result: at once (returned) if the dispatch finished, otherwise when it does.
  mutating func dependentAdded(
    _ body: @escaping @Sendable (Result<Void, DispatchError>) -> Void
  ) -> Result<Void, DispatchError>? {
    if let result = state.result { return result }
    dependents.append(body)
    return nil
  }

  /// The dispatch leaves its queue; `false` if it was cancelled (it must not run).
  mutating func started() -> (run: Bool, effects: Effects) {
    guard case .pending = state else { return (false, Effects()) }
    hasStarted = true
    return (true, transition(to: .started))
  }

  /// The dispatch finished with `result`; ignored if it had already reached a final state (it was cancelled), but for
  /// ending its count in flight, which a cancellation after its start leaves to this end of its run.
  mutating func finished(_ result: Result<Void, DispatchError>) -> Effects {
    guard !state.isFinished else {
      var effects = Effects()
      effects.endsInFlight = isInFlight
      isInFlight = false
      return effects
    }
    switch result {
    case .success: return transition(to: .completed)
    case .failure(let error): return transition(to: .failed(error))
    }
  }

  /// Cancels the dispatch, unless it had finished.
  mutating func cancelled() -> Effects {
    guard !state.isFinished else { return Effects() }
    let told = running.compactMap(\.operation)  // The transition to a final state lets them go.
    var effects = transition(to: .cancelled)
    effects.cancel = told
    return effects
  }

  /// An operation of the dispatch is about to start (`starting`), or is running already; returns `false` if the
  /// dispatch was cancelled meanwhile (tell the operation at once).
  mutating func operationRunning(_ operation: any OperationStarting, starting: Bool) -> Bool {
    if case .cancelled = state { return false }
    if !state.isFinished {
      running.append(starting ? .starting(operation) : .running(WeakOperation(operation: operation)))
    }
    return true
  }

  /// The start of `operation` returned: let go of it if it `finished`, held weakly if not.
  ///
  /// The caller still holds it: nothing is released here.
  mutating func operationStarted(_ operation: any OperationStarting, finished: Bool) {
    // Most often the last one noted: the one a dispatch to one store, or the store started last, is starting.
    let index: Int
    if case .starting(let held)? = running.last, held === operation {
      index = running.count - 1
    } else {
      guard
        let found = running.lastIndex(where: {
          if case .starting(let held) = $0 { return held === operation }
          return false
        })
      else { return }
      index = found
    }
    if !finished {
      running[index] = .running(WeakOperation(operation: operation))
    } else if index == running.count - 1 {
      running.removeLast()
    } else {
      running.remove(at: index)
    }
  }

  /// Registers `observer`, to be told the current state and every later one; returns its identifier.
  mutating func observerAdded(_ observer: @escaping Observer) -> (id: Int, effects: Effects) {
    let id = nextObserverID
    nextObserverID += 1
    observers.append((id, transitions, observer))
    queue.append(Notification(state: state, sequence: transitions, observer: id))
    return (id, Effects(deliver: becomeDeliverer()))
  }

  /// Removes the observer with identifier `id`; returns it, so that it is released after the lock.
  mutating func observerRemoved(_ id: Int) -> Observer? {
    guard let index = observers.firstIndex(where: { $0.id == id }) else { return nil }
    return observers.remove(at: index).observer
  }

  /// Somebody awaits the result: the result at once if the dispatch finished, otherwise `nil` (resumed later).
  mutating func awaited(
    by continuation: CheckedContinuation<Result<Void, DispatchError>, Never>
  ) -> Result<Void, DispatchError>? {
    if let result = state.result { return result }
    waiters.append(continuation)
    return nil
  }

  /// The next notification to deliver and the observers to tell, or `nil` when the queue is empty (the
  /// delivering thread stops); after the final state, also every observer, let go of (`released`) for the caller to
  /// release after the lock.
  mutating func nextNotification() -> (state: DispatchState, observers: [Observer], released: [Observer]?)? {
    guard let notification = queue.popFirst() else {
      isDelivering = false
      return nil
    }
    let told: [Observer]
    if let target = notification.observer {
      told = observers.filter { $0.id == target }.map(\.observer)
    } else {
      told = observers.filter { $0.since < notification.sequence }.map(\.observer)
    }
    var released: [Observer]?
    if notification.state.isFinished, queue.isEmpty {
      // Nothing follows a final state: the observers can go once told.
      released = observers.map(\.observer)
      observers.removeAll()
    }
    return (notification.state, told, released)
  }

  private mutating func transition(to new: DispatchState) -> Effects {
    state = new
    transitions += 1
    var effects = Effects()
    if !observers.isEmpty {
      queue.append(Notification(state: new, sequence: transitions, observer: nil))
      effects.deliver = becomeDeliverer()
    }
    if let result = new.result {
      effects.resume = (result, waiters)
      waiters = []
      running = []
      effects.dependents = dependents
      dependents = []
      if !dependencies.isEmpty {
        effects.released = dependencies
        dependencies = []
      }
      // A dispatch cancelled after it started may still be running: its run's end (``finished(_:)``) ends the count.
      let stillRunning: Bool
      if case .cancelled = new { stillRunning = hasStarted } else { stillRunning = false }
      if !stillRunning {
        effects.endsInFlight = isInFlight
        isInFlight = false
      }
    }
    return effects
  }

  private mutating func becomeDeliverer() -> Bool {
    guard !isDelivering else { return false }
    isDelivering = true
    return true
  }
}
