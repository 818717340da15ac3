import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A value that is only reachable under its lock: the library's one lock type, used one way (``withLock(_:)``).
///
/// Stored inline, like `Mutex`, so that an object holding one allocates nothing more for it. What it locks with
/// depends on the platform:
///
/// - On Linux, a `pthread_mutex_t` of the default kind. `Synchronization.Mutex` there is a priority-inheritance
///   futex, whose unlock hands the lock to a sleeping waiter, so that with more threads than cores every
///   acquisition waits for the kernel to schedule that waiter (swiftlang/swift issue 88440). A default pthread
///   mutex lets the running thread take the lock again and wakes a waiter to compete for it. ThreadSanitizer
///   intercepts it, so it sees every critical section without annotations.
/// - On Apple platforms, `Mutex`, which is an `os_unfair_lock` there: it does not hand itself over either.
///
/// Proposal 0008 has the measurements behind the choice.
///
/// `@unchecked Sendable`, as `Mutex` is: the value is only reached inside `withLock`, with the lock held, and
/// moves in and out as `sending`.
@usableFromInline
struct LockedValue<Value>: ~Copyable, @unchecked Sendable {
  #if canImport(Glibc) || canImport(Musl)
    // `_Cell` gives each part a fixed address inside its owner, as `Mutex` does for its own: a pthread mutex must
    // not move once initialised. A zeroed `pthread_mutex_t` is `PTHREAD_MUTEX_INITIALIZER`.
    @usableFromInline let mutex: _Cell<pthread_mutex_t>
    @usableFromInline let value: _Cell<Value>

    @inlinable
    init(_ initialValue: consuming sending Value) {
      mutex = _Cell(pthread_mutex_t())
      value = _Cell(initialValue)
    }

    @inlinable
    deinit {
      pthread_mutex_destroy(mutex._address)
    }

    /// Runs `body` with the value, under the lock.
    ///
    /// Never call user code from `body`, and never take another ``LockedValue`` in it unless the order is fixed
    /// (the store's lock inside a lane's, never the reverse): the lock is not recursive.
    @inlinable
    @inline(__always)
    borrowing func withLock<Result: ~Copyable, E: Error>(
      _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
      pthread_mutex_lock(mutex._address)
      defer { pthread_mutex_unlock(mutex._address) }
      return try body(&value._address.pointee)
    }
  #else
    @usableFromInline let mutex: Mutex<Value>

    @inlinable
    init(_ initialValue: consuming sending Value) {
      mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value, under the lock.
    ///
    /// Never call user code from `body`: the lock is not recursive.
    @inlinable
    @inline(__always)
    borrowing func withLock<Result: ~Copyable, E: Error>(
      _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
      try mutex.withLock(body)
    }
  #endif
}
