/// What made a change that observers hear: a dispatch, or the recorder restoring recorded models (time travel).
///
/// Observers see it as ``ModelChange/isRestore``.
@usableFromInline
enum ChangeOrigin: Sendable, Hashable {
  /// A reducer or an operation changed the model while handling a dispatched action.
  case dispatch
  /// The recorder replaced the model with a recorded one; no reducer ran.
  case restore
}
