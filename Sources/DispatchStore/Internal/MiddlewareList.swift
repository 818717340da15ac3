/// The middleware a dispatch calls, in registration order: owned by the registry, and by each dispatch while it
/// runs.
///
/// The list is one immutable ``Snapshot``, replaced whole when a middleware is added or removed. So a dispatch
/// takes the list with one retain, under the registry's lock, and keeps calling the middleware it started with
/// while the registry changes. Once the registry replaced its list and the dispatches that took the old one
/// finished, nothing holds the old one: a removed middleware is released then.
///
/// Each middleware sits in a small box of its own, made once when it is registered, so that a dispatch can call it
/// through a borrowed reference: iterating an array of `any Middleware` retains and releases each element around
/// every call (proposal 0005 has the measurements).
struct MiddlewareList: Sendable {
  /// Holds one registered middleware; immutable, so its property is read without retaining it.
  final class Entry: Sendable {
    let middleware: any Middleware
    /// Whether its transactions are timed: every middleware's but a hook's (``TransactionHook``), whose entries
    /// carry their transaction's identifier, which holds its start time.
    let needsDuration: Bool

    init(_ middleware: any Middleware) {
      self.middleware = middleware
      self.needsDuration = !(middleware is any TransactionHook)
    }
  }

  /// One version of the list; never empty, never changed.
  final class Snapshot: Sendable {
    let entries: [Entry]
    /// Whether a middleware in the list needs transaction durations.
    let needsDuration: Bool
    /// The first hook in the list: stores file their entries with it as they change (``HookedTransaction``).
    let hook: (any TransactionHook)?
    /// Whether the hook is the only middleware: a transaction then calls it directly
    /// (``TransactionHook/willHandle(_:kind:)``), without making the `Transaction` values nobody else reads.
    let onlyHook: Bool

    init(_ entries: [Entry]) {
      self.entries = entries
      self.needsDuration = entries.contains { $0.needsDuration }
      self.hook = entries.lazy.compactMap { $0.middleware as? any TransactionHook }.first
      self.onlyHook = entries.count == 1 && hook != nil
    }
  }

  /// A list seen without owning it, to call its middleware without retaining each: valid only while an owner
  /// keeps the list, and never kept beyond that.
  struct Borrowed: Sendable {
    fileprivate let snapshot: Unmanaged<Snapshot>?

    var isEmpty: Bool { snapshot == nil }

    var needsDuration: Bool {
      guard let snapshot else { return false }
      return snapshot._withUnsafeGuaranteedRef { $0.needsDuration }
    }

    /// Whether the hook is the only middleware.
    var onlyHook: Bool {
      guard let snapshot else { return false }
      return snapshot._withUnsafeGuaranteedRef { $0.onlyHook }
    }

    /// The first hook in the list, borrowed.
    var hook: (any TransactionHook)? {
      guard let snapshot else { return nil }
      return snapshot._withUnsafeGuaranteedRef { $0.hook }
    }

    /// An owned copy of the list: one retain, for what outlives the owner the view was borrowed from.
    func owned() -> MiddlewareList {
      MiddlewareList(snapshot: snapshot?.takeUnretainedValue())
    }

    /// Calls `body` with each middleware in order, borrowed.
    @inline(__always)
    func forEach(_ body: (any Middleware) -> Void) {
      guard let snapshot else { return }
      snapshot._withUnsafeGuaranteedRef { snapshot in
        snapshot.entries.withUnsafeBufferPointer { entries in
          for index in entries.indices {
            Unmanaged.passUnretained(entries[index])._withUnsafeGuaranteedRef { body($0.middleware) }
          }
        }
      }
    }
  }

  /// `nil` when there is no middleware.
  private var snapshot: Snapshot?

  init() {}

  private init(snapshot: Snapshot?) {
    self.snapshot = snapshot
  }

  var isEmpty: Bool { snapshot == nil }

  var needsDuration: Bool { snapshot?.needsDuration ?? false }

  /// A view of this list, valid while this list (or another owner of it) is kept.
  var borrowed: Borrowed { Borrowed(snapshot: snapshot.map { Unmanaged.passUnretained($0) }) }

  /// Appends `entry` unless its middleware instance is already in the list; returns what the caller releases after
  /// its lock: the replaced list, or `entry` if it was not appended.
  ///
  /// The entry is made by the caller, outside its lock: making it asks the middleware whether it needs durations.
  mutating func append(_ entry: Entry) -> (replaced: Snapshot?, unused: Entry?) {
    let entries = snapshot?.entries ?? []
    guard !entries.contains(where: { $0.middleware === entry.middleware }) else { return (nil, entry) }
    return (replace(with: entries + [entry]), nil)
  }

  /// Removes `middleware`; returns the replaced list, for the caller to release after its lock.
  mutating func remove(_ middleware: any Middleware) -> Snapshot? {
    guard let entries = snapshot?.entries, entries.contains(where: { $0.middleware === middleware }) else {
      return nil
    }
    return replace(with: entries.filter { $0.middleware !== middleware })
  }

  private mutating func replace(with entries: [Entry]) -> Snapshot? {
    let replaced = snapshot
    snapshot = entries.isEmpty ? nil : Snapshot(entries)
    return replaced
  }
}
