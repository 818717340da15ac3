// The reducers behind the closure initialisers of `Store` (Store+Closures.swift): for small stores, a closure
// instead of a subclass. Subclassing `Reducer` stays the way to write anything more.

/// Reduces in place with a closure.
@usableFromInline
final class ClosureReducer<Model: ModelType, Action: ActionType>: SynchronousReducer<Model, Action>,
  @unchecked Sendable
{
  @usableFromInline let waits: WaitList<Action>
  @usableFromInline let mappings: [ActionMapping<Action>]
  @usableFromInline let body: @Sendable (Action, inout Model) throws -> Void

  @usableFromInline
  init(
    waitFor waits: WaitList<Action>, also mappings: [ActionMapping<Action>],
    body: @escaping @Sendable (Action, inout Model) throws -> Void
  ) {
    self.waits = waits
    self.mappings = mappings
    self.body = body
  }

  @usableFromInline override func waitList(for action: Action) -> [String] { waits.identifiers(action) }

  @usableFromInline override var additionalActions: [ActionMapping<Action>] { mappings }

  @usableFromInline override func reduce(_ action: Action, into model: inout Model) throws {
    try body(action, &model)
  }
}

/// Runs each action as an `async` operation whose closure receives the ``ActionOperation``.
@usableFromInline
final class ClosureOperationReducer<Model: ModelType, Action: ActionType>: Reducer<Model, Action>,
  @unchecked Sendable
{
  @usableFromInline let waits: WaitList<Action>
  @usableFromInline let mappings: [ActionMapping<Action>]
  @usableFromInline let body: @Sendable (Action, ActionOperation<Model, Action>) async throws -> Void

  @usableFromInline
  init(
    waitFor waits: WaitList<Action>, also mappings: [ActionMapping<Action>],
    body: @escaping @Sendable (Action, ActionOperation<Model, Action>) async throws -> Void
  ) {
    self.waits = waits
    self.mappings = mappings
    self.body = body
  }

  @usableFromInline override func waitList(for action: Action) -> [String] { waits.identifiers(action) }

  @usableFromInline override var additionalActions: [ActionMapping<Action>] { mappings }

  @usableFromInline override func operation(
    for action: Action, in store: Store<Model, Action>
  ) -> ActionOperation<Model, Action> {
    ActionOperation(action: action, store: store) { [body] operation in
      try await body(action, operation)
    }
  }
}
