/// A part of a parent store's model, with the actions that change it, to hand to a part of the app.
///
/// ```swift
/// let cart = shop.scope(\.cart, action: ShopAction.cart)
/// try await cart.dispatch(action: .add("milk"))   // a transaction of `shop`: middleware and the recorder see it
/// let token = cart.observe { change in print(change.model.items) }  // only when the cart changed
/// ```
///
/// A child store holds no model of its own: its ``model`` is read from the parent, and its actions are the parent's,
/// dispatched to the parent alone, so every change is a transaction of the parent. Its observers hear a change only
/// when their part of the model changed. A child of one element of a collection
/// (``Store/scope(_:id:action:)->ChildStore<Model,Action,Elements.Element,ChildAction>``) fails further dispatches with
/// ``DispatchError/scopeUnavailable(storeIdentifier:scope:)`` once the element is gone, rather than trapping.
///
/// > Important: Safe to use from any thread, like its parent. The parent must be registered with a dispatcher for
/// > dispatches to run; otherwise they fail with ``DispatchError/unknownStore(identifier:)``.
public final class ChildStore<
  ParentModel: ModelType, ParentAction: ActionType, Model: Sendable, Action: Sendable
>: Sendable {
  /// The store whose model this is a part of.
  @usableFromInline let parent: Store<ParentModel, ParentAction>
  /// The part, as errors name it: a key path, or a collection and an element's id.
  @usableFromInline let scope: String
  // Usable from inlinable code, so that the child's observers and dispatches are specialised in the app's module:
  // unspecialised, each notification would look up the part's generic metadata at run time.
  @usableFromInline let extract: @Sendable (ParentModel) -> Model?
  @usableFromInline let embed: @Sendable (Action) -> ParentAction

  @usableFromInline
  init(
    parent: Store<ParentModel, ParentAction>, scope: String, extract: @escaping @Sendable (ParentModel) -> Model?,
    embed: @escaping @Sendable (Action) -> ParentAction
  ) {
    self.parent = parent
    self.scope = scope
    self.extract = extract
    self.embed = embed
  }

  /// A snapshot of the part; `nil` if it no longer exists.
  @inlinable
  public var model: Model? {
    extract(parent.model)
  }

  /// Dispatches `action` to the parent, as its action, and returns when it finished (as `dispatchSync`).
  /// - Parameter action: The child's action.
  /// - Throws: ``DispatchError/scopeUnavailable(storeIdentifier:scope:)`` if the part no longer exists, or what the
  ///   parent's dispatch failed with.
  func dispatchSync(_ action: Action) throws(DispatchError) {
    let (dispatcher, parentAction) = try prepare(action)
    try dispatcher.dispatchSync(action: parentAction, to: parent.identifier)
  }

  /// Dispatches `action` to the parent, as its action, and returns when it finished.
  /// - Parameters:
  ///   - action: The child's action.
  ///   - mode: How the dispatch runs.
  /// - Throws: ``DispatchError/scopeUnavailable(storeIdentifier:scope:)`` if the part no longer exists, or what the
  ///   parent's dispatch failed with.
  public func dispatch(action: Action, mode: Dispatcher.Mode = .async) async throws(DispatchError) {
    let (dispatcher, parentAction) = try prepare(action)
    try await dispatcher.dispatch(action: parentAction, to: parent.identifier, mode: mode)
  }

  /// The parent's dispatcher and the parent action for `action`, once the part is known to exist.
  func prepare(_ action: Action) throws(DispatchError) -> (Dispatcher, ParentAction) {
    guard let dispatcher = parent.dispatcher else { throw .unknownStore(identifier: parent.identifier) }
    guard extract(parent.model) != nil else {
      throw .scopeUnavailable(storeIdentifier: parent.identifier, scope: scope)
    }
    return (dispatcher, embed(action))
  }
}

extension ChildStore where Model: Equatable {
  /// Calls `onChange` after every change of the parent that changed this part, for as long as the returned token
  /// lives.
  ///
  /// Changes of other parts of the parent are not delivered; nor is the removal of the part.
  /// - Parameters:
  ///   - synchronously: `false` (the default) to call `onChange` on the dispatcher's main queue; `true` to call it
  ///     on the thread that changed the parent.
  ///   - onChange: Called with a ``ModelChange`` whose model is the part after the change, whose action is the
  ///     parent's action that made it, and whose ``ModelChange/isRestore`` says whether the recorder restored it.
  /// - Returns: The token that keeps the observation alive.
  ///
  /// > Important: As for the parent's observers, notifications never overlap and keep the order of the changes.
  public func observe(
    synchronously: Bool = false, _ onChange: @escaping @Sendable (ModelChange<Model, ParentAction>) -> Void
  ) -> ObservationToken {
    // The part as last delivered: only this observation's notifications, which never overlap, read and write it.
    let last = LockedValue<Model?>(nil)
    let current = extract(parent.model)
    last.withLock { $0 = current }
    let extract = extract
    return parent.observe(synchronously: synchronously) { change in
      guard let part = extract(change.model) else { return }
      let previous = last.withLock { state in
        defer { state = part }
        return state
      }
      // Outside the lock: `==` is the app's code.
      if previous != part { onChange(ModelChange(model: part, action: change.action, isRestore: change.isRestore)) }
    }
  }
}

extension Store {
  /// A child store presenting the part of this store's model at `keyPath`, whose actions are embedded in this
  /// store's.
  ///
  /// ```swift
  /// let cart = shop.scope(\.cart, action: ShopAction.cart)
  /// ```
  /// - Parameters:
  ///   - keyPath: Where the part is in the model.
  ///   - embed: Makes this store's action from the child's (often an enum case with the child's action).
  /// - Returns: The child store.
  @inlinable
  public func scope<Child: Sendable, ChildAction: Sendable>(
    _ keyPath: KeyPath<Model, Child> & Sendable, action embed: @escaping @Sendable (ChildAction) -> Action
  ) -> ChildStore<Model, Action, Child, ChildAction> {
    ChildStore(parent: self, scope: "\(keyPath)", extract: { $0[keyPath: keyPath] }, embed: embed)
  }

  /// A child store presenting one element, by id, of the collection at `keyPath`, whose actions are embedded in
  /// this store's with the element's id.
  ///
  /// ```swift
  /// let row = list.scope(\.todos, id: todo.id, action: TodoListAction.todo)  // .todo(id:, TodoAction)
  /// ```
  /// Once the element is gone, the child's dispatches fail with
  /// ``DispatchError/scopeUnavailable(storeIdentifier:scope:)`` and its ``ChildStore/model`` is `nil`.
  /// - Parameters:
  ///   - keyPath: Where the collection is in the model.
  ///   - id: The element's id.
  ///   - embed: Makes this store's action from the element's id and the child's action.
  /// - Returns: The child store.
  @inlinable
  public func scope<Elements: Collection & Sendable, ChildAction: Sendable>(
    _ keyPath: KeyPath<Model, Elements> & Sendable, id: Elements.Element.ID,
    action embed: @escaping @Sendable (Elements.Element.ID, ChildAction) -> Action
  ) -> ChildStore<Model, Action, Elements.Element, ChildAction>
  where Elements.Element: Identifiable & Sendable, Elements.Element.ID: Sendable {
    ChildStore(
      parent: self, scope: "\(keyPath)[id: \(id)]",
      extract: { model in model[keyPath: keyPath].first { $0.id == id } },
      embed: { action in embed(id, action) })
  }

  /// A child store presenting one element, by id, of the ``IdentifiedList`` at `keyPath`, whose actions are embedded
  /// in this store's with the element's id.
  ///
  /// The same as the collection's scope, except that the element is found by its id in O(log n) rather than by a
  /// search, so that a child's reads and its observer's checks cost the same in a list of any length.
  /// - Parameters:
  ///   - keyPath: Where the list is in the model.
  ///   - id: The element's id.
  ///   - embed: Makes this store's action from the element's id and the child's action.
  /// - Returns: The child store.
  @inlinable
  public func scope<Element: Identifiable & Sendable, ChildAction: Sendable>(
    _ keyPath: KeyPath<Model, IdentifiedList<Element>> & Sendable, id: Element.ID,
    action embed: @escaping @Sendable (Element.ID, ChildAction) -> Action
  ) -> ChildStore<Model, Action, Element, ChildAction> where Element.ID: Sendable {
    ChildStore(
      parent: self, scope: "\(keyPath)[id: \(id)]",
      extract: { model in model[keyPath: keyPath][id: id] },
      embed: { action in embed(id, action) })
  }
}
