/// Turns a store's actions into operations; subclass it for each store.
///
/// ```swift
/// final class CounterReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
///   override func operation(
///     for action: CounterAction, in store: Store<Counter, CounterAction>
///   ) -> ActionOperation<Counter, CounterAction> {
///     ActionOperation(action: action, store: store) { operation, action, _ in
///       switch action {
///       case .increase(let amount): operation.updateModel { $0.count += amount }
///       case .reset: operation.updateModel { $0.count = 0 }
///       }
///       operation.finish()
///     }
///   }
/// }
/// ```
///
/// When handling an action is always an immediate change of the model, subclass ``SynchronousReducer`` instead: it
/// changes the model directly, with no operation. A small store needs no subclass at all: see
/// ``Store/init(identifier:model:waitFor:also:reduce:)`` and ``Store/init(identifier:model:waitFor:also:operation:)``.
///
/// Swift asks every subclass of a `Sendable` class to restate the conformance, hence `@unchecked Sendable` in each
/// subclass.
///
/// > Important: A reducer is called from whichever thread runs the dispatch, possibly several at once. Keep
/// > subclasses free of mutable state, or protect it yourself. (`@unchecked Sendable` because the class is open:
/// > the base class has no state at all.)
open class Reducer<Model: ModelType, Action: ActionType>: @unchecked Sendable {
  /// Creates a reducer.
  public init() {}

  /// Whether this is a ``SynchronousReducer``, whose actions the store reduces in place without an operation.
  ///
  /// A class property, not a stored one: a second designated initialiser would stop subclasses from calling
  /// `init()` implicitly.
  @usableFromInline class var reducesInPlace: Bool { false }

  /// Returns the operation that handles `action` for `store`.
  ///
  /// The default returns an operation that fails with ``DispatchError/reducerNotImplemented(storeIdentifier:)``:
  /// override it.
  /// - Parameters:
  ///   - action: The dispatched action.
  ///   - store: The store the operation changes.
  /// - Returns: An operation that changes `store`'s model and then finishes.
  open func operation(for action: Action, in store: Store<Model, Action>) -> ActionOperation<Model, Action> {
    ActionOperation(action: action, store: store) { operation, _, store in
      operation.finish(throwing: DispatchError.reducerNotImplemented(storeIdentifier: store.identifier))
    }
  }

  /// Whether observers hear about the change `action` made; `true` unless overridden.
  /// - Parameters:
  ///   - action: The action whose operation finished.
  ///   - store: The store it changed.
  /// - Returns: `false` to keep this change quiet.
  open func shouldNotifyObservers(for action: Action, in store: Store<Model, Action>) -> Bool {
    true
  }

  /// The action types this store handles beside `Action`, each mapped to one of its own actions; none unless
  /// overridden.
  ///
  /// The store is routed every action of a mapped type, from any dispatch, as the action its mapping returns: an
  /// app-wide action (signing out, selecting a country) reaches every store that maps it, in waitFor order. Read
  /// once, when the store is created.
  open var additionalActions: [ActionMapping<Action>] {
    []
  }

  /// The identifiers of the stores that must finish handling `action` before this store's operation starts
  /// (Flux `waitFor`); empty unless overridden.
  ///
  /// A listed store that does not handle the dispatched action (neither as its own type nor through
  /// ``additionalActions``) is not waited for. A cycle, or an identifier that no
  /// registered store has, fails the whole dispatch before any operation runs.
  /// - Parameter action: The dispatched action.
  /// - Returns: Store identifiers to wait for.
  open func waitList(for action: Action) -> [String] {
    []
  }
}
