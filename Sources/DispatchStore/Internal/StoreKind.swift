// How the dispatcher, which is not generic, reaches a store: its `StoreKind`, and what the kind asks the store while
// a dispatch is prepared (its action, its wait list).

extension Store {
  /// The store's wait list for `action` (calls the reducer).
  func waitList(for action: any ActionType) -> [String] {
    reducer.waitList(for: ownAction(action))
  }

  /// `action` as this store handles it: itself if it is of the store's action type, otherwise what the store's
  /// mapping of its type returns (``Reducer/additionalActions``); `nil` if the store does not handle it.
  func storeAction(for action: any ActionType) -> (any ActionType)? {
    if action.routingType == ObjectIdentifier(Action.self) { return action }
    return mappings.map(action)
  }

  /// The action types the store handles beside its own.
  var mappedActionTypes: [ObjectIdentifier] { mappings.types }

  /// `action` as this store's action type, which it is: a dispatch maps an action of another type with
  /// ``storeAction(for:)`` when it is prepared.
  ///
  /// Cheaper than `as!`, which runs the general dynamic cast on every dispatch.
  func ownAction(_ action: any ActionType) -> Action {
    func project<Dispatched: ActionType>(_ action: Dispatched) -> Action {
      precondition(Dispatched.self == Action.self, "DispatchStore: an action was routed to a store of another type")
      return unsafeBitCast(action, to: Action.self)
    }
    return project(action)
  }
}

/// Calls the dispatch methods of stores of one model and action type, given the store as `AnyObject`.
///
/// Dispatch code is not generic, so it must reach stores through something type-erased. An existential
/// (`any P`) read out of an array is copied, which retains and releases the store (see proposal 0006). A class
/// reference can instead be borrowed through `Unmanaged`, so the registry keeps each store as an `AnyObject` beside
/// the kind of its type (a ``StoreEntry``), and calls it through the kind. There is one kind per model and action
/// type, made on first registration and kept for the life of the process, like type metadata: entries refer to it
/// without retaining it.
///
/// `@unchecked Sendable`: immutable (the subclass adds no state).
@usableFromInline
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
  func handle(_ action: any ActionType, in store: AnyObject, hooked: HookedTransaction?) -> StoreHandling {
    preconditionFailure("StoreKind is abstract")
  }
  /// `action` as the store handles it, or `nil` (see ``Store/storeAction(for:)``).
  func storeAction(for action: any ActionType, in store: AnyObject) -> (any ActionType)? {
    preconditionFailure("StoreKind is abstract")
  }
  func mappedActionTypes(of store: AnyObject) -> [ObjectIdentifier] { preconditionFailure("StoreKind is abstract") }
  /// Forgets `dispatcher` as the store's, if it is: the store was removed from it.
  func detach(_ store: AnyObject, from dispatcher: Dispatcher) { preconditionFailure("StoreKind is abstract") }
  /// ``Store/announceFinishedOperation(for:hidingRunningDispatchers:)``.
  func announceFinishedOperation(of store: AnyObject, for action: any ActionType, hidingRunningDispatchers: Bool) {
    preconditionFailure("StoreKind is abstract")
  }
  /// ``Store/reserve(for:)``.
  func reserve(_ store: AnyObject, for reservation: Reservation) -> Reservation.Taking {
    preconditionFailure("StoreKind is abstract")
  }
  /// ``Store/release(from:rollingBack:deliveries:)``.
  func release(
    _ store: AnyObject, from reservation: Reservation, rollingBack rollback: Rollback?, deliveries: PendingDeliveries
  ) -> StoreGate.Released {
    preconditionFailure("StoreKind is abstract")
  }

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
  override func handle(_ action: any ActionType, in store: AnyObject, hooked: HookedTransaction?) -> StoreHandling {
    typed(store).handle(action, hooked: hooked)
  }
  override func storeAction(for action: any ActionType, in store: AnyObject) -> (any ActionType)? {
    typed(store).storeAction(for: action)
  }
  override func mappedActionTypes(of store: AnyObject) -> [ObjectIdentifier] { typed(store).mappedActionTypes }
  override func detach(_ store: AnyObject, from dispatcher: Dispatcher) {
    let typed = typed(store)
    // The registry's lock inside the store's (never the other way round): a register of the store on another
    // thread, after this unregister, decides under the store's lock too.
    typed.state.withLock { state in
      if state.dispatcher === dispatcher, !dispatcher.holds(store, as: typed.identifier) { state.dispatcher = nil }
    }
  }
  override func announceFinishedOperation(
    of store: AnyObject, for action: any ActionType, hidingRunningDispatchers: Bool
  ) {
    typed(store).announceFinishedOperation(for: action, hidingRunningDispatchers: hidingRunningDispatchers)
  }
  override func reserve(_ store: AnyObject, for reservation: Reservation) -> Reservation.Taking {
    typed(store).reserve(for: reservation)
  }
  override func release(
    _ store: AnyObject, from reservation: Reservation, rollingBack rollback: Rollback?, deliveries: PendingDeliveries
  ) -> StoreGate.Released {
    typed(store).release(from: reservation, rollingBack: rollback, deliveries: deliveries)
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
