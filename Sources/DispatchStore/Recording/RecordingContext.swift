// How a recorded transaction files its record: in the store's critical section that made its change (for a
// reduction, the one that ends it; for an operation, each that changed the model, or the one where it finished if it
// changed nothing), so that the record holds the model that change produced and takes its place in the history in
// the order of the store's changes (proposals 0010 and 0014).

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
    elapsed: UInt64 = 0, changedModel: Bool = true, change: UInt32 = 0, first: Int = -1
  ) -> UInt64 {
    recorder.file(
      dispatchID: dispatchID, transactionID: transactionID, store: store, action: action, model: model, error: error,
      cancelled: cancelled, elapsed: elapsed, changedModel: changedModel, change: change, first: first)
  }

  /// Files the record of an operation's change; returns its index and the recorder's event number, or `nil` if the
  /// recorder leaves the store out.
  ///
  /// Called under the store's lock, right after the change (``ActionOperation/fileChange(_:)``). The operation's
  /// outcome is not known yet: it succeeded unless ``fileOutcome(store:from:error:cancelled:)`` says otherwise.
  ///
  /// `change` is the record's number among the operation's, `first` the index of its first (-1 for none).
  @usableFromInline
  func fileChange(
    store: String, action: any ActionType, model: any ModelType, change: UInt32, first: Int
  ) -> (index: Int, event: UInt64)? {
    // How long after its start, on the coarse clock the transaction identifier came from.
    let now = TransactionID.now()
    let started = transactionID.rawValue
    return recorder.fileChange(
      dispatchID: dispatchID, transactionID: transactionID, store: store, action: action, model: model,
      elapsed: now > started ? now - started : 0, change: change, first: first)
  }

  /// Gives the records an operation filed at its changes, from index `first` on, the error it failed with or its
  /// cancellation.
  @usableFromInline
  func fileOutcome(store: String, from first: Int, error: (any Error)?, cancelled: Bool) {
    recorder.fileOutcome(transactionID: transactionID, store: store, from: first, error: error, cancelled: cancelled)
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
  /// The operation (an `ActionOperation` of the store's types), for the records it filed at its changes.
  @usableFromInline unowned(unsafe) let operation: AnyObject

  init(error: (any Error)?, cancelled: Bool, elapsed: UInt64, recording: RecordingContext, operation: AnyObject) {
    self.error = error
    self.cancelled = cancelled
    self.elapsed = elapsed
    self.recording = recording
    self.operation = operation
  }
}

extension Store {
  /// Files what an operation of this store that finished leaves for its records: in a critical section of the
  /// store, so that a record filed here holds the model as it is at that point of the store's changes.
  ///
  /// An operation that filed records at its changes gives them its outcome if it failed or was cancelled, and files
  /// one more only if the store's model changed since its last record by a change that filed none. One that filed
  /// none files its record here.
  ///
  /// Reached through ``Store/specialised`` (``SpecialisedWork/fileFinished(_:)``), compiled for the store's types:
  /// called from the operation's unspecialised code, the lock's generic state would be looked up in the runtime's
  /// metadata cache at every record.
  @inlinable
  func fileFinishedOperation(_ action: Action, _ finished: UnsafePointer<FinishedOperation>) {
    state.withLock { state in
      // Changed since the store's last record by a change that filed none. Counted as a change, so that undo never
      // steps over one.
      let changed = state.version != state.recordedVersion
      let operation = unsafeDowncast(finished.pointee.operation, to: ActionOperation<Model, Action>.self)
      if operation.firstChangeIndex >= 0, finished.pointee.error != nil || finished.pointee.cancelled {
        finished.pointee.recording.fileOutcome(
          store: identifier, from: operation.firstChangeIndex, error: finished.pointee.error,
          cancelled: finished.pointee.cancelled)
      }
      if operation.firstChangeIndex >= 0, !changed { return }
      state.recordedVersion = state.version
      state.recordedEvent = finished.pointee.recording.file(
        store: identifier, action: action, model: state.model, error: finished.pointee.error,
        cancelled: finished.pointee.cancelled, elapsed: finished.pointee.elapsed, changedModel: changed,
        change: operation.changeCount, first: operation.firstChangeIndex)
    }
  }
}
