/// One change of a model, as observers receive it: the model after the change, the action that made it, and whether
/// the recorder restored it.
///
/// A store's observers (``Store/observe(synchronously:_:)``) and ``Store/changes(bufferingNewest:)`` receive the
/// store's model and action; a child store's observers (``ChildStore/observe(synchronously:_:)``) receive their part
/// of the model and the parent's action.
public struct ModelChange<Model: Sendable, Action: Sendable>: Sendable {
  /// The model right after the change.
  public let model: Model
  /// The action that made the change (for a restore, the action of the record restored or undone).
  ///
  /// What a reducer changed before it threw is heard with the store's next change, under that change's action.
  public let action: Action
  /// Whether the recorder restored the model instead of a dispatch changing it; no reducer ran.
  ///
  /// Restores are ``RecorderMiddleware/undo(byRecord:)``, ``RecorderMiddleware/redo(byRecord:)``,
  /// ``RecorderMiddleware/jump(to:byRecord:)``, ``RecorderMiddleware/resume(_:in:)``, ``Session/restore(into:)``, and
  /// an all-or-nothing dispatch putting its stores back after it failed (with the dispatch's action). An observer that
  /// starts side effects skips them, so scrubbing through history repeats none.
  public let isRestore: Bool

  @usableFromInline
  init(model: Model, action: Action, isRestore: Bool) {
    self.model = model
    self.action = action
    self.isRestore = isRestore
  }
}
