extension Store {
  /// The store's wait list for `action` (calls the reducer).
  func waitList(for action: any ActionType) -> [String] {
    reducer.waitList(for: ownAction(action))
  }

  /// Handles `action`: reduces it in place if the reducer is a ``SynchronousReducer``, otherwise asks the reducer
  /// for the operation, without starting it.
  func handle(_ action: any ActionType) -> StoreHandling {
    let action = ownAction(action)
    if reducesInPlace, case .reduced(let error) = specialised(self, action, .reduce) { return .reduced(error: error) }
    return .operation(reducer.operation(for: action, in: self))
  }

  /// Whether a dispatch announces the store's change once its transaction finished.
  ///
  /// Not for a store nobody observes (there is nobody to tell), nor for one that reduces in place: it announced the
  /// change in the critical section that made it (``reduceInPlace(_:)``).
  var announcesWhenFinished: Bool {
    !reducesInPlace && registeredObservers.load(ordering: .relaxed) > 0
  }

  /// Announces the change the finished operation made, if any.
  func announceChange(for action: any ActionType) {
    // With no observers there is nobody to tell; the version catches up at the next announcement.
    guard registeredObservers.load(ordering: .relaxed) > 0 else { return }
    _ = specialised(self, ownAction(action), .announce)
  }

  /// `action` as this store handles it: itself if it is of the store's action type, otherwise what the store's
  /// mapping of its type returns (``Reducer/additionalActions``); `nil` if the store does not handle it.
  func storeAction(for action: any ActionType) -> (any ActionType)? {
    if action.routingType == ObjectIdentifier(Action.self) { return action }
    return mappings.map(action)
  }

  /// The action types the store handles beside its own.
  var mappedActionTypes: [ObjectIdentifier] { mappings.types }

  /// `action` as this store's action type, which it is: a dispatch maps an action of another type with
  /// ``storeAction(for:)`` when it is prepared.
  ///
  /// Cheaper than `as!`, which runs the general dynamic cast on every dispatch.
  private func ownAction(_ action: any ActionType) -> Action {
    func project<Dispatched: ActionType>(_ action: Dispatched) -> Action {
      precondition(Dispatched.self == Action.self, "DispatchStore: an action was routed to a store of another type")
      return unsafeBitCast(action, to: Action.self)
    }
    return project(action)
  }
}

/// How a store handled an action.
enum StoreHandling {
  /// A synchronous reducer changed the model; the error is the one it threw.
  case reduced(error: (any Error)?)
  /// The reducer returned this operation, not started yet.
  case operation(any OperationStarting)
}
