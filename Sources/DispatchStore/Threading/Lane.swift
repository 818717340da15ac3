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

    enum Next {
      case run(Job)
      /// Stop draining: nothing is queued, or the running job finishes later (its completion reschedules).
      case stop
      /// Hop again before running more (the batch is used up).
      case reschedule
    }

    /// Appends `job`; returns whether the caller must schedule a drain.
    mutating func enqueue(_ job: Job) -> Bool {
      pending.append(job)
      guard !isDraining && !jobInFlight else { return false }
      isDraining = true
      return true
    }

    /// The drain's next step, after `ran` jobs in this batch, the last of which finished before its start
    /// returned if `finishedInline`.
    mutating func next(ran: Int, finishedInline: Bool) -> Next {
      if finishedInline { jobInFlight = false }
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
      guard !isDraining, !pending.isEmpty else { return false }  // A running drain continues by itself.
      isDraining = true
      return true
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
  func enqueue(_ job: Job, dispatcher: Dispatcher) {
    let schedule = state.withLock { $0.enqueue(job) }
    if schedule { scheduleDrain(dispatcher: dispatcher) }
  }

  /// Removes the jobs waiting in the lane and returns them, in order; the one running goes on.
  func takePending() -> [Job] {
    state.withLock { state in
      var jobs: [Job] = []
      while let job = state.pending.popFirst() { jobs.append(job) }
      return jobs
    }
  }

  /// Called by the completion of a job that finished after its start returned.
  func jobDone(dispatcher: Dispatcher) {
    let schedule = state.withLock { $0.jobDone() }
    if schedule { scheduleDrain(dispatcher: dispatcher) }
  }

  private func scheduleDrain(dispatcher: Dispatcher) {
    executor.schedule { [self] in drain(dispatcher: dispatcher) }
  }

  private func drain(dispatcher: Dispatcher) {
    var ran = 0
    var finishedInline = false
    while true {
      switch state.withLock({ $0.next(ran: ran, finishedInline: finishedInline) }) {
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
