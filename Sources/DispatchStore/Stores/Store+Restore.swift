/// A store whose model can be replaced by a recorded one, type-erased for the recorder.
protocol ModelRestoring: AnyStore {
  /// Replaces the model with `model` and tells observers, as if `action` had produced it; runs no reducer.
  ///
  /// - Returns: `false`, changing nothing, if `model` or `action` is not of the store's types.
  func restore(model: any ModelType, action: any ActionType) -> Bool
}

extension Store: ModelRestoring {
  func restore(model: any ModelType, action: any ActionType) -> Bool {
    guard let model = model as? Model, let action = action as? Action else { return false }
    updateModel { $0 = model }
    announceChange(of: action, askingReducer: false)
    return true
  }
}
