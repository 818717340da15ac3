extension Reducer {
  /// A reducer made of parts, each for a part of the model or a subset of the actions, run in order in one
  /// transaction (Redux's `combineReducers`, TCA's `Scope`).
  ///
  /// ```swift
  /// let shop = Store(
  ///   identifier: "shop", model: Shop(),
  ///   reducer: Reducer<Shop, ShopAction>.combine([
  ///     .scope(\.cart, action: { if case .cart(let a) = $0 { a } else { nil } }, reduce: CartReducer().reduce),
  ///     .forEach(\.orders, action: { if case .order(let id, let action) = $0 { (id, action) } else { nil } }) {
  ///       action, order in order.apply(action)
  ///     },
  ///     .reduce { action, shop in shop.lastAction = "\(action)" },
  ///   ]))
  /// ```
  ///
  /// The parts run in the order given, under the store's lock, as one reduction: observers hear one change, with the
  /// model after every part ran; the recorder files one record. A part that throws fails the transaction; the
  /// parts after it do not run, and no observer is told; the changes made before are kept, and heard with the
  /// store's next change.
  ///
  /// - Parameters:
  ///   - parts: The reducers of parts of the model or subsets of the actions, in the order they run.
  ///   - waitFor: The stores that must finish each action before this store handles it (Flux `waitFor`).
  /// - Returns: A reducer that reduces in place, as a ``SynchronousReducer`` does.
  ///
  /// > Important: As for every ``SynchronousReducer``, the parts run under the store's lock; do not read or update
  /// > this store from inside them.
  public static func combine(_ parts: [ReducerPart<Model, Action>], waitFor: [String] = []) -> Reducer<Model, Action> {
    CombinedReducer(parts, waitFor: waitFor)
  }
}

/// Runs the parts of ``Reducer/combine(_:waitFor:)`` in order, in place.
final class CombinedReducer<Model: ModelType, Action: ActionType>: SynchronousReducer<Model, Action>,
  @unchecked Sendable
{
  /// The parts, in the order they run.
  let parts: [ReducerPart<Model, Action>]
  private let waits: [String]

  init(_ parts: [ReducerPart<Model, Action>], waitFor: [String] = []) {
    self.parts = parts
    self.waits = waitFor
  }

  override func waitList(for action: Action) -> [String] { waits }

  override func reduce(_ action: Action, into model: inout Model) throws {
    for part in parts { try part.reduce(action, &model) }
  }
}

/// Thrown by a ``ReducerPart/forEach(_:action:reduce:)`` part for an element that is not there; the store fails the
/// transaction with ``DispatchError/scopeUnavailable(storeIdentifier:scope:)``, which names it.
@usableFromInline
struct ScopeUnavailable: Error {
  @usableFromInline let scope: String
}
