import Dispatch

/// A FIFO lane of dispatches (`.serial` or `.mainThread`): each starts on the lane's executor after the previous
/// one finished.
///
/// One hop to the executor drains many dispatches. A drain runs the queued dispatches one after another on the
/// executor's thread for as long as each finishes before its start returns (most do). A dispatch whose operation
/// finishes later on another thread stalls the lane; its completion calls ``jobDone(dispatcher:)``, which
/// schedules the next drain. Decisions are made under the lock by ``State``; the hops and the dispatches
/// themselves run after it was released.
final class Lane: Sendable {
  /// One queued dispatch.
  struct Job: Sendable {
    let storeIdentifier: String?
    let action: any ActionType
    let completion: Dispatcher.Completion?
    /// The interceptors to run first, in the lane, and who hears what they made of the action; `nil` when none was
    /// registered.
    var intercepted: InterceptedJob? = nil
    /// The dispatch's handle, if it was made with ``Dispatcher/start(action:to:mode:options:)``.
    var handle: DispatchHandle? = nil
    /// The all-or-nothing dispatch it was made inside, whose held stores it passes (``ThreadContext/admission()``).
    var admitted: Reservation? = nil
  }

  /// A job's interceptors, and where its report goes.
  struct InterceptedJob: Sendable {
    let chain: InterceptorChain
    /// The dispatch as a ``FollowingInterceptor`` follows it, told its result after `report`; `nil` when no such
    /// interceptor is registered.
    let followed: InterceptedDispatch?
    let report: @Sendable (DispatchReport) -> Void

    /// - Parameter dispatchID: The id of the dispatch's handle, if it has one.
    init(chain: InterceptorChain, dispatchID: TransactionID?, report: @escaping @Sendable (DispatchReport) -> Void) {
      self.chain = chain
      guard chain.follow else {
        followed = nil
        self.report = report
        return
      }
      let followed = InterceptedDispatch(id: dispatchID)
      self.followed = followed
      self.report = { outcome in
        report(outcome)
        followed.finish(outcome.result)
      }
    }

    private init(
      chain: InterceptorChain, followed: InterceptedDispatch?, report: @escaping @Sendable (DispatchReport) -> Void
    ) {
      (self.chain, self.followed, self.report) = (chain, followed, report)
    }

    /// The same job, whose report then ends its count in `inFlight`.
    func counted(in inFlight: InFlightCount) -> InterceptedJob {
      let report = report
      return InterceptedJob(chain: chain, followed: followed) { outcome in
        report(outcome)
        inFlight.end()
      }
    }
  }

  enum Executor: Sendable {
    case queue(DispatchQueue)
    case main(MainQueue)

    func schedule(_ work: @escaping @Sendable () -> Void) {
      switch self {
      case .queue(let queue): queue.async(execute: work)
      case .main(let mainQueue): mainQueue.schedule(work)
      }
    }
  }

  /// Dispatches one drain runs before it hops again, so that other work on the executor's thread (main-thread
  /// observer notifications, for example) is not held off by a long burst.
  static let batchSize = 64

  struct State {
    var pending = FIFOQueue<Job>()
    /// A drain is scheduled or running; only it starts jobs.
    var isDraining = false
    /// A job started and has not finished.
    var jobInFlight = false
    /// The all-or-nothing dispatches that the job in flight waits for.
    var parkedBehind: [Waited] = []
    /// Entries of `parkedBehind` dropped under the lock, to release after it (a holder may hold the last reference to
    /// a store, whose model's `deinit` is the app's code).
    var released: [Waited] = []

    /// An all-or-nothing dispatch the job in flight waits for: what waits for it (a start parked at a store it holds,
    /// or the job's own all-or-nothing reservation), and the lane its jobs run in meanwhile, in their order.
    struct Waited {
      let holder: Reservation
      let waiter: any HolderWaiter
      let side: Lane
    }

    enum Next {
      case run(Job)
      /// Stop draining: nothing is queued, or the running job finishes later (its completion reschedules).
      case stop
      /// Hop again before running more (the batch is used up).
      case reschedule
    }

    /// What ``enqueue(_:)`` decided about a job.
    enum Enqueued {
      /// Queued behind the jobs before it; a drain is running or scheduled, or the job in flight schedules it.
      case queued
      /// Queued; the caller schedules a drain.
      case drain
      /// Not queued: it is part of an all-or-nothing dispatch that the job in flight waits for, which may await it.
      /// It runs beside the lane, in this lane of that dispatch's jobs.
      case beside(Lane)
    }

    /// Appends `job`, unless it is part of a dispatch the job in flight waits for
    /// (``parked(behind:waiter:side:)``).
    mutating func enqueue(_ job: Job) -> Enqueued {
      if !parkedBehind.isEmpty, let waited = waited(for: job) { return .beside(waited.side) }
      pending.append(job)
      guard !isDraining && !jobInFlight else { return .queued }
      isDraining = true
      return .drain
    }

    /// The job in flight waits for `holder`: returns the queued jobs that are part of `holder`, taken out of the
    /// queue, in order, to run in `side` (behind the job in flight, they would wait for the holder, which may await
    /// them).
    mutating func parked(behind holder: Reservation, waiter: any HolderWaiter, side: Lane) -> [Job] {
      guard jobInFlight else { return [] }
      parkedBehind.append(Waited(holder: holder, waiter: waiter, side: side))
      guard pending.storage[pending.head...].contains(where: { $0.map { waited(for: $0) != nil } ?? false })
      else { return [] }
      var kept = FIFOQueue<Job>()
      var beside: [Job] = []
      while let job = pending.popFirst() {
        if waited(for: job)?.side === side { beside.append(job) } else { kept.append(job) }
      }
      pending = kept
      return beside
    }

    /// The dispatch the job in flight still waits for that `job` was made inside, if any.
    private func waited(for job: Job) -> Waited? {
      guard let admitted = job.admitted else { return nil }
      return parkedBehind.first { waited in
        (admitted === waited.holder || admitted.isInside(waited.holder))
          && waited.waiter.stillWaits(behind: waited.holder)
      }
    }

    /// The job in flight ended: it waits for nobody.
    private mutating func forgetWaits() {
      guard !parkedBehind.isEmpty else { return }
      released.append(contentsOf: parkedBehind)
      parkedBehind = []
    }

    /// The drain's next step, after `ran` jobs in this batch, the last of which finished before its start
    /// returned if `finishedInline`.
    mutating func next(ran: Int, finishedInline: Bool) -> Next {
      if finishedInline {
        jobInFlight = false
        forgetWaits()
      }
      if jobInFlight {
        // The last job finishes later: its completion schedules the next drain.
        isDraining = false
        return .stop
      }
      if ran == Lane.batchSize {
        return pending.isEmpty ? stopDraining() : .reschedule
      }
      guard let job = pending.popFirst() else { return stopDraining() }
      jobInFlight = true
      return .run(job)
    }

    /// The running job finished; returns whether the caller must schedule a drain.
    mutating func jobDone() -> Bool {
      jobInFlight = false
      forgetWaits()
      guard !isDraining, !pending.isEmpty else { return false }  // A running drain continues by itself.
      isDraining = true
      return true
    }

    /// The entries dropped since the last call, for the caller to release after the lock.
    mutating func takeReleased() -> [Waited] {
      guard !released.isEmpty else { return [] }
      defer { released = [] }
      return released
    }

    private mutating func stopDraining() -> Next {
      isDraining = false
      return .stop
    }
  }

  let executor: Executor
  /// Where the lane's operations start and completions run.
  let placement: DispatchRun.Placement
  private let state = LockedValue(State())

  init(executor: Executor, placement: DispatchRun.Placement) {
    self.executor = executor
    self.placement = placement
  }

  /// Appends `job`; it starts once every earlier job finished.
  ///
  /// A job made inside an all-or-nothing dispatch that the job in flight waits for starts beside the lane instead,
  /// on the same executor: it is part of that dispatch, which may await it (``parked(behind:waiter:dispatcher:)``).
  func enqueue(_ job: Job, dispatcher: Dispatcher) {
    switch state.withLock({ $0.enqueue(job) }) {
    case .queued: break
    case .drain: scheduleDrain(dispatcher: dispatcher)
    case .beside(let side): side.enqueue(job, dispatcher: dispatcher)
    }
  }

  /// The job in flight waits for `holder`, which holds a store it needs: the jobs of the lane that are part of
  /// `holder` run beside the lane from now on, those queued already included, while `waiter` still waits.
  ///
  /// Called on the thread running the job, inside its start.
  func parked(behind holder: Reservation, waiter: any HolderWaiter, dispatcher: Dispatcher) {
    let side = Lane(executor: executor, placement: placement)
    // The jobs taken out are queued in `side` under this lane's lock, so that a job of the holder enqueued after it
    // lands behind them. (`side`'s lock is only ever taken inside this one, never the reverse.)
    let drains = state.withLock { state -> Bool in
      var drains = false
      for job in state.parked(behind: holder, waiter: waiter, side: side) {
        if case .drain = side.state.withLock({ $0.enqueue(job) }) { drains = true }
      }
      return drains
    }
    if drains { side.scheduleDrain(dispatcher: dispatcher) }
  }

  /// Whether the job in flight waits for an all-or-nothing dispatch, with its start parked at a store it holds.
  var isParked: Bool {
    state.withLock { !$0.parkedBehind.isEmpty }
  }

  /// Removes the jobs waiting in the lane, and in the lanes its job in flight's holders' jobs run in, and returns
  /// them, in order; the ones running go on.
  func takePending() -> [Job] {
    let (jobs, sides) = state.withLock { state in
      var jobs: [Job] = []
      while let job = state.pending.popFirst() { jobs.append(job) }
      return (jobs, state.parkedBehind.map(\.side))
    }
    return jobs + sides.flatMap { $0.takePending() }
  }

  /// Called by the completion of a job that finished after its start returned.
  func jobDone(dispatcher: Dispatcher) {
    let (schedule, released) = state.withLock { state in (state.jobDone(), state.takeReleased()) }
    withExtendedLifetime(released) {}  // Released here, after the lock.
    if schedule { scheduleDrain(dispatcher: dispatcher) }
  }

  fileprivate func scheduleDrain(dispatcher: Dispatcher) {
    executor.schedule { [self] in drain(dispatcher: dispatcher) }
  }

  private func drain(dispatcher: Dispatcher) {
    var ran = 0
    var finishedInline = false
    while true {
      let (next, released) = state.withLock { state in
        (state.next(ran: ran, finishedInline: finishedInline), state.takeReleased())
      }
      withExtendedLifetime(released) {}  // Released here, after the lock.
      switch next {
      case .stop:
        return
      case .reschedule:
        scheduleDrain(dispatcher: dispatcher)
        return
      case .run(let job):
        ran += 1
        finishedInline = dispatcher.runLaneJob(job, on: self)
      }
    }
  }
}

/// What a lane's job in flight waits for an all-or-nothing dispatch with: a start parked at a store that dispatch
/// holds (``ParkedStart``), or the job's own all-or-nothing dispatch, queued behind it (``Reservation``).
protocol HolderWaiter: AnyObject, Sendable {
  /// Whether it still waits for `holder`.
  func stillWaits(behind holder: Reservation) -> Bool
}
