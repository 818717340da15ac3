import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Runs each test of a suite off Swift's cooperative pool, on a thread of its own at the lowest scheduling priority.
///
/// For suites whose tests compute for seconds without awaiting (large models encoded and verified, long runs of
/// insertions). On the pool, whose threads are as many as the cores (two on CI's machine), two of them at once hold
/// every thread, and the tests that await the pool (an operation's task, a follow-up, a timer) wait past their time
/// limits: the README's test-kit example waited 66 s for its follow-up that way, and failed, in a plain `swift test`.
///
/// At the lowest priority (nice 19, which Linux sets per thread), since Swift Testing starts every test at once:
/// at the default one, the thirty-odd heavy tests ran side by side and left the pool a thirtieth of the cores (in
/// one CI run, hundreds of timed tests past their one-minute limits). In one shared lane instead, a test's time limit
/// ran while it waited its turn. Here the heavy tests take the cores the pool leaves idle.
///
/// The test runs in its own task as before (its issues are its own), with its thread as its task executor: its body
/// and the child tasks it makes run there.
struct OffThePool: SuiteTrait, TestTrait, TestScoping {
  /// Set in the thread-local storage of the threads tests of such a suite run on, for tests to tell where they run.
  static let threadKey = "dev.dispatchstore.tests.off-the-pool"

  /// Whether the calling thread is one that runs tests off the pool.
  static var isCurrentThreadOffThePool: Bool { Thread.current.threadDictionary[threadKey] != nil }

  var isRecursive: Bool { true }

  func scopeProvider(for test: Test, testCase: Test.Case?) -> OffThePool? {
    testCase == nil ? nil : self  // each run of a test function; not a suite as a whole
  }

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    let executor = ThreadExecutor()
    defer { executor.close() }
    try await withTaskExecutorPreference(executor) { try await function() }
  }
}

/// A task executor that runs its jobs, in order, on a thread of its own at the lowest priority; the thread ends once
/// the executor is closed and has no job left (one enqueued later starts another).
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
    #if canImport(Glibc)
      _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)  // this thread's nice value, on Linux
    #endif
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
  /// Runs each test off Swift's cooperative pool, at the lowest priority (``OffThePool``): for tests that compute
  /// for seconds.
  static var offThePool: OffThePool { OffThePool() }
}
