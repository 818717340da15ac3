import Synchronization

/// The transaction identifiers one thread may hand out without a read-modify-write of the process-wide counter.
///
/// Every identifier comes from a block reserved on ``reservedEnd``, the process-wide end of the latest block: a
/// compare-and-swap that puts each block above every block before it. A thread keeps handing out its block while
/// both hold:
/// - the coarse clock still reads the tick the block was reserved at, so an identifier keeps its time part;
/// - the block is still the latest one (``reservedEnd`` is its end): a plain atomic load.
///
/// So identifiers keep the order they were made in across threads, not only on one: if thread B reserved a block
/// after thread A's, A's next identifier reserves again, above B's block. Reading ``reservedEnd`` is where an
/// identifier from the block is made; an identifier made after it, on any thread, reads that end or a later one.
///
/// A block that runs out while still the latest doubles the next one (up to ``maximumSize``); one lost to another
/// thread makes the next one a single identifier, so that threads taking turns do not waste identifiers (and push
/// them ahead of the clock) faster than reserving one identifier at a time would.
///
/// Owned by one ``ThreadContext``, so used by its thread only.
struct TransactionIDBlock {
  private var next: UInt64 = 0
  /// One past the block's last identifier.
  private var end: UInt64 = 0
  /// The coarse clock reading the block was reserved at.
  private var tick: UInt64 = 0
  /// The size of the next block.
  private var size: UInt64 = 1

  static let maximumSize: UInt64 = 1024

  /// The last identifier of the latest block any thread reserved.
  private static let reservedEnd = Atomic<UInt64>(0)

  /// Hands out the next identifier; `now` is the coarse real-time clock in nanoseconds since 1970.
  @inline(__always)
  mutating func take(now: UInt64) -> UInt64 {
    if now == tick, next < end, Self.reservedEnd.load(ordering: .relaxed) == end &- 1 {
      defer { next &+= 1 }
      return next
    }
    return reserve(now: now)
  }

  /// Reserves a new block above every block reserved before it, and hands out its first identifier.
  private mutating func reserve(now: UInt64) -> UInt64 {
    if end != 0 {
      if next == end {
        size = min(size &* 2, Self.maximumSize)
      } else if Self.reservedEnd.load(ordering: .relaxed) != end &- 1 {
        size = 1
      }
    }
    var last = Self.reservedEnd.load(ordering: .relaxed)
    while true {
      let first = max(now, last &+ 1)
      let (exchanged, original) = Self.reservedEnd.compareExchange(
        expected: last, desired: first &+ size &- 1, ordering: .relaxed)
      if exchanged {
        next = first &+ 1
        end = first &+ size
        tick = now
        return first
      }
      last = original
    }
  }
}
