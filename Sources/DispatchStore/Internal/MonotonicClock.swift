#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Nanoseconds on the system's monotonic clock, for transaction durations.
///
/// A direct `clock_gettime` read, lighter than `ContinuousClock.now` on Linux: a transaction whose duration a
/// middleware needs reads the clock twice.
enum MonotonicClock {
  @inline(__always)
  static func nanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
  }
}
