/// The middleware a dispatch calls, in registration order.
///
/// Each middleware sits in a small box of its own, made once when it is registered, so that a dispatch can call it
/// through a borrowed reference: iterating an array of `any Middleware` retains and releases each element around
/// every call, two atomic operations per middleware per call.
struct MiddlewareList: Sendable {
  /// Holds one registered middleware; immutable, so its property is read without retaining it.
  final class Entry: Sendable {
    let middleware: any Middleware
    /// `middleware.needsDuration`, read when the entry was made.
    let needsDuration: Bool

    init(_ middleware: any Middleware) {
      self.middleware = middleware
      self.needsDuration = middleware.needsDuration
    }
  }

  private(set) var entries: [Entry] = []
  /// Whether a middleware in the list needs transaction durations: read once per middleware, when it is added.
  private(set) var needsDuration = false

  var isEmpty: Bool { entries.isEmpty }

  /// Appends `entry` unless its middleware instance is already in the list; returns it if it was not appended,
  /// for the caller to release after its lock.
  ///
  /// The entry is made by the caller, outside its lock: making it asks the middleware whether it needs durations.
  mutating func append(_ entry: Entry) -> Entry? {
    guard !entries.contains(where: { $0.middleware === entry.middleware }) else { return entry }
    entries.append(entry)
    needsDuration = needsDuration || entry.needsDuration
    return nil
  }

  /// Removes `middleware`; returns the removed entries, for the caller to release after its lock.
  mutating func remove(_ middleware: any Middleware) -> [Entry] {
    let removed = entries.filter { $0.middleware === middleware }
    entries.removeAll { $0.middleware === middleware }
    needsDuration = entries.contains { $0.needsDuration }
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
