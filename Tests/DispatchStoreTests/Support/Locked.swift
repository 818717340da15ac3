import Foundation

/// A value behind an `NSLock`, for test bookkeeping shared across threads.
///
/// Tests use this rather than `Synchronization.Mutex` because `NSLock` is a pthread mutex, which
/// ThreadSanitizer intercepts, so the tests' own bookkeeping never shows up as a false race.
/// `@unchecked Sendable`: `value` is only read or written between `lock()` and `unlock()`.
final class Locked<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Value

  init(_ value: Value) {
    self.value = value
  }

  func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}
