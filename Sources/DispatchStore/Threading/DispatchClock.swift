import Dispatch

/// The time a dispatcher throttles and debounces by: now, and running work after a delay.
///
/// A dispatcher uses the system's monotonic clock unless you give it another; tests give it a clock they advance by
/// hand, so that they never sleep.
public protocol DispatchClock: Sendable {
  /// Now, as the time since a fixed origin of the clock's choosing; it never goes back.
  var now: Duration { get }
  /// Runs `work` once `delay` passed, on a thread of the clock's choosing.
  /// - Parameters:
  ///   - delay: How long to wait; zero or less runs it soon.
  ///   - work: What to run; it may dispatch.
  func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void)
}

/// The system's monotonic clock, scheduling on Dispatch's global queue: a dispatcher's clock unless it is given
/// another.
@usableFromInline
struct SystemDispatchClock: DispatchClock {
  /// Creates the system clock.
  @usableFromInline init() {}

  /// The time since an arbitrary point in the past, from the monotonic clock.
  @usableFromInline var now: Duration {
    .nanoseconds(Int64(bitPattern: MonotonicClock.nanoseconds()))
  }

  /// Runs `work` on Dispatch's global queue once `delay` passed.
  /// - Parameters:
  ///   - delay: How long to wait.
  ///   - work: What to run.
  @usableFromInline func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
    let (seconds, attoseconds) = delay.components
    let nanoseconds = max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds)), execute: work)
  }
}
