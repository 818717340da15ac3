import Dispatch
import Foundation
import Testing

/// Ends the test process, naming the test, when a test is still running a minute after its time limit.
///
/// Swift Testing's `.timeLimit` records an issue at the limit and cancels the test, then waits for it to return: a test
/// awaiting something that never comes and does not answer cancellation (a continuation, a semaphore, a dispatch that
/// never finishes) holds the run, and the process, for ever, printing nothing. This trait is the last line behind it:
/// the test's name goes to standard error and the process exits with status 1, so CI fails with a message.
///
/// Applied to each suite (recursively to its tests); a test without a time limit of its own gets `fallback`.
struct Watchdog: SuiteTrait, TestTrait, TestScoping {
  /// How long past its time limit a test may run before the process ends.
  static let grace: Duration = .seconds(60)
  /// The limit of a test that has none.
  static let fallback: Duration = .seconds(300)

  var isRecursive: Bool { true }

  func scopeProvider(for test: Test, testCase: Test.Case?) -> Watchdog? {
    testCase == nil ? nil : self  // each run of a test function; not a suite as a whole
  }

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    let limit = (test.timeLimit ?? Self.fallback) + Self.grace
    let running = Locked(true)
    let name = "\(test.id)"
    Deadlines.shared.after(.nanoseconds(Int(limit / .nanoseconds(1)))) {
      guard running.withLock({ $0 }) else { return }
      Self.endProcess("the test \(name) is still running \(limit) after it started, past its time limit")
    }
    defer { running.withLock { $0 = false } }
    try await function()
  }

  /// Writes `reason` to standard error, unbuffered, and ends the process with status 1 without running exit handlers
  /// (a handler could wait for what the test waits for).
  private static func endProcess(_ reason: String) -> Never {
    FileHandle.standardError.write(Data("\nWatchdog: \(reason); ending the test process.\n".utf8))
    _exit(1)
  }
}

extension Trait where Self == Watchdog {
  /// Ends the test process, naming the test, when a test runs a minute past its time limit (``Watchdog``).
  static var watchdog: Watchdog { Watchdog() }
}
