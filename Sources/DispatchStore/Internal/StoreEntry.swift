/// A registered store as the dispatcher keeps it: the store, and the kind that calls it.
///
/// `@unchecked Sendable`: `store` is always a ``Store``, which is `Sendable`; it is kept as `AnyObject` so that a
/// dispatch can borrow it (see ``StoreKind``). The kind is never released.
struct StoreEntry: @unchecked Sendable {
  let store: AnyObject
  let kind: Unmanaged<StoreKind>

  init<Model, Action>(_ store: Store<Model, Action>) {
    self.store = store
    self.kind = StoreKind.of(Store<Model, Action>.self)
  }

  /// Calls `body` with the kind and the store, both borrowed.
  @inline(__always)
  func withKind<Result>(_ body: (StoreKind, AnyObject) throws -> Result) rethrows -> Result {
    try kind._withUnsafeGuaranteedRef { kind in try body(kind, store) }
  }

  var actionType: ObjectIdentifier { kind._withUnsafeGuaranteedRef { $0.actionType } }
  /// The action types the store handles beside its own.
  var mappedActionTypes: [ObjectIdentifier] { withKind { $0.mappedActionTypes(of: $1) } }
  var identifier: String { withKind { $0.identifier(of: $1) } }
  var anyStore: any AnyStore { withKind { $0.anyStore($1) } }
}

extension UnsafeBufferPointer where Element == StoreEntry {
  /// Calls `body` with the kind and the store of the entry at `index`, both borrowed: reading the entry itself
  /// would retain its store.
  @inline(__always)
  func withEntry<Result>(at index: Int, _ body: (StoreKind, AnyObject) throws -> Result) rethrows -> Result {
    let kind = self[index].kind
    return try Unmanaged.passUnretained(self[index].store)._withUnsafeGuaranteedRef { store in
      try kind._withUnsafeGuaranteedRef { kind in try body(kind, store) }
    }
  }
}

extension Array where Element == StoreEntry {
  /// Calls `body` with the kind and the store of the entry at `index`, both borrowed.
  @inline(__always)
  func withEntry<Result>(at index: Int, _ body: (StoreKind, AnyObject) throws -> Result) rethrows -> Result {
    try withUnsafeBufferPointer { try $0.withEntry(at: index, body) }
  }
}
