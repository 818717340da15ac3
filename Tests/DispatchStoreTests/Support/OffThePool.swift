import Dispatch
import Testing

/// Runs each test of a suite off Swift's cooperative pool, on a serial dispatch queue of its own (a thread the system
/// shares the cores with, like any other).
///
/// For suites whose tests compute for seconds without awaiting (large models encoded and verified, long runs of
/// insertions): on the pool, whose threads are as many as the cores (two on CI's machine), two of them at once hold
/// every thread, and the tests that await the pool (an operation's task, a follow-up, a timer) wait past their time
/// limits. The README's test-kit example waited 66 s for its follow-up that way, and failed, in a plain `swift test`.
///
/// The test runs in its own task as before (its issues are its own), with this queue as its task executor: its body
/// and the child tasks it makes run there.
struct OffThePool: SuiteTrait, TestTrait, TestScoping {
  /// Set on the queue each test of such a suite runs on, for tests to tell where they run.
  static let queueKey = DispatchSpecificKey<Bool>()

  var isRecursive: Bool { true }

  func scopeProvider(for test: Test, testCase: Test.Case?) -> OffThePool? {
    testCase == nil ? nil : self  // each run of a test function; not a suite as a whole
  }

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    try await withTaskExecutorPreference(QueueExecutor()) { try await function() }
  }
}

/// A task executor that runs each job on one serial dispatch queue: not a thread of the cooperative pool, since a
/// queue made with `DispatchQueue(label:)` targets the system's overcommitting queue, which adds a thread rather than
/// wait for a busy one.
private final class QueueExecutor: TaskExecutor {
  private let queue: DispatchQueue = {
    let queue = DispatchQueue(label: "dev.dispatchstore.tests.off-the-pool")
    queue.setSpecific(key: OffThePool.queueKey, value: true)
    return queue
  }()

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
  }
}

extension Trait where Self == OffThePool {
  /// Runs each test off Swift's cooperative pool (``OffThePool``): for tests that compute for seconds.
  static var offThePool: OffThePool { OffThePool() }
}
