import Synchronization

/// Holds one value-type model, changed only by the operations its ``Reducer`` returns for dispatched actions.
///
/// ```swift
/// let counter = Store(identifier: "counter", model: Counter(), reducer: CounterReducer())
/// let dispatcher = Dispatcher()
/// try dispatcher.register(store: counter)
/// try dispatcher.dispatchSync(action: CounterAction.increase(by: 1))
/// print(counter.model.count)  // 1
/// ```
///
/// > Important: A store is safe to use from any thread. ``model`` is a consistent snapshot, and each change (a
/// > reduction, an operation's ``ActionOperation/updateModel(_:)``) is atomic.
public final class Store<Model: ModelType, Action: ActionType>: Sendable {
  /// The identifier the store is registered and addressed under.
  public let identifier: String
  /// The reducer that turns actions into operations.
  @usableFromInline let reducer: Reducer<Model, Action>

  // Usable from inlinable code so that `model` and the reductions are specialised in the app's module: unspecialised,
  // each call would look up the generic metadata of this mutex at run time.
  @usableFromInline let state: LockedValue<StoreState<Model, Action>>
  /// The number of observer entries in `state`, readable without its lock.
  ///
  /// Kept beside the state so that a store nobody observes skips the lock when an operation finishes. Written
  /// under the lock; read without it.
  @usableFromInline let registeredObservers: Atomic<Int>
  /// The operations running on the store, and whether an all-or-nothing dispatch holds it (``StoreGate/Word``).
  ///
  /// An atomic word beside the state, so that an operation enters and leaves without the lock; a reservation
  /// changes it under the lock.
  @usableFromInline let gateWord: Atomic<UInt64>
  /// Runs the store's dispatch work that must be specialised for its types: announcing a finished operation's change
  /// (``announceChange(of:)``), and reducing an action in place with a ``SynchronousReducer``
  /// (``reduceInPlace(_:hooked:)``).
  ///
  /// The dispatcher is not generic, so code it calls on a store runs unspecialised, and unspecialised generic code
  /// looks up the metadata of every generic type it touches at run time (proposal 0004 has the measurements). This
  /// closure is made by the inlinable initialiser, in the app's module, where `Model` and `Action` are known: the
  /// work runs as specialised code. One closure serves both, so that a store carries one rather than two.
  @usableFromInline let specialised: @Sendable (Store<Model, Action>, Action, SpecialisedWork) -> SpecialisedOutcome
  /// Whether the reducer is a ``SynchronousReducer``, so that a dispatch asks `specialised` to reduce only then.
  @usableFromInline let reducesInPlace: Bool
  /// The action types the store handles beside `Action` (``Reducer/additionalActions``).
  @usableFromInline let mappings: ActionMappings<Action>

  /// Creates a store.
  /// - Parameters:
  ///   - identifier: A name unique within the dispatcher the store is registered with.
  ///   - model: The initial model.
  ///   - reducer: The reducer that handles this store's actions.
  @inlinable
  public init(identifier: String, model: Model, reducer: Reducer<Model, Action>) {
    self.identifier = identifier
    self.reducer = reducer
    self.state = LockedValue(StoreState(model: model))
    self.registeredObservers = Atomic(0)
    self.gateWord = Atomic(0)
    self.reducesInPlace = type(of: reducer).reducesInPlace
    self.mappings = ActionMappings(reducer.additionalActions)
    self.specialised = Self.specialisedWork
  }

  /// A snapshot of the current model.
  @inlinable
  public var model: Model {
    state.withLock { $0.model }
  }

  /// The dispatcher the store was last registered with, while it is registered there; `nil` otherwise.
  ///
  /// Operations use it to dispatch follow-up actions (``ActionOperation/dispatcher``).
  var dispatcher: Dispatcher? {
    state.withLock { $0.dispatcher }
  }
}

/// The shared mutable state of a ``Store``, kept behind its one lock.
@usableFromInline
struct StoreState<Model: ModelType, Action: ActionType> {
  @usableFromInline var model: Model
  /// Incremented by every change (a reduction in place, an operation's ``ActionOperation/updateModel(_:)``).
  @usableFromInline var version: UInt64 = 0
  /// The version observers last heard about (or that a reducer chose not to announce).
  @usableFromInline var announcedVersion: UInt64 = 0
  /// Observer registrations; `nil` until the first.
  @usableFromInline var observers: ObserverLists<Model, Action>?
  @usableFromInline var mainQueue = MainQueue.default
  /// The dispatcher the store was last registered with, while it is registered there.
  @usableFromInline weak var dispatcher: Dispatcher?
  /// The hook's event number of the last entry filed or model restored here (``TransactionHook``): a restore planned
  /// before it is not applied.
  @usableFromInline var filedEvent: UInt64 = 0
  /// `version` when an operation's entry was last filed here (at a change, or at its finish): an entry filed at an
  /// operation's finish counts as a change if the version moved since.
  @usableFromInline var filedVersion: UInt64 = 0
  /// The all-or-nothing dispatch holding the store, and the dispatches waiting for it; `nil` while none is.
  @usableFromInline var gate: StoreGate?

  @inlinable
  init(model: Model) {
    self.model = model
  }
}

extension Store: TypedStore {
  /// The type of the actions this store handles.
  var actionType: any ActionType.Type { Action.self }
  /// The type of this store's model.
  var modelType: any ModelType.Type { Model.self }
  /// A snapshot of the model, type-erased.
  public var anyModel: any ModelType { model }

  func anyModel(noting note: () -> Void) -> any ModelType {
    state.withLock { state in
      note()
      return state.model
    }
  }
}
