/// Why a session could not be loaded, written, restored or verified, or the recorder could not move its cursor.
///
/// Loading validates the whole file before anything is applied, and a move or a restore checks every store before
/// it changes one, so any of these leaves your stores and the file as they were.
public enum SessionError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The file could not be written.
  case io(path: String, reason: String)
  /// There is no file at the path.
  case noFile(path: String)
  /// The path leads to something other than a regular file (a directory, a FIFO, a device, a socket), which is left
  /// as it is.
  case notARegularFile(path: String, kind: String)
  /// The file exists but could not be opened or read (permissions, a loop of symbolic links, an I/O error); it is
  /// never taken for an empty session.
  case cannotRead(path: String, reason: String)
  /// Another recorder, in this process or another, has the file open for appending: it holds the file's lock
  /// until it is released or attached elsewhere.
  case inUse(path: String)
  /// Writing something else there (an inspector page) would replace a session file, which is left as it is.
  case wouldReplaceSession(path: String)
  /// The file has no header line, or the header is not a DispatchStore session header.
  case missingHeader(path: String)
  /// The session was written in a format version this library does not read.
  case unsupportedVersion(found: Int, supported: Int, line: Int)
  /// A line is not valid JSON, or not a valid record or cursor line.
  case corruptLine(line: Int, reason: String)
  /// A line names a store the app registered no codec for, or that the header does not list.
  case unknownStore(identifier: String, line: Int)
  /// The header's type names for a store differ from the app's codec.
  case typeMismatch(storeIdentifier: String, recorded: String, registered: String, line: Int)
  /// A record or cursor refers to a position the history never had.
  case invalidIndex(Int, line: Int)
  /// A record could not be encoded for writing.
  case encodingFailed(storeIdentifier: String, reason: String)
  /// A line's hash does not follow from the lines before it: this line, or the one before, was edited, deleted,
  /// duplicated or moved since the recorder wrote them.
  case integrityCheckFailed(line: Int)
  /// The file's history does not end where the recorder's begins: resume the session into the recorder
  /// (``RecorderMiddleware/resume(_:in:)``) before appending to its file.
  case historyMismatch(fileRecords: Int, recorderRecords: Int)
  /// The session file at `path` changed after this session was loaded from it (another recorder appended to it or
  /// moved its cursor, or it was replaced): writing over it would lose those lines, so it is left as it is. Load it
  /// again.
  case fileChanged(path: String)
  /// The recorder is attached to the session file at `path`, which goes on the history that
  /// ``RecorderMiddleware/resume(_:in:)`` would replace: resume before attaching.
  case recorderAttached(path: String)

  // Restoring and verifying

  /// The store named by record `index` is not registered in the dispatcher, or has other types; `index` is one less
  /// than the session's first record for a store of the snapshot before it (-1 in a session that starts at 0).
  case unregisteredStore(index: Int, storeIdentifier: String)
  /// Re-running a transaction that succeeded when recorded failed.
  case dispatchFailed(
    index: Int, dispatchID: TransactionID, storeIdentifier: String, action: String, error: DispatchError)
  /// A transaction that failed when recorded succeeded when re-run.
  case outcomeDiffered(
    index: Int, dispatchID: TransactionID, storeIdentifier: String, action: String, recordedError: String)
  /// After re-running a transaction, the store's model differs from the recorded one in these fields (for a record
  /// that says its transaction changed nothing, from the model before it).
  case diverged(
    index: Int, dispatchID: TransactionID, storeIdentifier: String, action: String, differences: [FieldDifference])
  /// An operation asked for an effect (`ActionOperation.effect(_:_:)`) that the session did not record for its
  /// dispatch.
  case missingEffect(dispatchID: TransactionID, key: String)
  /// The session recorded an effect for a dispatch that no operation asked for when it was re-run.
  case unusedEffect(dispatchID: TransactionID, key: String)
  /// Re-run, the operation of record `index` dispatched a follow-up action that no record of the session holds
  /// (the session's records of the follow-ups it sent when recorded are replayed in their turn).
  case unrecordedFollowUp(index: Int, dispatchID: TransactionID, action: String)
  /// The operation of record `index` changed its store again after record `otherIndex`, of another transaction of
  /// that store: their changes interleaved, which re-running whole operations one after another cannot reproduce.
  case interleavedChanges(
    index: Int, dispatchID: TransactionID, storeIdentifier: String, action: String, otherIndex: Int)
  /// The session holds redacted models of these stores (``SessionPrivacy``), which cannot be put back in the app, or
  /// records of stores the resuming recorder leaves out: ``RecorderMiddleware/resume(_:in:)`` refuses it
  /// (``Session/restore(into:)`` restores the other stores).
  case redacted(storeIdentifiers: [String])

  // Moving the recorder's cursor

  /// The position is not in the retained history.
  case indexOutOfRange(Int, valid: ClosedRange<Int>)
  /// A recorded model could not be restored: no store is registered under its identifier in the dispatcher it was
  /// recorded in any more, or the one registered there has other types.
  case storeUnavailable(storeIdentifier: String)
  /// A store to restore is held by an all-or-nothing dispatch that is still running
  /// (`DispatchOptions(allOrNothing: true)`): nothing was changed. Try again once that dispatch ended.
  case storeBusy(storeIdentifier: String)
  /// There is nothing to undo: no record at or before the cursor changed a model that undo can put back (the
  /// cursor is before the first record kept, or the records before it changed nothing).
  case atStartOfHistory
  /// There is nothing to redo: the cursor is at the last record.
  case atEndOfHistory

  /// A readable explanation that names the line where there is one.
  public var description: String {
    switch self {
    case .io(let path, let reason): return "Cannot write session file \(path): \(reason)"
    case .noFile(let path): return "There is no session file at \(path)"
    case .notARegularFile(let path, let kind):
      return "\(path) is \(kind), not a regular file: session files are regular files; it was left untouched"
    case .cannotRead(let path, let reason): return "Cannot read session file \(path): \(reason)"
    case .inUse(let path):
      return "Session file \(path) is in use: another recorder, perhaps in another process, is appending to it"
    case .wouldReplaceSession(let path): return "\(path) is a session file: it was not written over"
    case .missingHeader(let path): return "\(path) is not a DispatchStore session: line 1 is not a session header"
    case .unsupportedVersion(let found, let supported, let line):
      return "Line \(line): session format version \(found) is not supported (this library reads \(supported))"
    case .corruptLine(let line, let reason): return "Line \(line) is corrupt: \(reason)"
    case .unknownStore(let identifier, let line):
      return "Line \(line): unknown store \"\(identifier)\" (register a codec for it)"
    case .typeMismatch(let store, let recorded, let registered, let line):
      return "Line \(line): store \"\(store)\" was recorded as \(recorded) but is registered as \(registered)"
    case .invalidIndex(let index, let line): return "Line \(line): position \(index) is outside the history"
    case .encodingFailed(let store, let reason): return "Cannot encode a record of store \"\(store)\": \(reason)"
    case .integrityCheckFailed(let line):
      return "Line \(line) fails the integrity check: it or the line before it was changed after it was written"
    case .historyMismatch(let file, let recorder) where file == recorder:
      return
        "The file's history is not the one the recorder resumed (the file changed since, or the recorder moved); load and resume it again"
    case .historyMismatch(let file, let recorder):
      return
        "The file's history has \(file) records but the recorder's next record is #\(recorder); resume the session first"
    case .fileChanged(let path):
      return "The session file \(path) changed after it was loaded; it was left as it is (load it again)"
    case .recorderAttached(let path):
      return "The recorder is attached to \(path), whose history resuming would replace; resume before attaching"
    case .unregisteredStore(let index, let store) where index < 0:
      return "Before the first record: store \"\(store)\" is not registered in the dispatcher, or has other types"
    case .unregisteredStore(let index, let store):
      return "Record #\(index): store \"\(store)\" is not registered in the dispatcher, or has other types"
    case .dispatchFailed(let index, let dispatch, let store, let action, let error):
      return "Record #\(index) (dispatch \(dispatch)): dispatching \(action) to \"\(store)\" failed: \(error)"
    case .outcomeDiffered(let index, let dispatch, let store, let action, let recorded):
      return
        "Record #\(index) (dispatch \(dispatch)): \(action) to \"\(store)\" succeeded, but failed when recorded: \(recorded)"
    case .diverged(let index, let dispatch, let store, let action, let differences):
      let fields = differences.map { "\n  \($0)" }.joined()
      return "Record #\(index) (dispatch \(dispatch)): after \(action), store \"\(store)\" diverged:\(fields)"
    case .missingEffect(let dispatch, let key):
      return "Dispatch \(dispatch) asked for the effect \"\(key)\", which the session did not record"
    case .unusedEffect(let dispatch, let key):
      return "Dispatch \(dispatch) recorded the effect \"\(key)\", which nothing asked for when it was re-run"
    case .redacted(let stores):
      return "The session holds redacted models, or records the recorder's privacy settings leave out, of "
        + stores.map { "\"\($0)\"" }.joined(separator: ", ")
        + ": it cannot be resumed; restore(into:) restores the other stores"
    case .unrecordedFollowUp(let index, let dispatch, let action):
      return "Record #\(index) (dispatch \(dispatch)): re-run, its operation dispatched \(action), which the session "
        + "did not record"
    case .interleavedChanges(let index, let dispatch, let store, let action, let other):
      return "Record #\(index) (dispatch \(dispatch)): the operation of \(action) changed \"\(store)\" again after "
        + "record #\(other) of another transaction; verify re-runs operations whole and cannot reproduce changes "
        + "that interleaved"
    case .indexOutOfRange(let index, let valid):
      return "Position \(index) is outside the recorded history (\(valid.lowerBound)...\(valid.upperBound))"
    case .storeUnavailable(let store): return "Store \"\(store)\" is no longer available to restore"
    case .storeBusy(let store):
      return "Store \"\(store)\" is held by an all-or-nothing dispatch still running: try again once it ended"
    case .atStartOfHistory: return "Nothing to undo: the cursor is before the first record kept"
    case .atEndOfHistory: return "Nothing to redo: the cursor is at the last record"
    }
  }
}
