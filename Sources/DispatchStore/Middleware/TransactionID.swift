import Foundation

/// A unique, time-sortable identifier of one store's handling of one action.
///
/// The raw value is the wall-clock time in nanoseconds since 1970 at which the transaction began (on Linux, to the
/// tick of the coarse real-time clock, a few milliseconds), nudged forward where needed so that identifiers made in
/// one process are strictly increasing: sorting identifiers by ``rawValue`` sorts transactions by start time, and no
/// two are equal.
public struct TransactionID: Hashable, Sendable, CustomStringConvertible {
  /// Nanoseconds since 00:00:00 UTC on 1 January 1970 (`Date(timeIntervalSince1970: Double(rawValue) / 1e9)`).
  public let rawValue: UInt64

  /// Creates an identifier from its raw value, for example one read from a recording.
  /// - Parameter rawValue: Nanoseconds since 00:00:00 UTC on 1 January 1970.
  init(rawValue: UInt64) {
    self.rawValue = rawValue
  }

  /// Makes a new identifier, later than every identifier made before it in this process.
  ///
  /// On Linux the time comes from the coarse real-time clock, accurate to its tick (a few milliseconds). Transaction
  /// durations do not depend on it: they are measured on the monotonic clock.
  /// - Returns: A fresh identifier.
  static func next() -> TransactionID {
    ThreadContext.withCurrent { $0.nextTransactionID() }
  }

  /// The coarse real-time clock, in nanoseconds since 1970: the time part of an identifier.
  @inline(__always)
  static func now() -> UInt64 {
    var spec = timespec()
    #if os(Linux)
      clock_gettime(CLOCK_REALTIME_COARSE, &spec)
    #else
      clock_gettime(CLOCK_REALTIME, &spec)
    #endif
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
  }

  /// A fixed-width hexadecimal form, so that sorting the strings sorts the identifiers.
  public var description: String {
    let hex = String(rawValue, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }
}
