/// The middleware a dispatch calls, in registration order.
///
/// Each middleware sits in a small box of its own, made once when it is registered, so that a dispatch can call it
/// through a borrowed reference: iterating an array of `any Middleware` retains and releases each element around
/// every call, two atomic operations per middleware per call.
struct MiddlewareList: Sendable {
  /// Holds one registered middleware; immutable, so its property is read without retaining it.
  final class Entry: Sendable {
    let middleware: any Middleware

    init(_ middleware: any Middleware) {
      self.middleware = middleware
    }
  }

  private(set) var entries: [Entry] = []

  var isEmpty: Bool { entries.isEmpty }

  /// Appends `middleware` unless this very instance is already in the list.
  mutating func append(_ middleware: any Middleware) {
    guard !entries.contains(where: { $0.middleware === middleware }) else { return }
    entries.append(Entry(middleware))
  }

  /// Removes `middleware`; returns the removed entries, for the caller to release after its lock.
  mutating func remove(_ middleware: any Middleware) -> [Entry] {
    let removed = entries.filter { $0.middleware === middleware }
    entries.removeAll { $0.middleware === middleware }
    return removed
  }

  /// Calls `body` with each middleware in order, borrowed.
  @inline(__always)
  func forEach(_ body: (any Middleware) -> Void) {
    entries.withUnsafeBufferPointer { entries in
      for index in entries.indices {
        Unmanaged.passUnretained(entries[index])._withUnsafeGuaranteedRef { body($0.middleware) }
      }
    }
  }
}
