extension Store {
  /// Creates a store whose actions change the model in place through `reduce`: a small store without a reducer
  /// subclass.
  ///
  /// ```swift
  /// let counter = Store(identifier: "counter", model: Counter()) { (action: CounterAction, model) in
  ///   switch action {
  ///   case .increase(let amount): model.count += amount
  ///   case .reset: model.count = 0
  ///   }
  /// }
  /// ```
  /// - Parameters:
  ///   - identifier: A name unique within the dispatcher the store is registered with.
  ///   - model: The initial model.
  ///   - waitFor: The stores that must finish each action before this one handles it (Flux `waitFor`): a list, or
  ///     ``WaitList/perAction(_:)``.
  ///   - also: Actions of other types the store handles as its own (app-wide actions), as
  ///     ``Reducer/additionalActions``.
  ///   - reduce: Changes the model for an action, as ``SynchronousReducer/reduce(_:into:)`` does; what it throws
  ///     fails the transaction and notifies no observer (throw before changing the model: a change made before is
  ///     kept, and heard with the store's next change).
  ///
  /// > Important: `reduce` runs under the store's lock, from whichever thread dispatches: do not read or update
  /// > this store from inside it.
  @inlinable
  public convenience init(
    identifier: String, model: Model, waitFor: WaitList<Action> = [], also: [ActionMapping<Action>] = [],
    reduce: @escaping @Sendable (Action, inout Model) throws -> Void
  ) {
    self.init(
      identifier: identifier, model: model, reducer: ClosureReducer(waitFor: waitFor, also: also, body: reduce))
  }

  /// Creates a store whose actions run as `async` operations of `operation`: a store that fetches or waits, without
  /// a reducer subclass.
  ///
  /// ```swift
  /// let search = Store(identifier: "search", model: Results()) { (action: SearchAction, operation) in
  ///   guard case .query(let text) = action else { return }
  ///   let hits = try await operation.effect("search \(text)") { try await index.search(text) }  // recorded
  ///   operation.updateModel { $0.hits = hits }
  ///   operation.dispatcher?.start(action: HistoryAction.remember(text))  // a follow-up
  /// }
  /// ```
  /// - Parameters:
  ///   - identifier: A name unique within the dispatcher the store is registered with.
  ///   - model: The initial model.
  ///   - waitFor: The stores that must finish each action before this one handles it (Flux `waitFor`): a list, or
  ///     ``WaitList/perAction(_:)``.
  ///   - also: Actions of other types the store handles as its own (app-wide actions), as
  ///     ``Reducer/additionalActions``.
  ///   - operation: Handles an action with the ``ActionOperation`` it runs as (its model, its changes, effects,
  ///     follow-ups, other stores' models); returning finishes the operation, throwing fails it. It runs as a task,
  ///     cancelled with its dispatch.
  @inlinable
  public convenience init(
    identifier: String, model: Model, waitFor: WaitList<Action> = [], also: [ActionMapping<Action>] = [],
    operation: @escaping @Sendable (Action, ActionOperation<Model, Action>) async throws -> Void
  ) {
    self.init(
      identifier: identifier, model: model,
      reducer: ClosureOperationReducer(waitFor: waitFor, also: also, body: operation))
  }
}
