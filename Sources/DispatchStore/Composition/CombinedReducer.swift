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

/// One part of a reducer made with ``Reducer/combine(_:waitFor:)``: a reducer of the whole model, of a part at a key path, or of each element of a
/// collection, for the actions it extracts.
public struct ReducerPart<Model: ModelType, Action: ActionType>: Sendable {
  let reduce: @Sendable (Action, inout Model) throws -> Void

  /// A part that handles every action on the whole model.
  /// - Parameter body: Changes the model for an action.
  /// - Returns: The part.
  public static func reduce(_ body: @escaping @Sendable (Action, inout Model) throws -> Void) -> Self {
    Self(reduce: body)
  }

  /// A part that changes the part of the model at `keyPath` with `reduce`, for the actions `extract` finds.
  /// - Parameters:
  ///   - keyPath: Where the part is in the model.
  ///   - extract: The child's action in an action of the store, or `nil` for actions the part ignores.
  ///   - reduce: Changes the part for a child action.
  /// - Returns: The part.
  public static func scope<Child: Sendable, ChildAction: Sendable>(
    _ keyPath: WritableKeyPath<Model, Child> & Sendable, action extract: @escaping @Sendable (Action) -> ChildAction?,
    reduce: @escaping @Sendable (ChildAction, inout Child) throws -> Void
  ) -> Self {
    Self { action, model in
      guard let childAction = extract(action) else { return }
      try reduce(childAction, &model[keyPath: keyPath])
    }
  }

  /// A part that changes one element, by id, of the collection at `keyPath`, for the actions `extract` finds.
  ///
  /// An action for an element that is not there fails the transaction with
  /// ``DispatchError/scopeUnavailable(storeIdentifier:scope:)``, naming the element.
  /// - Parameters:
  ///   - keyPath: Where the collection is in the model.
  ///   - extract: The element's id and the child's action in an action of the store, or `nil` for actions the part
  ///     ignores.
  ///   - reduce: Changes the element for a child action.
  /// - Returns: The part.
  public static func forEach<Elements: MutableCollection & Sendable, ChildAction: Sendable>(
    _ keyPath: WritableKeyPath<Model, Elements> & Sendable,
    action extract: @escaping @Sendable (Action) -> (Elements.Element.ID, ChildAction)?,
    reduce: @escaping @Sendable (ChildAction, inout Elements.Element) throws -> Void
  ) -> Self where Elements.Element: Identifiable, Elements.Element.ID: Sendable {
    Self { action, model in
      guard let (id, childAction) = extract(action) else { return }
      guard let position = model[keyPath: keyPath].firstIndex(where: { $0.id == id }) else {
        throw ScopeUnavailable(scope: "\(keyPath)[id: \(id)]")
      }
      try reduce(childAction, &model[keyPath: keyPath][position])
    }
  }
}

/// Thrown by a ``ReducerPart/forEach(_:action:reduce:)`` part for an element that is not there; the store fails the
/// transaction with ``DispatchError/scopeUnavailable(storeIdentifier:scope:)``, which names it.
@usableFromInline
struct ScopeUnavailable: Error {
  @usableFromInline let scope: String
}
