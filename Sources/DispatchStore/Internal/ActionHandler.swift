/// What a dispatch needs from a store that handles actions of type `HandledAction`.
protocol ActionHandler<HandledAction>: AnyStore {
  associatedtype HandledAction: ActionType

  /// The store's wait list for `action` (calls the reducer).
  func waitList(for action: HandledAction) -> [String]
  /// Asks the reducer for an operation and starts it; `handler` hears when it finished.
  func startOperation(for action: HandledAction, notifying handler: any OperationCompletionHandler, token: Int)
  /// Announces the change the finished operation made, if any.
  func announceChange(for action: HandledAction)
}

extension Store: ActionHandler {
  func waitList(for action: Action) -> [String] {
    reducer.waitList(for: action)
  }

  func startOperation(for action: Action, notifying handler: any OperationCompletionHandler, token: Int) {
    reducer.operation(for: action, in: self).start(notifying: handler, token: token)
  }
}
