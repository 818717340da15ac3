// Privacy (proposal 0014, point 5): models and actions often carry tokens, passwords and personal data, and session
// files travel in bug reports. A recorder leaves some stores out entirely, and redacts others' models and actions
// before they are written; what it redacts is marked in the file, so that restore and verify say what they cannot do.

/// What a recorder leaves out of the sessions it writes: stores it does not record, and the models and actions of
/// others it redacts before they are written.
///
/// ```swift
/// var privacy = SessionPrivacy()
/// privacy.exclude(storeIdentifier: "keychain")
/// privacy.redactModels(of: "account") { (account: Account) in
///   var account = account
///   account.token = "redacted"
///   return account
/// }
/// let recorder = RecorderMiddleware(privacy: privacy)
/// ```
///
/// - An excluded store is not recorded at all: no record, snapshot or effect of it is kept, written or shown (the
///   file's header does not name it), and undo and redo leave it as it is.
/// - A redacted store's models and actions pass through its redactions before they are written: the session file,
///   ``RecorderMiddleware/save(to:codecs:)`` and the inspector page see only what they return, and the file marks
///   each redacted record and snapshot (`"p"`). Its effects are not written, and its failed records keep their
///   error's type, not its description. The recorder's history in memory keeps the real models, so that undo and
///   redo restore them in the running app; what it shows the app (``RecorderMiddleware/records``, the record undo,
///   redo and jump return) is redacted as the file is.
/// - ``Session/restore(into:)`` leaves out the stores a session holds redacted models of, and
///   ``Session/verify(against:mode:)`` every store it holds redacted values of; both return their identifiers.
///   ``RecorderMiddleware/resume(_:in:)`` refuses such a session with ``SessionError/redacted(storeIdentifiers:)``.
///
/// > Important: Redactions run on the thread that writes the session (the recorder's writer, or the caller of
/// > `save`), and on the thread that reads ``RecorderMiddleware/records`` or moves, under no lock; they must not
/// > block.
public struct SessionPrivacy: Sendable {
  /// One store's redactions, type-erased.
  struct Redaction: Sendable {
    var model: (@Sendable (any ModelType) throws(SessionError) -> any ModelType)?
    var action: (@Sendable (any ActionType) throws(SessionError) -> any ActionType)?

    /// The mark its records carry in the file: `m`, `a` or `am`.
    var mark: RedactionMark {
      RedactionMark(model: model != nil, action: action != nil)
    }
  }

  private(set) var excluded: Set<String> = []
  private(set) var redactions: [String: Redaction] = [:]

  /// Creates settings that record and write everything.
  public init() {}

  /// Leaves a store out: the recorder records none of its transactions.
  /// - Parameter storeIdentifier: The store's identifier.
  public mutating func exclude(storeIdentifier: String) {
    excluded.insert(storeIdentifier)
  }

  /// Redacts a store's models before the recorder writes them: the file holds what `redact` returns.
  ///
  /// A model of another type than `Model` (the wrong store named) fails the write with
  /// ``SessionError/encodingFailed(storeIdentifier:reason:)`` rather than writing it unredacted.
  /// - Parameters:
  ///   - storeIdentifier: The store's identifier.
  ///   - redact: Returns the model as the session may hold it.
  public mutating func redactModels<Model: ModelType>(
    of storeIdentifier: String, _ redact: @escaping @Sendable (Model) -> Model
  ) {
    var redaction = redactions[storeIdentifier] ?? Redaction(model: nil, action: nil)
    redaction.model = { value throws(SessionError) in
      guard let value = value as? Model else { throw Self.mismatch(storeIdentifier, Model.self, value) }
      return redact(value)
    }
    redactions[storeIdentifier] = redaction
  }

  /// Redacts a store's actions before the recorder writes them: the file holds what `redact` returns.
  ///
  /// An action of another type than `Action` fails the write with
  /// ``SessionError/encodingFailed(storeIdentifier:reason:)`` rather than writing it unredacted.
  /// - Parameters:
  ///   - storeIdentifier: The store's identifier.
  ///   - redact: Returns the action as the session may hold it.
  public mutating func redactActions<Action: ActionType>(
    of storeIdentifier: String, _ redact: @escaping @Sendable (Action) -> Action
  ) {
    var redaction = redactions[storeIdentifier] ?? Redaction(model: nil, action: nil)
    redaction.action = { value throws(SessionError) in
      guard let value = value as? Action else { throw Self.mismatch(storeIdentifier, Action.self, value) }
      return redact(value)
    }
    redactions[storeIdentifier] = redaction
  }

  /// Whether the recorder leaves the effects of `storeIdentifier`'s operations out: those of a store it excludes or
  /// redacts (a fetched token is as secret as the model holding it).
  func leavesEffectsOut(of storeIdentifier: String) -> Bool {
    excluded.contains(storeIdentifier) || redactions[storeIdentifier] != nil
  }

  /// `record` as the recorder shows it to the app, as the file holds it.
  ///
  /// For ``RecorderMiddleware/records`` and the record a move returns: a redacted store's model and action through its
  /// redactions, marked, and its error's type rather than its description. A value the redaction does not take (of
  /// another type) is shown as ``Unredactable``, never as it is.
  func shown(_ record: Record) -> Record {
    guard let redaction = redactions[record.storeIdentifier] else { return record }
    let model = redaction.model.map { redact in (try? redact(record.model)) ?? Unredactable() } ?? record.model
    let action = redaction.action.map { redact in (try? redact(record.action)) ?? Unredactable() } ?? record.action
    let error = record.error.map { error -> any Error in
      error as? RecordedError ?? RecordedError(description: Self.redactedDescription(of: error))
    }
    return Record(
      index: record.index, dispatchID: record.dispatchID, transactionID: record.transactionID,
      storeIdentifier: record.storeIdentifier, action: action, model: model, error: error,
      wasCancelled: record.wasCancelled, elapsed: record.elapsed, changedModel: record.changedModel,
      redaction: record.redaction.union(redaction.mark), change: UInt32(record.change), isRollback: record.isRollback)
  }

  /// A redacted store's error as the file and the recorder show it: its type only, since its description may give
  /// away what the redactions hide (a password in a thrown value).
  static func redactedDescription(of error: any Error) -> String {
    "\(String(reflecting: type(of: error))) (description redacted)"
  }

  private static func mismatch(_ store: String, _ expected: Any.Type, _ found: Any) -> SessionError {
    .encodingFailed(
      storeIdentifier: store,
      reason: "its redaction expects \(String(reflecting: expected)), got \(String(reflecting: type(of: found))); "
        + "nothing was written unredacted")
  }
}

/// Which of a record's values a redaction replaced: written as `"p":"m"`, `"a"` or `"am"`.
struct RedactionMark: Sendable, Equatable {
  var model = false
  var action = false

  var isEmpty: Bool { !model && !action }

  /// The mark's text in the file.
  var text: String {
    (action ? "a" : "") + (model ? "m" : "")
  }

  init(model: Bool = false, action: Bool = false) {
    self.model = model
    self.action = action
  }

  /// The mark written as `text`; `nil` for text that is not one.
  init?(text: String) {
    switch text {
    case "m": self.init(model: true)
    case "a": self.init(action: true)
    case "am": self.init(model: true, action: true)
    default: return nil
    }
  }

  /// Both marks.
  func union(_ other: RedactionMark) -> RedactionMark {
    RedactionMark(model: model || other.model, action: action || other.action)
  }
}

/// What the recorder shows in place of a model or action its redaction did not take (``SessionPrivacy/shown(_:)``).
struct Unredactable: ModelType, ActionType, CustomStringConvertible {
  var description: String { "unredactable (the redaction expects another type)" }
}
