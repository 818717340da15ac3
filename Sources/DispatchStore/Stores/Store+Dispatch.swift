import Synchronization

// The store's side of a dispatch: what the store does with an action (reduce it in place, or make the operation),
// and how it announces a change. The dispatcher, which is not generic, reaches it through its `StoreKind`.

extension Store {
  /// Handles `action`: reduces it in place if the reducer is a ``SynchronousReducer``, otherwise asks the reducer
  /// for the operation, without starting it.
  ///
  /// With `hooked`, the transaction's entry is filed in the critical section that made its change: the
  /// reduction's, or the operation's changes (``ActionOperation/fileChange(_:)``), or, for an operation that changed
  /// nothing, the one where it finishes (``ActionOperation/attach(_:)``).
  func handle(_ action: any ActionType, hooked: HookedTransaction?) -> StoreHandling {
    let action = ownAction(action)
    if reducesInPlace, case .reduced(let error) = specialised(self, action, .reduce(hooked)) {
      return .reduced(error: error)
    }
    // Counted from before the reducer is asked: a reservation that takes the store after this waits for it.
    if let stopped = enterForOperation() { return .reduced(error: stopped) }
    // Started right after this returns (``DispatchRun/handleStore(_:of:kind:context:hooked:)``): the store counts
    // it as running from its start until it finishes (``ActionOperation/finish()``).
    let operation = reducer.operation(for: action, in: self)
    if let hooked { operation.attach(hooked) }
    return .operation(operation)
  }
}

/// How a store handled an action.
enum StoreHandling {
  /// A synchronous reducer changed the model; the error is the one it threw.
  case reduced(error: (any Error)?)
  /// The reducer returned this operation, not started yet.
  case operation(any OperationStarting)
}

extension Store {
  /// Runs the ``SynchronousReducer``'s `reduce(_:into:)` on the model and announces the change (``change(by:_:)``);
  /// returns the error it threw, as the transaction fails with it.
  ///
  /// With `hooked`, the transaction's entry is filed in the same critical section, with the model and error the
  /// reduction produced.
  @inlinable
  func reduceInPlace(_ action: Action, hooked: HookedTransaction? = nil) -> (any Error)? {
    // Borrowed: the store holds its reducer.
    Unmanaged.passUnretained(reducer)._withUnsafeGuaranteedRef { reducer in
      let reducer = unsafeDowncast(reducer, to: SynchronousReducer<Model, Action>.self)
      // A reducer that throws notifies nobody.
      let changed = change(by: action, hooked: hooked, announcesFailure: false, gated: true) {
        (model: inout Model) throws(any Error) in
        try reducer.reduce(action, into: &model)
      }
      guard case .failure(let error) = changed else { return nil }
      return reductionError(error)
    }
  }

  /// The error a ``SynchronousReducer`` threw, as the transaction fails with it.
  @inlinable
  func reductionError(_ error: any Error) -> any Error {
    if error is SynchronousReducer<Model, Action>.NotImplemented {
      return DispatchError.reducerNotImplemented(storeIdentifier: identifier)
    }
    if let missing = error as? ScopeUnavailable {
      return DispatchError.scopeUnavailable(storeIdentifier: identifier, scope: missing.scope)
    }
    return error
  }

  /// Reduce and announce, the one body of every change a dispatch makes (an in-place reduction, an operation's
  /// ``ActionOperation/updateModel(_:)``): runs `body` on the model, under the lock, and announces the change, which
  /// `action` made, in the same critical section, so that its notification carries the model `body` produced, also
  /// while other threads change the store.
  ///
  /// A synchronous observer hears it before this returns (``deliverSynchronously(_:)``). Changes `body` made before
  /// throwing are kept, and announced unless `announcesFailure` is `false` (an in-place reduction: a reducer that
  /// throws notifies nobody; what it changed is heard with the next announcement, as when nobody observed the
  /// store). The reducer is asked whether to notify before the lock (it is user code), and
  /// only if the store is observed. An observer registered between that look and the critical section hears the
  /// change after it (``announceChange(of:)``): once `observe` returned, a change its first read of the model did
  /// not show is announced to it. With nobody observing, the announced version is left behind, and catches up at the
  /// next announcement.
  ///
  /// With `hooked`, the transaction's entry is filed in the same critical section too; with `operation`, a hooked
  /// operation's, the entry of its change (``ActionOperation/fileChange(_:)``).
  @inlinable
  @inline(__always)
  func change<Value, Failure: Error>(
    by action: Action, hooked: HookedTransaction? = nil, operation: ActionOperation<Model, Action>? = nil,
    announcesFailure: Bool = true, gated: Bool = false, _ body: (inout Model) throws(Failure) -> Value
  ) -> Result<Value, Failure> {
    let shouldNotify: Bool? =
      registeredObservers.load(ordering: .relaxed) > 0 ? reducer.shouldNotifyObservers(for: action, in: self) : nil
    let (result, turn, observedMeanwhile) = state.withLock {
      state -> (Result<Value, Failure>, SynchronousTurn<Model, Action>, Bool) in
      // A reduction of another dispatch while an all-or-nothing dispatch holds the store: parked, changing nothing.
      if gated, let gate = state.gate, let stopped = gate.stop() {
        // `gated` is only passed where `Failure` is `any Error`.
        return (.failure(stopped as! Failure), .none, false)
      }
      let result: Result<Value, Failure>
      do throws(Failure) {
        result = .success(try body(&state.model))
      } catch {
        result = .failure(error)
      }
      state.version &+= 1
      if let hooked {
        let failure: (any Error)?
        if case .failure(let error) = result { failure = reductionError(error) } else { failure = nil }
        state.filedEvent = hooked.file(store: identifier, action: action, model: state.model, error: failure)
      }
      operation?.fileChange(&state)
      // Lists left empty by the last observer's token are nobody to tell: not an observer registered meanwhile.
      guard let observers = state.observers, observers.mainThread.count + observers.synchronous.count > 0 else {
        return (result, .none, false)
      }
      if !announcesFailure, case .failure = result { return (result, .none, false) }
      guard let shouldNotify else { return (result, .none, true) }
      state.announcedVersion = state.version
      guard shouldNotify else { return (result, .none, false) }
      let turn = observers.changes(
        of: state.model, by: action, origin: .dispatch, store: self, mainQueue: state.mainQueue,
        deliverer: ThreadContext.currentDeliverer)
      return (result, turn, false)
    }
    if case .none = turn {
      if observedMeanwhile { announceChange(of: action) }
    } else {
      deliverSynchronously(turn)
    }
    return result
  }
}
