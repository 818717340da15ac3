import Synchronization
import Testing

@testable import DispatchStore

@Suite("Lane", .timeLimit(.minutes(1)), .watchdog)
struct LaneTests {
  /// A lane state driven step by step, recording what each step returned.
  private struct Driver {
    var state = Lane.State()

    mutating func enqueue(_ value: Int) -> Bool {
      let job = Lane.Job(storeIdentifier: nil, action: CounterAction.increase(value), completion: nil)
      guard case .drain = state.enqueue(job) else { return false }
      return true
    }

    mutating func jobDone() -> Bool { state.jobDone() }

    /// The value of the job the drain runs next, or what it does instead.
    mutating func next(ran: Int, finishedInline: Bool) -> String {
      switch state.next(ran: ran, finishedInline: finishedInline) {
      case .stop: return "stop"
      case .reschedule: return "reschedule"
      case .run(let job):
        guard case .increase(let value) = job.action as? CounterAction else { return "unexpected job" }
        return "run \(value)"
      }
    }
  }

  @Test func oneDrainRunsJobsInOrderUntilTheQueueIsEmpty() {
    var lane = Driver()
    var steps: [String] = []
    steps.append("schedule \(lane.enqueue(1))")  // Idle: the caller schedules a drain.
    steps.append("schedule \(lane.enqueue(2))")  // A drain is already scheduled.
    steps.append(lane.next(ran: 0, finishedInline: false))
    steps.append("schedule \(lane.enqueue(3))")  // Picked up by the running drain.
    steps.append(lane.next(ran: 1, finishedInline: true))
    steps.append(lane.next(ran: 2, finishedInline: true))
    steps.append(lane.next(ran: 3, finishedInline: true))
    steps.append("schedule \(lane.enqueue(4))")  // Idle again: a new drain.
    #expect(
      steps == [
        "schedule true", "schedule false", "run 1", "schedule false", "run 2", "run 3", "stop", "schedule true",
      ])
  }

  @Test func aJobThatFinishesLaterStallsTheLaneUntilItIsDone() {
    var lane = Driver()
    var steps: [String] = []
    _ = lane.enqueue(1)
    _ = lane.enqueue(2)
    steps.append(lane.next(ran: 0, finishedInline: false))
    // Job 1 finishes later: the drain stops, and nothing is scheduled for job 2 or 3 until it is done.
    steps.append(lane.next(ran: 1, finishedInline: false))
    steps.append("schedule \(lane.enqueue(3))")
    steps.append("schedule \(lane.jobDone())")  // Job 1 done: the caller schedules a drain.
    steps.append(lane.next(ran: 0, finishedInline: false))
    #expect(steps == ["run 1", "stop", "schedule false", "schedule true", "run 2"])
  }

  @Test func aJobDoneWhileItsDrainIsRunningSchedulesNothing() {
    var lane = Driver()
    var steps: [String] = []
    _ = lane.enqueue(1)
    _ = lane.enqueue(2)
    steps.append(lane.next(ran: 0, finishedInline: false))
    // Job 1's completion ran on another thread before its start returned: the running drain continues.
    steps.append("schedule \(lane.jobDone())")
    steps.append(lane.next(ran: 1, finishedInline: false))
    #expect(steps == ["run 1", "schedule false", "run 2"])
  }

  @Test func aFullBatchHopsAgainInsteadOfHoldingTheThread() {
    var lane = Driver()
    for value in 0...Lane.batchSize { _ = lane.enqueue(value) }
    var steps: [String] = []
    for ran in 0..<Lane.batchSize {
      steps.append(lane.next(ran: ran, finishedInline: ran > 0))
    }
    steps.append(lane.next(ran: Lane.batchSize, finishedInline: true))
    steps.append("schedule \(lane.enqueue(-1))")  // The rescheduled drain is still the lane's.
    steps.append(lane.next(ran: 0, finishedInline: false))
    let expected =
      (0..<Lane.batchSize).map { "run \($0)" } + ["reschedule", "schedule false", "run \(Lane.batchSize)"]
    #expect(steps == expected)
  }

  @Test(arguments: [Dispatcher.Mode.serial, .mainThread])
  func jobsFinishingNowAndLaterKeepOrderAndNeverOverlap(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher()
    let inFlight = Atomic<Int>(0)
    let maximum = Atomic<Int>(0)
    let store = makeCounterStore(
      "mixed",
      onStart: { _, _ in
        let now = inFlight.add(1, ordering: .sequentiallyConsistent).newValue
        maximum.max(now, ordering: .sequentiallyConsistent)
      })
    try dispatcher.register(store: store)
    let completed = Collector<Int>()
    // Several batches, with every third operation finishing later on another thread.
    let count = 3 * Lane.batchSize + 5
    for value in 1...count {
      let action = value % 3 == 0 ? CounterAction.increaseLater(value) : .increase(value)
      dispatcher.dispatch(action: action, mode: mode) { result in
        #expect(result.isSuccess)
        inFlight.subtract(1, ordering: .sequentiallyConsistent)
        completed.append(value)
      }
    }

    #expect(await completed.wait(for: count) == Array(1...count))
    #expect(maximum.load(ordering: .sequentiallyConsistent) == 1)
    #expect(store.model.log == (1...count).map { "mixed+\($0)" })
  }
}
