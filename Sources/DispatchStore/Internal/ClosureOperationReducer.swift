// The reducer behind `Store`'s closure initialiser for operations (Store+Closures.swift).

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
