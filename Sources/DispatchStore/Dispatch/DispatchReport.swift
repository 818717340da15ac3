/// What a dispatch did: its result, and the actions that reached the stores.
///
/// With no ``Interceptor`` registered, `actions` is the dispatched action. An interceptor that replaced it leaves the
/// replacement there; one that blocked it leaves `actions` empty and `result` failed with
/// ``DispatchError/blocked(interceptor:reason:)``.
struct DispatchReport: Sendable {
  /// Success, or the error that made the dispatch fail.
  let result: Result<Void, DispatchError>
  /// The actions routed to the stores: the dispatched one, or what interceptors replaced it with.
  let actions: [any ActionType]

  init(result: Result<Void, DispatchError>, actions: [any ActionType]) {
    self.result = result
    self.actions = actions
  }
}
