import Foundation

/// One recorded change: which store handled which action in which dispatch, how the transaction ended, and the
/// store's model right after the change.
///
/// A transaction has one record, or, for an operation that changed its store several times, one per change, in the
/// order of the store's changes. The model is the value itself (models are value types), not an encoding. It is the
/// model the change produced, taken in the same critical section as that change.
public struct Record: Sendable, CustomStringConvertible {
  // A slot of a chunk rather than an object of its own: a recorder files its records into chunks of slots, so that
  // recording a transaction allocates nothing and dropping old records frees one object per chunk.
  private let chunk: RecordChunk
  private let slot: Int

  private var fields: RecordChunk.Fields {
    _read { yield chunk[slot] }
  }

  /// The record's position in the session's history, counted from the session's first record.
  public var index: Int { fields.index }
  /// The transaction that produced this record, finished: its identifier, its dispatch (records of one dispatch are
  /// undone and redone together), its store, the action as the store handled it, its duration and its error.
  ///
  /// The duration runs from the transaction's start to this record, to the tick of the coarse clock its identifier
  /// reads (a few milliseconds on Linux): it shows the wait for a response, not how long a reduction took; zero for
  /// reductions in place. A record loaded from a file carries a ``RecordedError`` with the original's description.
  public var transaction: Transaction {
    let fields = self.fields
    var transaction = Transaction(
      id: fields.transactionID, dispatchID: fields.dispatchID, storeIdentifier: fields.storeIdentifier,
      action: fields.action, finished: true, duration: duration, error: fields.error)
    transaction.wasCancelled = fields.wasCancelled
    return transaction
  }
  /// The dispatch the transaction belongs to.
  var dispatchID: TransactionID { fields.dispatchID }
  /// The transaction that produced this record.
  var transactionID: TransactionID { fields.transactionID }
  /// The store that handled the action.
  var storeIdentifier: String { fields.storeIdentifier }
  /// The action, as the store handled it.
  var action: any ActionType { fields.action }
  /// The action the app dispatched: the transaction's action, unless the store mapped the dispatched action to one of
  /// its own (``Reducer/additionalActions``), as recorded in this process (a session file keeps the store's action).
  public var dispatchedAction: any ActionType { fields.dispatched?.action ?? fields.action }
  /// The store's model right after the change, including the changes of a transaction that failed.
  public var model: any ModelType { fields.model }
  /// The error the transaction failed with; `nil` if it succeeded.
  var error: (any Error)? { fields.error }
  /// Whether the dispatch was cancelled while the transaction ran (``ActionOperation/isCancelled``).
  var wasCancelled: Bool { fields.wasCancelled }
  /// How long an operation's transaction took from its start to its record.
  var duration: Duration { .nanoseconds(Int64(clamping: fields.elapsed)) }

  /// Whether the transaction succeeded.
  var succeeded: Bool { error == nil && !wasCancelled }

  /// Creates a record.
  /// - Parameters:
  ///   - index: The position in the session's history.
  ///   - dispatchID: The dispatch the transaction belongs to.
  ///   - transactionID: The transaction that produced it.
  ///   - storeIdentifier: The store that handled the action.
  ///   - action: The action.
  ///   - model: The store's model after the transaction.
  ///   - error: The error the transaction failed with, if it did.
  ///   - wasCancelled: Whether the dispatch was cancelled while the transaction ran.
  ///   - duration: How long the transaction took.
  init(
    index: Int, dispatchID: TransactionID, transactionID: TransactionID, storeIdentifier: String,
    action: any ActionType, model: any ModelType, error: (any Error)? = nil, wasCancelled: Bool = false,
    duration: Duration = .zero
  ) {
    let (seconds, attoseconds) = duration.components
    let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds) / 1_000_000_000
    self.init(
      index: index, dispatchID: dispatchID, transactionID: transactionID, storeIdentifier: storeIdentifier,
      action: action, model: model, error: error, wasCancelled: wasCancelled, elapsed: UInt64(nanoseconds))
  }

  /// A record in a chunk of its own.
  init(
    index: Int, dispatchID: TransactionID, transactionID: TransactionID, storeIdentifier: String,
    action: any ActionType, model: any ModelType, error: (any Error)?, wasCancelled: Bool, elapsed: UInt64,
    changedModel: Bool = true, redaction: RedactionMark = RedactionMark(), change: UInt32 = 0,
    isRollback: Bool = false
  ) {
    let chunk = RecordChunk(capacity: 1)
    self = chunk.append(
      RecordChunk.Fields(
        index: index, dispatchID: dispatchID, transactionID: transactionID, storeIdentifier: storeIdentifier,
        action: action, model: model, error: error, wasCancelled: wasCancelled, changedModel: changedModel,
        redaction: redaction, isRollback: isRollback, change: change, elapsed: elapsed))
  }

  /// The record in `slot` of `chunk`, which is filled.
  fileprivate init(chunk: RecordChunk, slot: Int) {
    self.chunk = chunk
    self.slot = slot
  }

  /// Nanoseconds from the transaction's start to its record.
  var elapsed: UInt64 { fields.elapsed }

  /// The record's fields, with the outcome of its operation, which finished after the record was filed at its
  /// change (``RecorderState/fileOutcome(transactionID:store:from:error:cancelled:)``).
  func fieldsWithOutcome(error: (any Error)?, cancelled: Bool) -> RecordChunk.Fields {
    let fields = self.fields
    return RecordChunk.Fields(
      index: fields.index, dispatchID: fields.dispatchID, transactionID: fields.transactionID,
      storeIdentifier: fields.storeIdentifier, action: fields.action, model: fields.model, error: error,
      wasCancelled: cancelled, changedModel: fields.changedModel, redaction: fields.redaction,
      isRollback: fields.isRollback,
      change: fields.change, elapsed: fields.elapsed, dispatched: fields.dispatched)
  }

  /// This record, in a chunk of its own, with the outcome of its operation (a session file's outcome line).
  func withOutcome(error: (any Error)?, cancelled: Bool) -> Record {
    RecordChunk(capacity: 1).append(fieldsWithOutcome(error: error, cancelled: cancelled))
  }

  /// Whether the transaction may have changed its store's model (``RecordChunk/Fields/changedModel``).
  var changedModel: Bool { fields.changedModel }

  /// What the session's privacy settings replaced in the record (a record loaded from a file that marks it).
  var redaction: RedactionMark { fields.redaction }

  /// The record's number among its transaction's: 0 for the first (or only) one; an operation files one per change.
  var change: Int { Int(fields.change) }

  /// Whether the record puts the store back where it was before its dispatch.
  ///
  /// An all-or-nothing dispatch (``DispatchOptions/allOrNothing``) failed after changing the store. The record's model
  /// is the one put back; no reducer made it.
  var isRollback: Bool { fields.isRollback }

  /// The action the app dispatched, if the store mapped it (``dispatchedAction``).
  var dispatched: DispatchedAction? { fields.dispatched }

  /// `#index [dispatch/transaction] store <- action`, and how it failed or that it rolled the store back.
  public var description: String {
    var text = "#\(index) [\(dispatchID)/\(transactionID)] \(storeIdentifier) <- \(action)"
    if isRollback { text += " (rolled back)" }
    if let error { text += " failed: \(error)" }
    if wasCancelled { text += " (cancelled)" }
    return text
  }
}

/// Records' fields in fixed slots, filled in order and never changed: the storage of ``Record``.
///
/// A recorder files each record into the next free slot of its current chunk, under its lock, and publishes the
/// record only then; a slot is read only through a published record. So a slot is written once, before any thread
/// can read it, and reads of filled slots never meet the write of another slot (different memory). The fields are
/// destroyed with the chunk, when its last record is released: by the recorder after its lock, like any record it
/// drops.
///
/// `@unchecked Sendable` for that reason: `count` is only changed by ``append(_:)``, which the recorder calls under
/// its lock (a standalone record's chunk is appended to once, before it is shared), and read by `deinit`.
final class RecordChunk: @unchecked Sendable {
  /// The slots of a recorder's chunk.
  static let capacity = 64

  struct Fields {
    let index: Int
    let dispatchID: TransactionID
    let transactionID: TransactionID
    let storeIdentifier: String
    let action: any ActionType
    let model: any ModelType
    let error: (any Error)?
    let wasCancelled: Bool
    // The flags next to `wasCancelled`, in the same word of the slot.
    /// Whether the transaction may have changed the store's model: `false` only for an operation during which the
    /// store's model did not change (its version did not move), which undo and redo step over.
    var changedModel = true
    /// What a recorder's privacy settings replaced in the record, as a session file marks it.
    var redaction = RedactionMark()
    /// Whether the record puts the store back after its all-or-nothing dispatch failed (``Record/isRollback``).
    var isRollback = false
    /// The record's number among its transaction's (``Record/change``).
    var change: UInt32 = 0
    let elapsed: UInt64
    /// The action the app dispatched, where the store handled an action it mapped that one to.
    var dispatched: DispatchedAction? = nil
  }

  private let slots: UnsafeMutablePointer<Fields>
  let capacity: Int
  /// The filled slots: only under the recorder's lock or in `deinit`, so unchecked by the runtime.
  @exclusivity(unchecked) private var count = 0

  /// A chunk with `capacity` free slots.
  init(capacity: Int = RecordChunk.capacity) {
    self.capacity = capacity
    slots = .allocate(capacity: capacity)
  }

  /// Whether every slot is filled.
  var isFull: Bool { count >= capacity }

  /// Fills the next slot with `fields` and returns its record; the chunk must not be full.
  func append(_ fields: consuming Fields) -> Record {
    precondition(count < capacity, "DispatchStore: a record chunk is full")
    (slots + count).initialize(to: fields)
    count += 1
    return Record(chunk: self, slot: count - 1)
  }

  /// The fields of a filled slot.
  subscript(slot: Int) -> Fields {
    _read { yield slots[slot] }
  }

  deinit {
    slots.deinitialize(count: count)
    slots.deallocate()
  }
}

/// The action an app dispatched, kept with a record whose store mapped it to an action of its own: a reference, so
/// that records of unmapped actions (most) pay one pointer for it.
final class DispatchedAction: Sendable {
  let action: any ActionType

  init(_ action: any ActionType) {
    self.action = action
  }
}

/// An error as a session keeps it, its description: a recorded transaction's error, or, while
/// ``Session/verify(against:mode:)`` re-runs a session, the error a recorded effect's fetch threw.
///
/// An operation that failed because its fetch failed fails again with it; one that handled the failure (showing
/// "offline", retrying later) handles this error the same way, unless it tells errors apart by type.
public struct RecordedError: Error, Sendable, CustomStringConvertible {
  /// The original error's description (`String(describing:)`).
  public let description: String
  /// The key of the effect whose fetch threw it (`ActionOperation.effect(_:_:)`), or `nil` for a
  /// transaction's error.
  public let effectKey: String?

  /// Creates a recorded error.
  /// - Parameters:
  ///   - description: The original error's description.
  ///   - effectKey: The effect's key, for an effect's error.
  init(description: String, effectKey: String? = nil) {
    self.description = description
    self.effectKey = effectKey
  }
}
