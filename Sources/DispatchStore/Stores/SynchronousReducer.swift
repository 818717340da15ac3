/// A reducer that changes the model in place, with no operation: for stores whose every action is an immediate
/// change of the model (most are).
///
/// ```swift
/// final class CounterReducer: SynchronousReducer<Counter, CounterAction>, @unchecked Sendable {
///   override func reduce(_ action: CounterAction, into model: inout Counter) throws {
///     switch action {
///     case .increase(let amount): model.count += amount
///     case .reset: model.count = 0
///     }
///   }
/// }
/// ```
///
/// A dispatch calls ``reduce(_:into:)`` directly, under the store's lock, like an operation calling
/// ``ActionOperation/updateModel(_:)``; everything else is as for any reducer: wait lists, observers, middleware,
/// recording.
/// For work that finishes later, subclass ``Reducer`` and return operations.
///
/// Every call of `reduce(_:into:)` that returns counts as a change of the model, as every
/// ``ActionOperation/updateModel(_:)`` does: observers hear about it even if nothing changed, with the model this call
/// produced. A call that throws notifies no observer. Override ``Reducer/shouldNotifyObservers(for:in:)`` to keep
/// some actions quiet; for a synchronous reducer it is asked before `reduce(_:into:)` runs.
///
/// > Important: `reduce(_:into:)` runs under the store's lock: do not read or update this store from inside it
/// > (that traps: the lock is not recursive). A `.sync` dispatch from inside it fails with
/// > ``DispatchError/reentrantSynchronousDispatch(actionType:)``; other modes are allowed. Like any reducer, it is
/// > called from whichever thread runs the dispatch, possibly several at once.
open class SynchronousReducer<Model: ModelType, Action: ActionType>: Reducer<Model, Action>, @unchecked Sendable {
  /// Creates a reducer that reduces in place.
  public override init() {}

  @usableFromInline override class var reducesInPlace: Bool { true }

  /// Changes `model` to handle `action`.
  ///
  /// The default throws ``DispatchError/reducerNotImplemented(storeIdentifier:)``: override it.
  /// - Parameters:
  ///   - action: The dispatched action.
  ///   - model: The store's model, changed in place.
  /// - Throws: An error to fail the transaction with. Throw before changing `model`: a reduction that throws notifies
  ///   no observer. A change made before the throw is kept (the model is not rolled back), and observers hear it with
  ///   the store's next change.
  open func reduce(_ action: Action, into model: inout Model) throws {
    throw NotImplemented()
  }

  /// An operation that runs ``reduce(_:into:)`` under the store's lock and finishes.
  ///
  /// Dispatchers do not use it: they reduce in place. It lets code that works with operations (tests) treat this
  /// reducer like any other.
  /// - Parameters:
  ///   - action: The dispatched action.
  ///   - store: The store the operation changes.
  /// - Returns: An operation that finishes before its start returns.
  public final override func operation(
    for action: Action, in store: Store<Model, Action>
  ) -> ActionOperation<Model, Action> {
    ActionOperation(action: action, store: store) { operation, action, store in
      if case .reduced(let error?) = store.specialised(store, action, .reduce(nil)) {
        operation.finish(throwing: error)
      } else {
        operation.finish()
      }
    }
  }

  /// Thrown by the default ``reduce(_:into:)``; the store turns it into
  /// ``DispatchError/reducerNotImplemented(storeIdentifier:)``, which names it.
  @usableFromInline
  struct NotImplemented: Error {
    @usableFromInline init() {}
  }
}
