/// A store whose model can be replaced by a recorded one, type-erased for the recorder.
protocol ModelRestoring: AnyStore {
  /// The dispatcher the store is registered with, if it is.
  var dispatcher: Dispatcher? { get }

  /// Whether `model` and `action` are of the store's types, so that ``restore(model:action:event:)`` applies them.
  func canRestore(model: any ModelType, action: (any ActionType)?) -> Bool

  /// Replaces the model with `model` and tells observers, with `action` and ``ChangeOrigin/restore``; runs no
  /// reducer. Without an action (a model no recorded action of the store produced: its initial one), observers are
  /// not told.
  ///
  /// `event` is the recorder's number for the move: the model is not replaced if a record filed, or a model
  /// restored, with a later number already changed the store (a dispatch that ran after the move was planned).
  /// - Returns: `false`, changing nothing, if `model` or `action` is not of the store's types.
  @discardableResult
  func restore(model: any ModelType, action: (any ActionType)?, event: UInt64?) -> Bool
}

extension Store: ModelRestoring {
  func canRestore(model: any ModelType, action: (any ActionType)?) -> Bool {
    model is Model && (action == nil || action is Action)
  }

  func restore(model: any ModelType, action: (any ActionType)?, event: UInt64?) -> Bool {
    guard let model = model as? Model else { return false }
    let action = action as? Action
    let deliverer = ThreadContext.currentDeliverer
    // One critical section, as a dispatch's change: observers hear the restored model in the order of the changes.
    let turn = state.withLock { state -> SynchronousTurn<Model, Action> in
      if let event {
        guard event > state.recordedEvent else { return .none }
        state.recordedEvent = event
      }
      state.model = model
      state.version &+= 1
      state.announcedVersion = state.version
      state.recordedVersion = state.version  // A restore is not a change of the next operation's.
      guard let action else { return .none }
      return state.observers?.changes(
        of: model, by: action, origin: .restore, store: self, mainQueue: state.mainQueue, deliverer: deliverer)
        ?? .none
    }
    deliverSynchronously(turn)
    return true
  }
}
