import Foundation
import Testing

/// Runs each test of a suite off Swift's cooperative pool, on a thread of its own, two such tests at a time.
///
/// For suites whose tests compute for seconds without awaiting (large models encoded and verified, long runs of
/// insertions). On the pool, whose threads are as many as the cores (two on CI's machine), two of them at once hold
/// every thread, and the tests that await the pool (an operation's task, a follow-up, a timer) wait past their time
/// limits: the README's test-kit example waited 66 s for its follow-up that way, and failed, in a plain `swift test`.
///
/// Two at a time, since Swift Testing starts every test at once: with no limit, the thirty-odd heavy tests ran side by
/// side and left the pool a thirtieth of the cores (in one CI run, hundreds of timed tests past their one-minute
/// limits). The others wait their turn suspended, holding no thread; the wait counts against their time limits, so the
/// suites marked so have long ones, or none. (At the lowest priority instead, the threads a test makes, the library's
/// and Dispatch's workers among them, would have inherited it.)
///
/// The test runs in its own task as before (its issues are its own), with its thread as its task executor: its body
/// and the child tasks it makes (`async let`, task groups) run there, one at a time, so a test must not block its
/// thread waiting for one. The library's `Task`s do not take the preference, and run on the pool.
struct OffThePool: SuiteTrait, TestTrait, TestScoping {
  /// How many such tests run at once.
  static let lanes = Lanes(2)

  /// Set in the thread-local storage of the threads such tests run on, for tests to tell where they run.
  static let threadKey = "dev.dispatchstore.tests.off-the-pool"

  /// Whether the calling thread is one that runs a test off the pool.
  static var isCurrentThreadOffThePool: Bool { Thread.current.threadDictionary[threadKey] != nil }

  var isRecursive: Bool { true }

  func scopeProvider(for test: Test, testCase: Test.Case?) -> OffThePool? {
    testCase == nil ? nil : self  // each run of a test function; not a suite as a whole
  }

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    await Self.lanes.enter()
    defer { Self.lanes.leave() }
    let executor = ThreadExecutor()
    defer { executor.close() }
    try await withTaskExecutorPreference(executor) { try await function() }
  }

  /// Lets a number of tests in at once; the others wait in order, suspended.
  final class Lanes: Sendable {
    private let state: Locked<(free: Int, waiting: [CheckedContinuation<Void, Never>])>

    init(_ width: Int) {
      state = Locked((width, []))
    }

    /// How many wait their turn.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    func enter() async {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let enters = state.withLock { state in
          guard state.free > 0 else {
            state.waiting.append(continuation)
            return false
          }
          state.free -= 1
          return true
        }
        if enters { continuation.resume() }
      }
    }

    func leave() {
      let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
        guard !state.waiting.isEmpty else {
          state.free += 1
          return nil
        }
        return state.waiting.removeFirst()
      }
      next?.resume()
    }
  }
}

/// A task executor that runs its jobs, in order, on a thread of its own; the thread ends once the executor is closed
/// and has no job left (one enqueued later starts another).
///
/// `@unchecked Sendable`: `jobs`, `isOpen` and `isRunning` are read and written only with `condition` locked.
private final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
  private let condition = NSCondition()
  private var jobs: [UnownedJob] = []
  private var isOpen = true
  private var isRunning = false

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    condition.lock()
    jobs.append(job)
    let start = !isRunning
    isRunning = true
    condition.signal()
    condition.unlock()
    if start { Thread { [self] in run() }.start() }
  }

  /// Lets the thread end once it has run every job.
  func close() {
    condition.lock()
    isOpen = false
    condition.signal()
    condition.unlock()
  }

  private func run() {
    Thread.current.threadDictionary[OffThePool.threadKey] = true
    while true {
      condition.lock()
      while jobs.isEmpty && isOpen { condition.wait() }
      if jobs.isEmpty {
        isRunning = false
        condition.unlock()
        return
      }
      let batch = jobs
      jobs.removeAll()
      condition.unlock()
      for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
  }
}

extension Trait where Self == OffThePool {
  /// Runs each test off Swift's cooperative pool, two such tests at a time (``OffThePool``): for tests that compute
  /// for seconds.
  static var offThePool: OffThePool { OffThePool() }
}
