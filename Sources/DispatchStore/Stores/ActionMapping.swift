/// An action type a store handles beside its own: each such action, from any dispatch, becomes one of the store's
/// own actions.
///
/// In Flux every store sees every action. Here a store is routed the actions of its own `Action` type, plus those
/// its reducer maps in ``Reducer/additionalActions``: an app-wide action such as signing out reaches every store that
/// maps it, whatever their action types, without a shared action enum or do-nothing branches.
///
/// ```swift
/// enum SessionAction: ActionType { case signOut }
///
/// final class CartReducer: SynchronousReducer<Cart, CartAction>, @unchecked Sendable {
///   override var additionalActions: [ActionMapping<CartAction>] {
///     [.on(SessionAction.self) { _ in .empty }]
///   }
///   override func reduce(_ action: CartAction, into model: inout Cart) throws {
///     switch action {
///     case .add(let item): model.items.append(item)
///     case .empty: model.items = []
///     }
///   }
/// }
/// ```
///
/// The store's transaction, its wait list, its observers, middleware and the recorder all see the mapped action.
public struct ActionMapping<Action: ActionType>: Sendable {
  /// `ObjectIdentifier` of the mapped type.
  let type: ObjectIdentifier
  /// Turns an action of the mapped type, boxed, into the store's action; `nil` if the store does not handle it.
  let map: @Sendable (any ActionType) -> Action?

  private init(type: ObjectIdentifier, map: @escaping @Sendable (any ActionType) -> Action?) {
    self.type = type
    self.map = map
  }

  /// Maps actions of type `Other` to the store's own actions.
  /// - Parameters:
  ///   - type: The action type the store handles beside its own.
  ///   - transform: Returns the store's action for an action of type `Other`, or `nil` if the store does not handle
  ///     that one: the store then takes no part in its dispatch (and is not waited for). Called once per dispatch,
  ///     on the dispatching thread, before the store's wait list is asked.
  /// - Returns: The mapping, for ``Reducer/additionalActions`` or a closure store's `also:`.
  public static func on<Other: ActionType>(
    _ type: Other.Type, _ transform: @escaping @Sendable (Other) -> Action?
  ) -> ActionMapping<Action> {
    ActionMapping(type: ObjectIdentifier(Other.self)) { action in
      // Only actions of `Other` reach this mapping (`ActionMappings.map(_:)` looks it up by the action's type).
      func open<Dispatched: ActionType>(_ action: Dispatched) -> Action? {
        precondition(Dispatched.self == Other.self, "DispatchStore: an action was mapped by another type's mapping")
        return transform(unsafeBitCast(action, to: Other.self))
      }
      return open(action)
    }
  }
}

/// A store's ``ActionMapping``s by type, read once from its reducer.
@usableFromInline
struct ActionMappings<Action: ActionType>: Sendable {
  private let mappings: [ObjectIdentifier: @Sendable (any ActionType) -> Action?]

  @usableFromInline
  init(_ list: [ActionMapping<Action>]) {
    var mappings: [ObjectIdentifier: @Sendable (any ActionType) -> Action?] = [:]
    // The store's own type is routed to it anyway; a type mapped twice keeps its first mapping.
    for mapping in list where mapping.type != ObjectIdentifier(Action.self) && mappings[mapping.type] == nil {
      mappings[mapping.type] = mapping.map
    }
    self.mappings = mappings
  }

  /// The mapped types, which the dispatcher routes to the store beside its own.
  var types: [ObjectIdentifier] { Array(mappings.keys) }

  /// `action` as the store's action, if it is of a mapped type and the mapping handles it.
  func map(_ action: any ActionType) -> Action? {
    mappings[action.routingType].flatMap { $0(action) }
  }
}
