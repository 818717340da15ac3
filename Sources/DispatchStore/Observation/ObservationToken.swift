/// Keeps an observation made with ``Store/observe(synchronously:_:)`` alive: releasing the token, or calling
/// ``cancel()``, ends it.
///
/// ```swift
/// let token = counter.observe(synchronously: true) { change in print(change.model.count) }
/// // ... notified until:
/// token.cancel()
/// ```
///
/// > Important: Safe to use and release from any thread.
public final class ObservationToken: Sendable {
  private let cancellation = LockedValue<(@Sendable () -> Void)?>(nil)

  init() {}

  deinit {
    cancel()
  }

  /// Ends the observation; later calls do nothing.
  ///
  /// > Important: Once it returns, no notification calls the observer: not one queued for the main queue or for a
  /// > synchronous observer's turn, nor one cancelled from inside the observer. A notification that another thread is
  /// > delivering to the observer at that moment may still call it once.
  public func cancel() {
    let cancel = cancellation.withLock { cancellation in
      defer { cancellation = nil }
      return cancellation
    }
    cancel?()  // After the lock: it takes the store's.
  }

  /// Sets what ``cancel()`` does; called once, by the store, right after the token was made.
  func setCancellation(_ body: @escaping @Sendable () -> Void) {
    cancellation.withLock { $0 = body }
  }
}
