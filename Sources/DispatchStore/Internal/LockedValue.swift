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
///   exchange, and a read of the thread's identifier (`pthread_self`). The word holds the owning thread, so that a
///   thread taking a lock it already holds traps with a message instead of waiting for ever (as `os_unfair_lock` traps
///   on Apple platforms). A thread that finds the lock taken spins briefly, then parks in ``LockParking`` until a
///   releasing thread wakes it; the woken thread competes for the lock again rather than being handed it.
///   `Synchronization.Mutex` there is a priority-inheritance futex, whose unlock hands the lock to a sleeping waiter,
///   so that with more threads than cores every acquisition waits for the kernel to schedule that waiter
///   (swiftlang/swift issue 88440); a `pthread_mutex_t` does not hand over, but costs a call into the C library per
///   lock and unlock. ThreadSanitizer sees the word's atomic operations, so it needs no annotations.
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
    /// The lock: 0 free; otherwise the owning thread (``LockParking/currentThread``), with
    /// ``LockParking/parkedBit`` set if a thread may be parked waiting for it.
    ///
    /// Stored directly, not in a `_Cell`: destroying a `_Cell` of it goes through the generic `Atomic` deinit,
    /// which looks a conformance up at run time, for every object that holds a lock.
    @usableFromInline let word: Atomic<UInt>

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
    /// (the store's lock inside a lane's, never the reverse): the lock is not recursive, and a thread taking it
    /// again traps.
    @inlinable
    @inline(__always)
    package borrowing func withLock<Result: ~Copyable, E: Error>(
      _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
      let thread = LockParking.currentThread
      if !word.compareExchange(expected: 0, desired: thread, ordering: .acquiring).exchanged {
        LockParking.lock(word, key: parkingKey, thread: thread)
      }
      defer {
        if word.exchange(0, ordering: .releasing) & LockParking.parkedBit != 0 { LockParking.wakeOne(key: parkingKey) }
      }
      return try body(&value._address.pointee)
    }

    /// Runs `body` with the value under the lock if the lock is free; returns `nil` at once, running nothing, if it
    /// is taken.
    ///
    /// For a thread that must not wait while it holds other locks (a restore that locks several stores).
    @inlinable
    package borrowing func withLockIfAvailable<Result, E: Error>(
      _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
      guard word.compareExchange(expected: 0, desired: LockParking.currentThread, ordering: .acquiring).exchanged
      else { return nil }
      defer {
        if word.exchange(0, ordering: .releasing) & LockParking.parkedBit != 0 { LockParking.wakeOne(key: parkingKey) }
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
  /// A parking thread sets the word's ``parkedBit`` and queues itself under the bucket's mutex, so a releasing
  /// thread that finds the bit and takes the same mutex either finds it queued, or the parking thread finds the word
  /// free and takes the lock instead of parking: no wake-up is lost.
  @usableFromInline
  enum LockParking {
    /// Spins before parking: the holder may be running on another core and about to release.
    static let spins = 64
    static let bucketCount = 64
    /// Set in a taken lock's word when a thread may be parked waiting for it.
    ///
    /// A thread's identifier (``currentThread``) is an aligned address, whose lowest bit is clear.
    @usableFromInline static let parkedBit: UInt = 1

    /// The calling thread, as a lock word holds its owner: never 0, lowest bit clear.
    @inlinable
    static var currentThread: UInt {
      @inline(__always) get {
        #if canImport(Glibc)
          UInt(pthread_self())
        #else
          UInt(bitPattern: pthread_self())
        #endif
      }
    }

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

    /// Takes the lock whose word is `word`, which a compare-and-swap just found taken, for `thread` (the calling
    /// thread); traps if `thread` holds it already, which would wait for ever.
    @usableFromInline
    @inline(never)
    static func lock(_ word: borrowing Atomic<UInt>, key: UInt, thread: UInt) {
      for _ in 0..<spins {
        let seen = word.load(ordering: .relaxed)
        if seen == 0, word.compareExchange(expected: 0, desired: thread, ordering: .acquiring).exchanged { return }
        if seen & ~parkedBit == thread { reentered() }
      }
      let bucket = bucket(of: key)
      var semaphore: DispatchSemaphore?
      while true {
        pthread_mutex_lock(&bucket.pointee.mutex)
        // Taken with the bit set if free: this thread cannot tell whether others are parked, so its own release must
        // look. Otherwise the bit is set for the owner's release to see.
        var seen = word.load(ordering: .relaxed)
        while true {
          let desired = seen == 0 ? thread | parkedBit : seen | parkedBit
          let (exchanged, original) = word.compareExchange(expected: seen, desired: desired, ordering: .acquiring)
          if exchanged { break }
          seen = original
        }
        if seen == 0 {
          pthread_mutex_unlock(&bucket.pointee.mutex)
          return
        }
        if seen & ~parkedBit == thread {
          pthread_mutex_unlock(&bucket.pointee.mutex)
          reentered()
        }
        let parked = semaphore ?? DispatchSemaphore(value: 0)
        semaphore = parked
        bucket.pointee.parked.append((key, parked))
        pthread_mutex_unlock(&bucket.pointee.mutex)
        parked.wait()
      }
    }

    /// A thread took a lock it holds: it would wait for itself for ever.
    private static func reentered() -> Never {
      preconditionFailure(
        "DispatchStore: a thread took a lock it already holds, which would wait for ever. The usual cause: a store "
          + "read, observed or dispatched to from inside its own reduction (a reducer, an updateModel body, or the "
          + "deinit of a value the model released there)")
    }

    /// Wakes one thread parked on the lock `key` names, if any, after it was released with its parked bit set.
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
