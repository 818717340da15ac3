import Dispatch
import Synchronization

/// How many dispatches of one dispatcher are in flight, for ``Dispatcher/drain()``: those that run apart from their
/// caller (`.async`, `.serial` and `.mainThread` ones), from when they are routed until they end, and those made with
/// a handle, from ``DispatchHandle/start()`` until the handle's final state.
///
/// A `.sync` dispatch without a handle ends before its caller goes on, so it is not counted. One word holds the
/// count (low half) and how many counted dispatches ended so far (high half, wrapping): counting is one atomic add
/// at each end, and the lock is taken only while somebody waits for the count to reach zero. The waiters' flag and
/// the word are read and written sequentially consistent, so that of a waiter registering and a dispatch ending the
/// last one, at least one sees the other (and the waiter is woken).
final class InFlightCount: Sendable {
  /// Somebody waiting for the count to reach zero.
  enum Waiter: Sendable {
    case task(CheckedContinuation<Void, Never>)
    case thread(DispatchSemaphore)

    func wake() {
      switch self {
      case .task(let continuation): continuation.resume()
      case .thread(let semaphore): semaphore.signal()
      }
    }
  }

  private let word = Atomic<UInt64>(0)
  private let hasWaiters = Atomic<Bool>(false)
  private let waiters = LockedValue<[Waiter]>([])

  /// Whether somebody waits for the count to reach zero.
  var isAwaited: Bool { hasWaiters.load(ordering: .sequentiallyConsistent) }

  /// Whether no counted dispatch is in flight, and how many had ended so far (wrapping).
  var now: (isIdle: Bool, ended: UInt64) {
    let word = word.load(ordering: .sequentiallyConsistent)
    return (word & Self.countMask == 0, word >> 32)
  }

  /// Whether no counted dispatch is in flight.
  var isIdle: Bool { now.isIdle }

  private static let countMask: UInt64 = 0xFFFF_FFFF

  /// A dispatch begins.
  ///
  /// Relaxed: the count is read for zero only after the ends that follow this begin.
  @inline(__always)
  func begin() {
    word.wrappingAdd(1, ordering: .relaxed)
  }

  /// A dispatch that ``begin()`` counted ended.
  @inline(__always)
  func end() {
    // One less in flight, one more ended: the low half's borrow is the high half's carry.
    let word = word.wrappingAdd(Self.countMask, ordering: .sequentiallyConsistent).newValue
    if word & Self.countMask == 0, hasWaiters.load(ordering: .sequentiallyConsistent) { wakeIfIdle() }
  }

  /// Registers `waiter`, to be woken once the count is zero: at once if it is zero now.
  func add(_ waiter: Waiter) {
    let woken = waiters.withLock { waiters -> [Waiter] in
      waiters.append(waiter)
      hasWaiters.store(true, ordering: .sequentiallyConsistent)
      return takeIfIdle(&waiters)
    }
    for waiter in woken { waiter.wake() }
  }

  /// Awaits a moment when no counted dispatch is in flight.
  func idle() async {
    await withCheckedContinuation { add(.task($0)) }
  }

  private func wakeIfIdle() {
    let woken = waiters.withLock { takeIfIdle(&$0) }
    for waiter in woken { waiter.wake() }
  }

  /// Takes every waiter if the count is zero (they are woken after the lock); under the lock.
  private func takeIfIdle(_ waiters: inout [Waiter]) -> [Waiter] {
    guard isIdle else { return [] }
    hasWaiters.store(false, ordering: .sequentiallyConsistent)
    defer { waiters = [] }
    return waiters
  }
}
