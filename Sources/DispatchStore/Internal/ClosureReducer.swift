// The reducer behind `Store`'s closure initialiser for in-place reductions (Store+Closures.swift): for small stores,
// a closure instead of a subclass. Subclassing `Reducer` stays the way to write anything more.

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
