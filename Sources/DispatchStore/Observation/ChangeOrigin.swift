/// What made a change that observers hear: a dispatch, or the recorder restoring recorded models (time travel).
///
/// ```swift
/// store.observe(delivery: .synchronous) { model, action, origin in
///   guard origin == .dispatch else { return }  // do not repeat side effects while the user scrubs history
///   analytics.log(action)
/// }
/// ```
public enum ChangeOrigin: Sendable, Hashable {
  /// A reducer or an operation changed the model while handling a dispatched action.
  case dispatch
  /// The recorder replaced the model with a recorded one (``RecorderMiddleware/undo(by:)``,
  /// ``RecorderMiddleware/redo(by:)``, ``RecorderMiddleware/jump(to:by:)``, ``Session/restore(into:)``); no reducer
  /// ran.
  case restore
}
