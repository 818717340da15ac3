/// One part of a reducer made with ``Reducer/combine(_:waitFor:)``: a reducer of the whole model, of a part at a key
/// path, or of each element of a collection, for the actions it extracts.
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

  /// A part that changes one element, by id, of the ``IdentifiedList`` at `keyPath`, for the actions `extract` finds.
  ///
  /// The same as the collection's part, except that the element is found by its id in O(log n) rather than by a
  /// search. `reduce` must not change the element's id (that traps, as setting ``IdentifiedList/subscript(id:)``
  /// with another id does).
  /// - Parameters:
  ///   - keyPath: Where the list is in the model.
  ///   - extract: The element's id and the child's action in an action of the store, or `nil` for actions the part
  ///     ignores.
  ///   - reduce: Changes the element for a child action.
  /// - Returns: The part.
  public static func forEach<Element: Identifiable & Sendable, ChildAction: Sendable>(
    _ keyPath: WritableKeyPath<Model, IdentifiedList<Element>> & Sendable,
    action extract: @escaping @Sendable (Action) -> (Element.ID, ChildAction)?,
    reduce: @escaping @Sendable (ChildAction, inout Element) throws -> Void
  ) -> Self where Element.ID: Sendable {
    Self { action, model in
      guard let (id, childAction) = extract(action) else { return }
      guard model[keyPath: keyPath][id: id] != nil else { throw ScopeUnavailable(scope: "\(keyPath)[id: \(id)]") }
      try reduce(childAction, &model[keyPath: keyPath][id: id]!)
    }
  }
}
