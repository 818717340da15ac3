/// Calls the dispatch methods of stores of one model and action type, given the store as `AnyObject`.
///
/// Dispatch code is not generic, so it must reach stores through something type-erased. An existential
/// (`any P`) read out of an array is copied, which retains and releases the store: four atomic operations per
/// store and dispatch in a wait chain. A class reference can instead be borrowed through `Unmanaged`, so the
/// registry keeps each store as an `AnyObject` beside the kind of its type (a ``StoreEntry``), and calls it through
/// the kind. There is one kind per model and action type, made on first registration and kept for the life of the
/// process, like type metadata: entries refer to it without retaining it.
///
/// `@unchecked Sendable`: immutable (the subclass adds no state).
class StoreKind: @unchecked Sendable {
  /// `ObjectIdentifier` of the stores' action type.
  let actionType: ObjectIdentifier

  fileprivate init(actionType: ObjectIdentifier) {
    self.actionType = actionType
  }

  func identifier(of store: AnyObject) -> String { preconditionFailure("StoreKind is abstract") }
  func anyStore(_ store: AnyObject) -> any AnyStore { preconditionFailure("StoreKind is abstract") }
  /// Calls `willDispatch`, or `didDispatch` once `transaction` finished, on every middleware in `middleware`, with
  /// the store borrowed.
  ///
  /// One call into code specialised for the store's type: no closure is made, and passing the store to each
  /// middleware retains nothing.
  func tell(_ middleware: MiddlewareList.Borrowed, about transaction: Transaction, in store: AnyObject) {
    preconditionFailure("StoreKind is abstract")
  }
  func waitList(of store: AnyObject, for action: any ActionType) -> [String] {
    preconditionFailure("StoreKind is abstract")
  }
  func handle(_ action: any ActionType, in store: AnyObject) -> StoreHandling {
    preconditionFailure("StoreKind is abstract")
  }
  /// `action` as the store handles it, or `nil` (see ``Store/storeAction(for:)``).
  func storeAction(for action: any ActionType, in store: AnyObject) -> (any ActionType)? {
    preconditionFailure("StoreKind is abstract")
  }
  func mappedActionTypes(of store: AnyObject) -> [ObjectIdentifier] { preconditionFailure("StoreKind is abstract") }
  func announcesWhenFinished(_ store: AnyObject) -> Bool { preconditionFailure("StoreKind is abstract") }
  func announceChange(of store: AnyObject, for action: any ActionType) { preconditionFailure("StoreKind is abstract") }

  /// The kind of `Store<Model, Action>`, made on first use and never released.
  static func of<Model, Action>(_ type: Store<Model, Action>.Type) -> Unmanaged<StoreKind> {
    StoreKindCache.shared.kind(of: type)
  }
}

/// The ``StoreKind`` of `Store<Model, Action>`.
private final class TypedStoreKind<Model: ModelType, Action: ActionType>: StoreKind, @unchecked Sendable {
  init() {
    super.init(actionType: ObjectIdentifier(Action.self))
  }

  /// `store` as the store it is: only stores of this kind are passed to it.
  @inline(__always)
  private func typed(_ store: AnyObject) -> Store<Model, Action> {
    unsafeDowncast(store, to: Store<Model, Action>.self)
  }

  override func identifier(of store: AnyObject) -> String { typed(store).identifier }
  override func anyStore(_ store: AnyObject) -> any AnyStore { typed(store) }
  override func tell(_ middleware: MiddlewareList.Borrowed, about transaction: Transaction, in store: AnyObject) {
    let store = typed(store)
    if transaction.isFinished {
      middleware.forEach { $0.didDispatch(transaction: transaction, action: transaction.action, in: store) }
    } else {
      middleware.forEach { $0.willDispatch(transaction: transaction, action: transaction.action, in: store) }
    }
  }
  override func waitList(of store: AnyObject, for action: any ActionType) -> [String] {
    typed(store).waitList(for: action)
  }
  override func handle(_ action: any ActionType, in store: AnyObject) -> StoreHandling {
    typed(store).handle(action)
  }
  override func storeAction(for action: any ActionType, in store: AnyObject) -> (any ActionType)? {
    typed(store).storeAction(for: action)
  }
  override func mappedActionTypes(of store: AnyObject) -> [ObjectIdentifier] { typed(store).mappedActionTypes }
  override func announcesWhenFinished(_ store: AnyObject) -> Bool { typed(store).announcesWhenFinished }
  override func announceChange(of store: AnyObject, for action: any ActionType) {
    typed(store).announceChange(for: action)
  }
}

/// Every ``StoreKind`` made so far, by store type; they are never removed.
private final class StoreKindCache: Sendable {
  static let shared = StoreKindCache()

  private let kinds = LockedValue<[ObjectIdentifier: StoreKind]>([:])

  func kind<Model, Action>(of type: Store<Model, Action>.Type) -> Unmanaged<StoreKind> {
    let key = ObjectIdentifier(type)
    if let kind = kinds.withLock({ $0[key] }) { return Unmanaged.passUnretained(kind) }
    // Made outside the lock; if another thread made one meanwhile, its is kept and this one dropped.
    let made = TypedStoreKind<Model, Action>()
    let kind = kinds.withLock { kinds -> StoreKind in
      if let existing = kinds[key] { return existing }
      kinds[key] = made
      return made
    }
    return Unmanaged.passUnretained(kind)
  }
}

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
