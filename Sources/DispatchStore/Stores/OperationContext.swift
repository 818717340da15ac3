/// What an operation written as a closure (``Store/init(identifier:model:waitFor:also:operation:)``) works with: its
/// action, the store's model, changes, follow-up dispatches, and the models of other stores.
///
/// ```swift
/// let profile = Store(identifier: "profile", model: Profile(), waitFor: ["session"]) {
///   (action: ProfileAction, context) in
///   let token = context.model(of: "session", as: Session.self)?.token
///   let loaded = try await api.profile(token: token)
///   context.update { $0 = loaded }
///   context.dispatch(FeedAction.reload)
/// }
/// ```
///
/// > Important: Safe to use from any thread, while the operation runs; returning from the closure finishes it.
public struct OperationContext<Model: ModelType, Action: ActionType>: Sendable {
  /// The operation the closure runs as.
  public let operation: ActionOperation<Model, Action>

  /// The action being handled.
  public var action: Action { operation.action }

  /// A snapshot of the store's model.
  public var model: Model { operation.store.model }

  /// Whether the dispatch was cancelled; the closure's task is cancelled too.
  public var isCancelled: Bool { operation.isCancelled }

  /// Changes the store's model atomically; observers hear the change at once (``ActionOperation/updateModel(_:)``).
  /// - Parameter body: Mutates the model in place and may return a value.
  /// - Returns: What `body` returned.
  /// - Throws: What `body` threw; the mutations it made before throwing are kept.
  ///
  /// > Important: `body` runs under the store's lock: do not read or update this store from inside it.
  @discardableResult
  public func update<Value, Failure: Error>(_ body: (inout Model) throws(Failure) -> Value) throws(Failure) -> Value {
    try operation.updateModel(body)
  }

  /// Dispatches a follow-up action on the store's dispatcher, without waiting for it.
  /// - Parameters:
  ///   - action: The action to dispatch.
  ///   - mode: How it runs; `.async` by default.
  /// - Returns: The follow-up's handle, or `nil` if the store is no longer registered with a dispatcher.
  @discardableResult
  public func dispatch<Other: ActionType>(_ action: Other, mode: Dispatcher.Mode = .async) -> DispatchHandle? {
    operation.dispatcher?.start(action: action, mode: mode)
  }

  /// The model of another store registered with the same dispatcher, by identifier: typically one this store
  /// waits for, which has finished handling the action.
  /// - Parameters:
  ///   - identifier: The other store's identifier.
  ///   - type: The other store's model type.
  /// - Returns: A snapshot of that store's model, or `nil` if no store with that identifier and model type is
  ///   registered.
  public func model<OtherModel: ModelType>(of identifier: String, as type: OtherModel.Type) -> OtherModel? {
    operation.dispatcher?.store(with: identifier)?.anyModel as? OtherModel
  }
}
