/// Why a session file could not be loaded, opened for appending or written.
///
/// Loading validates the whole file before anything is applied, so any of these leaves your stores and the file
/// as they were.
public enum SessionError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The file could not be read or written.
  case io(path: String, reason: String)
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
  /// Older records were dropped by the recorder's bound, so the saved session could not be replayed exactly.
  case historyIncomplete(droppedRecords: Int)

  /// A readable explanation that names the line where there is one.
  public var description: String {
    switch self {
    case .io(let path, let reason): return "Cannot access session file \(path): \(reason)"
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
    case .historyIncomplete(let dropped):
      return "\(dropped) older records were dropped by maxNumberOfRecords; the session could not be replayed exactly"
    }
  }
}

/// Why a replay stopped.
public enum ReplayError: Error, Sendable, CustomStringConvertible {
  /// The store named by a record is not registered in the dispatcher replayed into.
  case unknownStore(index: Int, storeIdentifier: String)
  /// Re-dispatching a record's action failed.
  case dispatchFailed(index: Int, storeIdentifier: String, action: String, error: DispatchError)
  /// After re-dispatching a record's action, the store's model differs from the recorded one.
  case diverged(index: Int, storeIdentifier: String, action: String, expected: String, actual: String)

  /// A readable explanation naming the record.
  public var description: String {
    switch self {
    case .unknownStore(let index, let store):
      return "Record #\(index): store \"\(store)\" is not registered in the dispatcher"
    case .dispatchFailed(let index, let store, let action, let error):
      return "Record #\(index): dispatching \(action) to \"\(store)\" failed: \(error)"
    case .diverged(let index, let store, let action, let expected, let actual):
      return
        "Record #\(index): after \(action), store \"\(store)\" diverged.\n  expected: \(expected)\n  actual:   \(actual)"
    }
  }
}

/// Why the recorder could not move its cursor.
public enum RecorderError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The position is not in the retained history.
  case indexOutOfRange(Int, valid: ClosedRange<Int>)
  /// A recorded model could not be restored: its store is gone, or its types changed.
  case storeUnavailable(storeIdentifier: String)

  /// A readable explanation.
  public var description: String {
    switch self {
    case .indexOutOfRange(let index, let valid):
      return "Position \(index) is outside the recorded history (\(valid.lowerBound)...\(valid.upperBound))"
    case .storeUnavailable(let store): return "Store \"\(store)\" is no longer available to restore"
    }
  }
}
