import Synchronization

#if canImport(Glibc)
  import Dispatch
  import Glibc
#elseif canImport(Musl)
  import Dispatch
  import Musl
#endif

/// A value that is only reachable under its lock: the library's one lock type, used one way (``withLock(_:)``).
///
/// Stored inline, like `Mutex`, so that an object holding one allocates nothing more for it. What it locks with
/// depends on the platform:
///
/// - On Linux, a lock word of its own: taking and releasing a free lock is one inlined compare-and-swap and one
///   exchange. A thread that finds it taken spins briefly, then parks in ``LockParking`` until a releasing thread
///   wakes it; the woken thread competes for the lock again rather than being handed it.
///   `Synchronization.Mutex` there is a priority-inheritance futex, whose unlock hands the lock to a sleeping
///   waiter, so that with more threads than cores every acquisition waits for the kernel to schedule that waiter
///   (swiftlang/swift issue 88440); a `pthread_mutex_t` does not hand over, but costs a call into the C library
///   per lock and unlock. ThreadSanitizer sees the word's atomic operations, so it needs no annotations.
/// - On Apple platforms, `Mutex`, which is an `os_unfair_lock` there: it does not hand itself over either. CI builds
///   and tests this branch on Linux too, with `-D DISPATCHSTORE_MUTEX_LOCK`.
///
/// Proposal 0008 has the measurements behind the choice. `package`, so that the test kit locks the same way (and
/// ThreadSanitizer, which cannot see `Mutex`'s futex on Linux, sees its locking too).
///
/// `@unchecked Sendable`, as `Mutex` is: the value is only reached inside `withLock`, with the lock held, and
/// moves in and out as `sending`.
@usableFromInline
package struct LockedValue<Value>: ~Copyable, @unchecked Sendable {
  #if (canImport(Glibc) || canImport(Musl)) && !DISPATCHSTORE_MUTEX_LOCK
    // The value first: ThreadSanitizer reports Swift's accesses to the value at the struct's address, and its
    // atomic operations on the word must not be at that same address.
    @usableFromInline let value: _Cell<Value>
    /// The lock: 0 free, 1 taken, 2 taken with a thread perhaps parked waiting for it.
    ///
    /// Stored directly, not in a `_Cell`: destroying a `_Cell` of it goes through the generic `Atomic` deinit,
    /// which looks a conformance up at run time, for every object that holds a lock.
    @usableFromInline let word: Atomic<UInt32>

    @inlinable
    package init(_ initialValue: consuming sending Value) {
      value = _Cell(initialValue)
      word = Atomic(0)
    }

    /// This lock's key in ``LockParking``: an address inside it, unique among the locks that exist.
    @inlinable
    var parkingKey: UInt { UInt(bitPattern: value._address) }

    /// Runs `body` with the value, under the lock.
    ///
    /// Never call user code from `body`, and never take another ``LockedValue`` in it unless the order is fixed
    /// (the store's lock inside a lane's, never the reverse): the lock is not recursive.
    @inlinable
    @inline(__always)
    package borrowing func withLock<Result: ~Copyable, E: Error>(
      _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
      if !word.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged {
        LockParking.lock(word, key: parkingKey)
      }
      defer {
        if word.exchange(0, ordering: .releasing) == 2 { LockParking.wakeOne(key: parkingKey) }
      }
      return try body(&value._address.pointee)
    }

    /// Runs `body` with the value under the lock if the lock is free; returns `nil` at once, running nothing, if it
    /// is taken.
    ///
    /// For a thread that must not wait while it holds other locks (``RecorderMiddleware``'s moves).
    @inlinable
    package borrowing func withLockIfAvailable<Result, E: Error>(
      _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
      guard word.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged else { return nil }
      defer {
        if word.exchange(0, ordering: .releasing) == 2 { LockParking.wakeOne(key: parkingKey) }
      }
      return try body(&value._address.pointee)
    }
  #else
    @usableFromInline let mutex: Mutex<Value>
    #if !canImport(Darwin)
      // This branch built on Linux (`DISPATCHSTORE_MUTEX_LOCK`, for CI): `Mutex` is a futex there, whose hand-off to
      // a waiting thread happens in the kernel, which ThreadSanitizer cannot see. Every critical section also makes
      // a read-modify-write of `edge` on entry and on exit, which it sees, so that it knows what the lock orders.
      @usableFromInline let edge = Atomic<UInt32>(0)
    #endif

    @inlinable
    package init(_ initialValue: consuming sending Value) {
      mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value, under the lock.
    ///
    /// Never call user code from `body`: the lock is not recursive.
    @inlinable
    @inline(__always)
    package borrowing func withLock<Result: ~Copyable, E: Error>(
      _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
      #if canImport(Darwin)
        try mutex.withLock(body)
      #else
        // The two edges stay written out here and in `withLockIfAvailable`: a helper taking `value` `inout` begins
        // the access before the first edge, where ThreadSanitizer reports it, and a closure capturing `value`
        // cannot keep it `sending`.
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
          edge.add(1, ordering: .acquiringAndReleasing)
          defer { edge.add(1, ordering: .acquiringAndReleasing) }
          return try body(&value)
        }
      #endif
    }

    /// Runs `body` with the value under the lock if the lock is free; returns `nil` at once, running nothing, if it
    /// is taken.
    @inlinable
    package borrowing func withLockIfAvailable<Result, E: Error>(
      _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
      #if canImport(Darwin)
        try mutex.withLockIfAvailable(body)
      #else
        try mutex.withLockIfAvailable { (value: inout sending Value) throws(E) -> sending Result in
          edge.add(1, ordering: .acquiringAndReleasing)
          defer { edge.add(1, ordering: .acquiringAndReleasing) }
          return try body(&value)
        }
      #endif
    }
  #endif
}

#if (canImport(Glibc) || canImport(Musl)) && !DISPATCHSTORE_MUTEX_LOCK
  /// Where threads wait for a taken ``LockedValue`` on Linux: a fixed table of buckets, chosen by the lock's key
  /// (an address), each a pthread mutex and the queue of threads parked on locks of that bucket.
  ///
  /// A parking thread sets the word to 2 and queues itself under the bucket's mutex, so a releasing thread that
  /// finds 2 and takes the same mutex either finds it queued, or the parking thread finds the word free and takes
  /// the lock instead of parking: no wake-up is lost.
  @usableFromInline
  enum LockParking {
    /// Spins before parking: the holder may be running on another core and about to release.
    static let spins = 64
    static let bucketCount = 64

    /// `@unchecked Sendable`: the buckets are allocated once and never freed, and each bucket's queue is only
    /// touched with that bucket's mutex held.
    struct Table: @unchecked Sendable {
      let buckets: UnsafeMutablePointer<Bucket>
    }

    struct Bucket {
      var mutex = pthread_mutex_t()
      var parked: [(key: UInt, semaphore: DispatchSemaphore)] = []
    }

    static let table: Table = {
      let buckets = UnsafeMutablePointer<Bucket>.allocate(capacity: bucketCount)
      buckets.initialize(repeating: Bucket(), count: bucketCount)
      return Table(buckets: buckets)
    }()

    static func bucket(of key: UInt) -> UnsafeMutablePointer<Bucket> {
      // The low bits of an address are alignment; the bits above them spread neighbouring objects' locks.
      table.buckets + Int(((key >> 4) ^ (key >> 10)) % UInt(bucketCount))
    }

    /// Takes the lock whose word is `word`, which a compare-and-swap just found taken.
    @usableFromInline
    @inline(never)
    static func lock(_ word: borrowing Atomic<UInt32>, key: UInt) {
      for _ in 0..<spins {
        if word.load(ordering: .relaxed) == 0,
          word.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged
        {
          return
        }
      }
      let bucket = bucket(of: key)
      var semaphore: DispatchSemaphore?
      while true {
        pthread_mutex_lock(&bucket.pointee.mutex)
        // 2, not 1: this thread cannot tell whether others are parked, so its own release must look.
        if word.exchange(2, ordering: .acquiring) == 0 {
          pthread_mutex_unlock(&bucket.pointee.mutex)
          return
        }
        let parked = semaphore ?? DispatchSemaphore(value: 0)
        semaphore = parked
        bucket.pointee.parked.append((key, parked))
        pthread_mutex_unlock(&bucket.pointee.mutex)
        parked.wait()
      }
    }

    /// Wakes one thread parked on the lock `key` names, if any, after it was released with its word at 2.
    @usableFromInline
    @inline(never)
    static func wakeOne(key: UInt) {
      let bucket = bucket(of: key)
      pthread_mutex_lock(&bucket.pointee.mutex)
      let woken = bucket.pointee.parked.firstIndex { $0.key == key }.map {
        bucket.pointee.parked.remove(at: $0).semaphore
      }
      pthread_mutex_unlock(&bucket.pointee.mutex)
      woken?.signal()
    }
  }
#endif
