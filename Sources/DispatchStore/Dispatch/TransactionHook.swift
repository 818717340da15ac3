// The one hook of the dispatch path: a middleware that follows each store's changes in the critical sections that
// make them (the library's recorder, in `Recording/`). The dispatch path calls it at the points only it knows, and
// names nothing beyond it: which entries the hook files, and what it does with them, are its own (proposal 0018).
//
// A transaction's entry is filed in the store's critical section that made its change (for a reduction, the one
// that ends it; for an operation, each that changed the model, or the one where it finished if it changed nothing),
// so that the entry holds the model that change produced and takes its place in the order of the store's changes
// (proposals 0010 and 0014).

/// A middleware the dispatch path tells of each store's changes in the critical sections that make them, and of
/// the transactions around them: the first one registered is the dispatcher's hook (``MiddlewareList/Snapshot/hook``).
///
/// It needs no durations (``Transaction/duration``): its entries carry their transaction's identifier, which holds
/// its start. Its requirements run no user code, but for `didHandle`, called after every lock, where the hook may
/// release what it dropped; those called under a store's lock take no other lock but the hook's own.
@usableFromInline
protocol TransactionHook: Middleware {
  /// ``Middleware/willDispatch(transaction:action:in:)`` when the hook is the only middleware: the dispatch calls it
  /// directly, with the store as it holds it, and makes no `Transaction`.
  func willHandle(_ store: AnyObject, kind: StoreKind)

  /// ``Middleware/didDispatch(transaction:action:in:)`` when the hook is the only middleware; also after a failed
  /// all-or-nothing dispatch put its stores back. Called after the stores' locks: the hook may wake its own work.
  func didHandle()

  /// Keeps the action the app dispatched for transaction `id`, whose store maps it to an action of its own; called
  /// before the store handles it.
  func noteDispatchedAction(_ action: any ActionType, of id: TransactionID)

  /// Files the entry of a transaction (a reduction, or an operation's finish); returns the hook's event number,
  /// which the store keeps (``StoreState/filedEvent``). Called by the store under its lock.
  func file(
    dispatchID: TransactionID, transactionID: TransactionID, store: String, action: any ActionType,
    model: any ModelType, error: (any Error)?, cancelled: Bool, elapsed: UInt64, changedModel: Bool,
    change: UInt32, first: Int
  ) -> UInt64

  /// Files the entry of an operation's change; returns its index and event number, or `nil` if the hook leaves
  /// the store out. Called by the store under its lock, right after the change.
  func fileChange(
    dispatchID: TransactionID, transactionID: TransactionID, store: String, action: any ActionType,
    model: any ModelType, elapsed: UInt64, change: UInt32, first: Int
  ) -> (index: Int, event: UInt64)?

  /// Files the entry of a store put back after its all-or-nothing dispatch failed; returns the hook's event number.
  /// Called by the store under its lock, with the model it was put back to.
  func fileRollback(dispatchID: TransactionID, store: String, action: any ActionType, model: any ModelType) -> UInt64

  /// Gives the entries transaction `transactionID` filed at its changes, from index `first` on, the operation's
  /// error or cancellation. Called by the store under its lock when the operation finished.
  func fileOutcome(transactionID: TransactionID, store: String, from first: Int, error: (any Error)?, cancelled: Bool)

  /// Notes that transaction `transactionID` of store `reader` read the model of store `store`
  /// (``ActionOperation/model(of:as:)``). Called under the lock of the store read, so that what the hook notes
  /// (which of that store's entries its model is) holds the model read.
  func noteRead(of store: String, by transactionID: TransactionID, reader: String)
}

/// What re-runs earlier dispatches on a dispatcher (a session's verify), installed there while it runs
/// (``Dispatcher/replay``): every dispatch it does not make itself reaches it first.
protocol ReplayHook: AnyObject, Sendable {
  /// Whether the replay absorbs the dispatch of `action`, which it did not make (a follow-up of an operation it
  /// re-runs, whose own dispatch it replays in its turn): an absorbed dispatch completes at once, successfully,
  /// without running. With `checked`, the replay checks it against what it replays. Runs no user code but `Codable`
  /// conformances, under no lock of the dispatcher's.
  func absorbs(_ action: any ActionType, storeIdentifier: String?, checked: Bool) -> Bool

  /// The model a re-run operation reads of store `storeIdentifier` (``ActionOperation/model(of:as:)``): the one the
  /// recorded run read there, or `nil` to read the store's own. Runs no user code but `Codable` conformances, where
  /// the operation reads: inside an `updateModel` closure, that is under its store's lock.
  func recordedModel(of storeIdentifier: String) -> (any ModelType)?
}

/// One transaction the hook follows: the hook, and the dispatch and transaction the entries belong to.
///
/// Made per transaction while a hook is registered (``StoreTransaction/Watch/hooked(_:dispatched:)``) and passed to
/// the store with the action.
@usableFromInline
struct HookedTransaction: Sendable {
  @usableFromInline let hook: any TransactionHook
  @usableFromInline let dispatchID: TransactionID
  @usableFromInline let transactionID: TransactionID

  init(hook: any TransactionHook, dispatchID: TransactionID, transactionID: TransactionID) {
    self.hook = hook
    self.dispatchID = dispatchID
    self.transactionID = transactionID
  }

  /// Files the entry of the transaction; returns the hook's event number, which the store keeps.
  ///
  /// Called under the store's lock, with the model as the transaction left it (``StoreState/filedEvent``).
  @usableFromInline
  func file(
    store: String, action: any ActionType, model: any ModelType, error: (any Error)?, cancelled: Bool = false,
    elapsed: UInt64 = 0, changedModel: Bool = true, change: UInt32 = 0, first: Int = -1
  ) -> UInt64 {
    hook.file(
      dispatchID: dispatchID, transactionID: transactionID, store: store, action: action, model: model, error: error,
      cancelled: cancelled, elapsed: elapsed, changedModel: changedModel, change: change, first: first)
  }

  /// Files the entry of an operation's change; returns its index and the hook's event number, or `nil` if the hook
  /// leaves the store out.
  ///
  /// Called under the store's lock, right after the change (``ActionOperation/fileChange(_:)``). The operation's
  /// outcome is not known yet: it succeeded unless ``fileOutcome(store:from:error:cancelled:)`` says otherwise.
  ///
  /// `change` is the entry's number among the operation's, `first` the index of its first (-1 for none).
  @usableFromInline
  func fileChange(
    store: String, action: any ActionType, model: any ModelType, change: UInt32, first: Int
  ) -> (index: Int, event: UInt64)? {
    // How long after its start, on the coarse clock the transaction identifier came from.
    let now = TransactionID.now()
    let started = transactionID.rawValue
    return hook.fileChange(
      dispatchID: dispatchID, transactionID: transactionID, store: store, action: action, model: model,
      elapsed: now > started ? now - started : 0, change: change, first: first)
  }

  /// Notes that the transaction read the model of store `store`; called under that store's lock.
  @usableFromInline
  func noteRead(of store: String, reader: String) {
    hook.noteRead(of: store, by: transactionID, reader: reader)
  }

  /// Gives the entries an operation filed at its changes, from index `first` on, the error it failed with or its
  /// cancellation.
  @usableFromInline
  func fileOutcome(store: String, from first: Int, error: (any Error)?, cancelled: Bool) {
    hook.fileOutcome(transactionID: transactionID, store: store, from: first, error: error, cancelled: cancelled)
  }
}

/// How an operation ended, for its entry.
@usableFromInline
struct FinishedOperation {
  @usableFromInline let error: (any Error)?
  @usableFromInline let cancelled: Bool
  /// Nanoseconds from the transaction's start, on the coarse clock its identifier came from.
  @usableFromInline let elapsed: UInt64
  @usableFromInline let hooked: HookedTransaction
  /// The operation (an `ActionOperation` of the store's types), for the entries it filed at its changes.
  @usableFromInline unowned(unsafe) let operation: AnyObject

  init(error: (any Error)?, cancelled: Bool, elapsed: UInt64, hooked: HookedTransaction, operation: AnyObject) {
    self.error = error
    self.cancelled = cancelled
    self.elapsed = elapsed
    self.hooked = hooked
    self.operation = operation
  }
}

extension Store {
  /// Files what an operation of this store that finished leaves for the hook: in a critical section of the store,
  /// so that an entry filed here holds the model as it is at that point of the store's changes.
  ///
  /// An operation that filed entries at its changes gives them its outcome if it failed or was cancelled, and files
  /// one more only if the store's model changed since its last entry by a change that filed none. One that filed
  /// none files its entry here.
  ///
  /// Reached through ``Store/specialised`` (``SpecialisedWork/fileFinished(_:)``), compiled for the store's types:
  /// called from the operation's unspecialised code, the lock's generic state would be looked up in the runtime's
  /// metadata cache at every entry.
  @inlinable
  func fileFinishedOperation(_ action: Action, _ finished: UnsafePointer<FinishedOperation>) {
    state.withLock { state in
      // Changed since the store's last entry by a change that filed none: counted as a change.
      let changed = state.version != state.filedVersion
      let operation = unsafeDowncast(finished.pointee.operation, to: ActionOperation<Model, Action>.self)
      if operation.firstChangeIndex >= 0, finished.pointee.error != nil || finished.pointee.cancelled {
        finished.pointee.hooked.fileOutcome(
          store: identifier, from: operation.firstChangeIndex, error: finished.pointee.error,
          cancelled: finished.pointee.cancelled)
      }
      if operation.firstChangeIndex >= 0, !changed { return }
      state.filedVersion = state.version
      state.filedEvent = finished.pointee.hooked.file(
        store: identifier, action: action, model: state.model, error: finished.pointee.error,
        cancelled: finished.pointee.cancelled, elapsed: finished.pointee.elapsed, changedModel: changed,
        change: operation.changeCount, first: operation.firstChangeIndex)
    }
  }
}
