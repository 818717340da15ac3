import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

extension Mutex where Value: ~Copyable {
  /// `withLock`, made visible to ThreadSanitizer.
  ///
  /// `Mutex` takes its lock with atomics inside the standard library, which is not instrumented, so TSan sees no
  /// happens-before edge between critical sections and reports every guarded access as a race. When the TSan
  /// runtime is loaded, this tells it that the lock was acquired and released, keyed by `owner`'s address (the
  /// object that holds the mutex); otherwise it costs one predictable branch. Accesses made outside the lock are
  /// still reported.
  @inlinable
  borrowing func withLock<Result: ~Copyable, E: Error>(
    owner: AnyObject,
    _ body: (inout sending Value) throws(E) -> sending Result
  ) throws(E) -> sending Result {
    try withLock { (value: inout sending Value) throws(E) -> sending Result in
      guard let hooks = ThreadSanitizerHooks.shared else { return try body(&value) }
      let token = UnsafeRawPointer(Unmanaged.passUnretained(owner).toOpaque())
      hooks.acquire(token)
      defer { hooks.release(token) }
      return try body(&value)
    }
  }
}

/// The ThreadSanitizer runtime's annotation functions, when this process runs under TSan.
@usableFromInline
struct ThreadSanitizerHooks: Sendable {
  @usableFromInline typealias Hook = @convention(c) (UnsafeRawPointer?) -> Void

  @usableFromInline let acquire: Hook
  @usableFromInline let release: Hook

  @usableFromInline static let shared: ThreadSanitizerHooks? = {
    #if canImport(Darwin)
      let handle = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
    #else
      let handle: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
    #endif
    guard let acquire = dlsym(handle, "__tsan_acquire"), let release = dlsym(handle, "__tsan_release") else {
      return nil
    }
    return ThreadSanitizerHooks(
      acquire: unsafeBitCast(acquire, to: Hook.self), release: unsafeBitCast(release, to: Hook.self))
  }()
}
