// How a recorded transaction files its record: in the store's critical section that ends the transaction, so that
// the record holds the model that transaction's change produced and takes its place in the history in the order of
// the store's changes (proposal 0010).

/// Where a store files the record of one recorded transaction: the recorder, and the dispatch and transaction the
/// record belongs to.
///
/// Made per transaction while a recorder is registered (``StoreTransaction/Watch/recording(_:)``) and passed to the
/// store with the action.
@usableFromInline
struct RecordingContext: Sendable {
  @usableFromInline let recorder: RecorderMiddleware
  @usableFromInline let dispatchID: TransactionID
  @usableFromInline let transactionID: TransactionID

  init(recorder: RecorderMiddleware, dispatchID: TransactionID, transactionID: TransactionID) {
    self.recorder = recorder
    self.dispatchID = dispatchID
    self.transactionID = transactionID
  }

  /// Files the record of the transaction; returns the recorder's event number, which the store keeps.
  ///
  /// Called under the store's lock, with the model as the transaction left it (``StoreState/recordedEvent``).
  ///
  /// Runs no user code: the recorder only appends under its own lock, taken inside the store's.
  @usableFromInline
  func file(
    store: String, action: any ActionType, model: any ModelType, error: (any Error)?, cancelled: Bool = false,
    elapsed: UInt64 = 0, changedModel: Bool = true
  ) -> UInt64 {
    recorder.file(
      dispatchID: dispatchID, transactionID: transactionID, store: store, action: action, model: model, error: error,
      cancelled: cancelled, elapsed: elapsed, changedModel: changedModel)
  }
}

/// How an operation ended, for its record.
@usableFromInline
struct FinishedOperation {
  @usableFromInline let error: (any Error)?
  @usableFromInline let cancelled: Bool
  /// Nanoseconds from the transaction's start, on the coarse clock its identifier came from.
  @usableFromInline let elapsed: UInt64
  @usableFromInline let recording: RecordingContext
  /// Whether the operation changed its store's model through ``ActionOperation/updateModel(_:)``.
  @usableFromInline let changedModel: Bool

  init(error: (any Error)?, cancelled: Bool, elapsed: UInt64, recording: RecordingContext, changedModel: Bool) {
    self.error = error
    self.cancelled = cancelled
    self.elapsed = elapsed
    self.recording = recording
    self.changedModel = changedModel
  }
}

extension Store {
  /// Files the record of an operation of this store that finished: in a critical section of the store, so that the
  /// record holds the model as it is at that point of the store's changes.
  ///
  /// Reached through ``Store/specialised`` (``SpecialisedWork/fileFinished(_:)``), compiled for the store's types:
  /// called from the operation's unspecialised code, the lock's generic state would be looked up in the runtime's
  /// metadata cache at every record.
  @inlinable
  func fileFinishedOperation(_ action: Action, _ finished: UnsafePointer<FinishedOperation>) {
    state.withLock { state in
      // Changed by this operation, or by something else since the store's last operation record (a change made
      // with `Store.updateModel`): counted as a change, so that undo never steps over one.
      let changed = finished.pointee.changedModel || state.version != state.recordedVersion
      state.recordedVersion = state.version
      state.recordedEvent = finished.pointee.recording.file(
        store: identifier, action: action, model: state.model, error: finished.pointee.error,
        cancelled: finished.pointee.cancelled, elapsed: finished.pointee.elapsed, changedModel: changed)
    }
  }
}
