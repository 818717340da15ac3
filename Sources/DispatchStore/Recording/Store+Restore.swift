/// A store whose model can be replaced by a recorded one, type-erased for the recorder.
protocol ModelRestoring: AnyStore {
  /// The dispatcher the store is registered with, if it is.
  var dispatcher: Dispatcher? { get }

  /// Whether an all-or-nothing dispatch holds the store (``Reservation``): restores refuse it.
  var isHeld: Bool { get }

  /// Whether `model` and `action` are of the store's types, so that ``restore(model:action:event:)`` applies them.
  func canRestore(model: any ModelType, action: (any ActionType)?) -> Bool

  /// Replaces the model with `model` and tells observers, with `action` and ``ModelChange/isRestore`` set; runs no
  /// reducer. Without an action (a model no recorded action of the store produced: its initial one), observers are
  /// not told.
  ///
  /// `event` is the recorder's number for the move: the model is not replaced if a record filed, or a model
  /// restored, with a later number already changed the store (a dispatch that ran after the move was planned).
  /// - Returns: `false`, changing nothing, if `model` or `action` is not of the store's types, or an all-or-nothing
  ///   dispatch holds the store (whose rollback would put back its own model over this one).
  @discardableResult
  func restore(model: any ModelType, action: (any ActionType)?, event: UInt64?) -> Bool

  /// Takes the store's lock, runs `inner` under it, and, if `inner` committed a move, applies this store's model
  /// from it in the same critical section.
  ///
  /// With `waiting`, waits for the lock (call it holding no other lock); otherwise returns `.busy` at once, running
  /// nothing, if the lock is taken. Fails with ``SessionError/storeBusy(storeIdentifier:)``, running nothing, if an
  /// all-or-nothing dispatch holds the store. The notification observers hear goes to `deliveries`, for the caller to
  /// deliver once every lock is released.
  func restoreLocked(waiting: Bool, _ inner: () -> MoveAttempt, deliveries: PendingDeliveries) -> MoveAttempt
}

/// How an attempt to move the recorder's cursor with every store to restore locked ended
/// (``ModelRestoring/restoreLocked(waiting:_:deliveries:)``).
enum MoveAttempt {
  case committed(RecorderState.Commit)
  /// The lock of the store with this identifier was taken: nothing changed.
  case busy(String)
  /// The move needs a store that is not locked (a dispatch brought it): nothing changed.
  case replan
  case failed(SessionError)
}

extension Store: ModelRestoring {
  func canRestore(model: any ModelType, action: (any ActionType)?) -> Bool {
    model is Model && (action == nil || action is Action)
  }

  func restore(model: any ModelType, action: (any ActionType)?, event: UInt64?) -> Bool {
    guard let model = model as? Model else { return false }
    let action = action as? Action
    let deliverer = ThreadContext.currentDeliverer
    // The model replaced is dropped after the lock: a class inside a model may run its `deinit`.
    var replaced: Model?
    // One critical section, as a dispatch's change: observers hear the restored model in the order of the changes.
    let turn = state.withLock { state -> SynchronousTurn<Model, Action>? in
      if state.gate?.owner != nil { return nil }
      if let event {
        guard event > state.filedEvent else { return SynchronousTurn.none }
        state.filedEvent = event
      }
      replaced = state.model
      state.model = model
      state.version &+= 1
      state.announcedVersion = state.version
      state.filedVersion = state.version  // A restore is not a change of the next operation's.
      guard let action else { return SynchronousTurn.none }
      return state.observers?.changes(
        of: model, by: action, origin: .restore, store: self, mainQueue: state.mainQueue, deliverer: deliverer)
        ?? SynchronousTurn.none
    }
    withExtendedLifetime(replaced) {}
    guard let turn else { return false }
    deliverSynchronously(turn)
    return true
  }

  func restoreLocked(waiting: Bool, _ inner: () -> MoveAttempt, deliveries: PendingDeliveries) -> MoveAttempt {
    let deliverer = ThreadContext.currentDeliverer
    let outcome: (MoveAttempt, SynchronousTurn<Model, Action>)?
    // Checked before `inner` commits the move: a held store's holder would put back its own model over the restore.
    // (Inline closures: a local function capturing `inner` cannot be passed where the lock sends the state.)
    let busy = MoveAttempt.failed(.storeBusy(storeIdentifier: identifier))
    // The model replaced is dropped after the lock: a class inside a model may run its `deinit`.
    var replaced: Model?
    if waiting {
      outcome = state.withLock { state in
        state.gate?.owner != nil
          ? (busy, SynchronousTurn.none) : applying(inner(), to: &state, replacing: &replaced, deliverer: deliverer)
      }
    } else {
      outcome = state.withLockIfAvailable { state in
        state.gate?.owner != nil
          ? (busy, SynchronousTurn.none) : applying(inner(), to: &state, replacing: &replaced, deliverer: deliverer)
      }
    }
    withExtendedLifetime(replaced) {}
    guard let (attempt, turn) = outcome else { return .busy(identifier) }
    if case .none = turn {} else { deliveries.add(for: self) { [self] in deliverSynchronously(turn) } }
    return attempt
  }

  /// Applies this store's model from `attempt`, if it committed a move, under the lock (``restoreLocked``); returns
  /// the attempt and the notification for observers, and leaves the model it replaced in `replaced`.
  private func applying(
    _ attempt: MoveAttempt, to state: inout StoreState<Model, Action>, replacing replaced: inout Model?,
    deliverer: (thread: ObjectIdentifier, mayWait: Bool)
  ) -> (MoveAttempt, SynchronousTurn<Model, Action>) {
    guard case .committed(let commit) = attempt,
      let step = commit.plan.steps.first(where: { $0.storeIdentifier == identifier }),
      let model = step.model as? Model
    else { return (attempt, .none) }
    state.filedEvent = commit.event
    replaced = state.model
    state.model = model
    state.version &+= 1
    state.announcedVersion = state.version
    state.filedVersion = state.version  // A restore is not a change of the next operation's.
    guard let action = step.action as? Action, let observers = state.observers else { return (attempt, .none) }
    return (
      attempt,
      observers.changes(
        of: model, by: action, origin: .restore, store: self, mainQueue: state.mainQueue, deliverer: deliverer)
    )
  }
}
