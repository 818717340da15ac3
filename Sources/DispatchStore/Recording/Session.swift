import Dispatch
import Foundation

/// A recorded session read from a file: its history of records, snapshots and recorded effects, and the position
/// the recorder was at.
///
/// ```swift
/// let session = try Session.load(from: url, codecs: codecs)
/// try session.restore(into: dispatcher)  // the stores at the session's cursor; no reducer runs
/// try session.verify(against: freshDispatcher)  // re-runs every reducer and compares
/// ```
///
/// Loading checks the whole file (the hash chain, and that the lines form a history a recorder writes) but decodes
/// records only when they are needed.
public struct Session: Sendable {
  /// The stores the file's header lists.
  var storeIdentifiers: [String] { index.storeIdentifiers }
  /// The format version the file was written in: 3, or 2 or 1 for files of earlier releases.
  public var formatVersion: Int { index.formatVersion }
  /// The index of the current record; one less than ``firstIndex`` when the recorder had moved before the first.
  public var cursor: Int { index.cursor }
  /// The index of the first record the file holds: 0 unless the history before it was folded into a snapshot.
  public var firstIndex: Int { index.firstIndex }
  /// The number of records in the history.
  public var recordCount: Int { index.records.count }
  /// The positions of the session's snapshots, in order: each holds models just before the record at its position
  /// (``RecorderMiddleware/snapshot()``).
  public var snapshotIndices: [Int] { index.snapshots.map(\.index) }
  /// The line number of an incomplete last line that was ignored (the writing process died mid-write), if any.
  public var truncatedLine: Int? { index.truncatedLine }
  /// The codecs the session was read with.
  let codecs: SessionCodecs

  let index: SessionIndex
  private let cache: SessionCache

  var completeByteCount: Int { index.completeByteCount }
  var lastHash: UInt64 { index.lastHash }
  var nextIndex: Int { index.nextIndex }

  /// The file the session was loaded from: writing over it checks that it still holds what was loaded.
  let source: SessionFile.Source?

  init(index: SessionIndex, codecs: SessionCodecs, source: SessionFile.Source? = nil) {
    self.index = index
    self.codecs = codecs
    self.source = source
    self.cache = SessionCache(decoded: index.decodedRecords)
  }

  /// Reads and checks a whole session file; nothing is applied anywhere.
  ///
  /// An incomplete last line is not an error: the complete lines before it load and ``truncatedLine`` names it.
  /// - Parameters:
  ///   - url: The session file.
  ///   - codecs: How each store's actions and models decode.
  /// - Returns: The session.
  /// - Throws: ``SessionError/noFile(path:)``, ``SessionError/notARegularFile(path:kind:)`` or
  ///   ``SessionError/cannotRead(path:reason:)`` for a path that cannot be read as a file (nothing is created or
  ///   written); otherwise the error naming the first bad line: a line edited, deleted, duplicated or swapped
  ///   (``SessionError/integrityCheckFailed(line:)``), corrupt JSON, an unknown store, an unsupported format
  ///   version, a type mismatch or an impossible position.
  public static func load(from url: URL, codecs: SessionCodecs) throws(SessionError) -> Session {
    let source = try SessionFile.readSource(url)
    return Session(
      index: try SessionIndex.read(source.bytes, path: url.path, codecs: codecs), codecs: codecs, source: source)
  }

  static func parse(_ data: Data, path: String, codecs: SessionCodecs) throws(SessionError) -> Session {
    Session(index: try SessionIndex.read(data, path: path, codecs: codecs), codecs: codecs)
  }

  // MARK: - Records

  /// The history, oldest first, decoded on first use.
  ///
  /// - Throws: ``SessionError/corruptLine(line:reason:)`` if a record does not decode with the codecs.
  public var records: [Record] {
    get throws(SessionError) {
      if let records = cache.records.withLock({ $0 }) { return records }
      let records = try decodeRecords(index.records[...], lists: ListDecoding(indexedBase: indexedBase))
      // Another thread's decoding, if it was first: kept, and this one released after the lock (a model's `deinit` is
      // user code).
      return cache.records.withLock { cached in
        if let cached { return cached }
        cached = records
        return records
      }
    }
  }

  /// The records from `position` on, oldest first, decoded: the lines the first of each store rests on are decoded
  /// first (back to one that holds its lists whole), not the whole history before them.
  func records(from position: Int) throws(SessionError) -> [Record] {
    let start = max(0, position - index.firstIndex)
    guard start > 0 else { return try records }
    if let records = cache.records.withLock({ $0 }) { return Array(records[min(start, records.count)...]) }
    guard start < index.records.count else { return [] }
    var latest: [String: (index: Int, lists: LineLists)] = [:]
    var seen = Set<String>()
    for line in index.records[start...] where seen.insert(line.store).inserted {
      if let base = line.base, base < position { latest[line.store] = (base, try recordAndLists(at: base).lists) }
    }
    return try decodeRecords(index.records[start...], lists: ListDecoding(latest: latest, indexedBase: indexedBase))
  }

  /// The records of `lines`, decoded in order, each once: a line's list changes apply to the lists `lists` holds,
  /// which each line decoded updates.
  private func decodeRecords(
    _ lines: ArraySlice<SessionIndex.RecordLine>, lists: ListDecoding
  ) throws(SessionError) -> [Record] {
    try lines.map { (line) throws(SessionError) in withOutcome(try decodedRecord(line, lists: lists)) }
  }

  /// The record of `line`, decoded on `lists`; it must be the record loading indexed the line as.
  ///
  /// Loading reads a record's position and store from the start of its line; decoding reads them again. A line
  /// whose two readings differ (a repeated key spelt otherwise) is refused, so that verify, restore and the records
  /// never take one record for two stores' or positions'.
  private func decodedRecord(_ line: SessionIndex.RecordLine, lists: ListDecoding) throws(SessionError) -> Record {
    guard case .record(let record) = try decode(line.line, lists: lists) else {
      throw .corruptLine(line: line.line.number, reason: "not a record")
    }
    // A redaction mark loading did not see (written after the model) would have restore put a redacted value back.
    let indexed = index.redactions[line.store] ?? RedactionMark()
    guard !record.redaction.model || indexed.model, !record.redaction.action || indexed.action else {
      throw .corruptLine(line: line.line.number, reason: "its redaction mark is not where a writer writes it")
    }
    guard record.storeIdentifier == line.store, record.index == line.index else {
      throw .corruptLine(
        line: line.line.number,
        reason: "its fields read two ways: record \(line.index) of \"\(line.store)\", or \(record.index) of "
          + "\"\(record.storeIdentifier)\"")
    }
    return record
  }

  /// What the records before a position leave a recorder that keeps only the records from there
  /// (``RecorderMiddleware/resume(_:in:)``): the latest record of each store, and the transactions and dispatches of
  /// those records, whose reads and effects a recorder drops with them.
  struct DroppedRecords {
    var latest: [String: Int] = [:]
    var transactions: Set<TransactionID> = []
    var dispatches: Set<TransactionID> = []
  }

  /// ``DroppedRecords`` for the records before `position`, read from their lines without decoding them: the
  /// transactions and dispatches only if the session holds reads or effects.
  func dropped(before position: Int) -> DroppedRecords {
    var dropped = DroppedRecords()
    let lines = index.records.prefix(max(0, position - index.firstIndex))
    for line in lines.reversed() where dropped.latest[line.store] == nil { dropped.latest[line.store] = line.index }
    guard !index.reads.isEmpty || !index.effects.isEmpty else { return dropped }
    index.data.withUnsafeBytes { bytes in
      for line in lines {
        guard let identity = RecordFields.identity(in: bytes, range: line.line.range) else { continue }
        dropped.transactions.insert(identity.transaction)
        dropped.dispatches.insert(identity.dispatch)
      }
    }
    return dropped
  }

  /// `record` with its operation's outcome, if an outcome line gives one (the operation failed or was cancelled
  /// after the record was filed at its change).
  private func withOutcome(_ record: Record) -> Record {
    guard !index.outcomes.isEmpty, let outcome = index.outcomes[record.transactionID] else { return record }
    return record.withOutcome(
      error: outcome.e.map { RecordedError(description: $0) } ?? record.error,
      cancelled: outcome.c ?? false || record.wasCancelled)
  }

  /// The record at `position`, decoded.
  /// - Parameter position: A record's index, from ``firstIndex``.
  /// - Returns: The record.
  /// - Throws: ``SessionError/invalidIndex(_:line:)`` if there is no such record; a decoding error.
  public func record(at position: Int) throws(SessionError) -> Record {
    // Compared before subtracting: `Int.min` less a first index over 0 overflows.
    guard position >= index.firstIndex, position - index.firstIndex < index.records.count else {
      throw .invalidIndex(position, line: 0)
    }
    let offset = position - index.firstIndex
    if let records = cache.records.withLock({ $0 }) { return records[offset] }
    return try record(index.records[offset]).record
  }

  /// The number of the line of the record at `position`, which is in the session.
  func lineNumber(ofRecord position: Int) -> Int {
    index.records[position - index.firstIndex].line.number
  }

  /// The record at `position`, decoded from its line, and the lists the reader found there: the base of its store's
  /// next line (``LineLists/none`` for a line without list forms).
  func recordAndLists(at position: Int) throws(SessionError) -> (record: Record, lists: LineLists) {
    let offset = position - index.firstIndex
    guard offset >= 0, offset < index.records.count else { throw .invalidIndex(position, line: 0) }
    return try record(index.records[offset])
  }

  /// Decodes a line with ``JSONStreamDecoder``, or, where that one refuses or fails, with `JSONDecoder`, whose error
  /// names what is wrong.
  ///
  /// Only a line decoded whole changes `lists`: one read again reads from the same base.
  private func decode(_ line: SessionIndex.Line, lists: ListDecoding? = nil) throws(SessionError) -> SessionFormat.Line
  {
    var userInfo: [CodingUserInfoKey: any Sendable] = [SessionFormat.LineDecoding.codecsKey: codecs]
    if let lists { userInfo[ListDecoding.key] = lists }
    let fast = index.data.withUnsafeBytes { bytes in
      try? JSONStreamDecoder.decode(
        SessionFormat.LineDecoding.self, from: UnsafeRawBufferPointer(rebasing: bytes[line.range]), userInfo: userInfo)
    }
    let decoded: SessionFormat.LineDecoding
    if let fast { decoded = fast } else { decoded = try decodeWithFoundation(line, userInfo: userInfo) }
    lists?.decoded(decoded.lists)
    return decoded.line
  }

  /// Decodes a line with `JSONDecoder`, naming what is wrong with it.
  private func decodeWithFoundation(
    _ line: SessionIndex.Line, userInfo: [CodingUserInfoKey: any Sendable]
  ) throws(SessionError) -> SessionFormat.LineDecoding {
    let decoder = JSONDecoder()
    decoder.userInfo = userInfo
    do {
      return try decoder.decode(SessionFormat.LineDecoding.self, from: index.bytes(of: line))
    } catch let error as SessionFormat.UnknownStore {
      throw .unknownStore(identifier: error.identifier, line: line.number)
    } catch let error as SessionFormat.MissingBase {
      throw .corruptLine(line: line.number, reason: error.description)
    } catch let error as DecodingError {
      throw .corruptLine(line: line.number, reason: error.shortDescription)
    } catch {
      throw .corruptLine(line: line.number, reason: "\(error)")
    }
  }

  /// Decodes a record line: first, the lines its lists' changes rest on (`"z"`, format 3), back to one whose lists
  /// are whole or to one decoded before (the lists of recently decoded lines are kept).
  private func record(_ line: SessionIndex.RecordLine) throws(SessionError) -> (record: Record, lists: LineLists) {
    var chain = [line]
    var start: (index: Int, lists: LineLists)?
    while let base = chain.last!.base {
      if let known = cache.lists.withLock({ $0[base] }) {
        start = (base, known)
        break
      }
      let offset = base - index.firstIndex
      guard offset >= 0, offset < index.records.count, index.records[offset].store == line.store else {
        throw .corruptLine(line: chain.last!.line.number, reason: SessionFormat.MissingBase(index: base).description)
      }
      chain.append(index.records[offset])
    }
    // The bases, oldest first.
    let lists = ListDecoding(
      latest: start.map { [line.store: $0] } ?? [:], keepingEach: true, indexedBase: indexedBase)
    for base in chain.dropFirst().reversed() { _ = try decodedRecord(base, lists: lists) }
    let record = try decodedRecord(line, lists: lists)
    // The lists let go of are released after the lock: their elements' `deinit` is user code.
    let released = cache.lists.withLock { cached -> (dropped: [Int: LineLists], replaced: [LineLists]) in
      var dropped: [Int: LineLists] = [:]
      // Enough for a chain and for reading the history in order; the lists share their unchanged nodes.
      if cached.count + lists.kept.count > 4_096 { swap(&dropped, &cached) }
      var replaced: [LineLists] = []
      for (position, kept) in lists.kept {
        if let old = cached.updateValue(kept, forKey: position) { replaced.append(old) }
      }
      return (dropped, replaced)
    }
    withExtendedLifetime(released) {}
    return (withOutcome(record), lists.kept[line.index] ?? .none)
  }

  /// The base of each record's list changes, as loading found and checked it (`"z"`), by record index.
  private var indexedBase: (Int) -> Int? {
    { [index] position in
      let offset = position - index.firstIndex
      return offset >= 0 && offset < index.records.count ? index.records[offset].base : nil
    }
  }

  /// The effects recorded for each dispatch, in the order they were fetched: of the transactions in `kept`, for a
  /// line that names its transaction (a file keeps the effect lines of a transaction an undo and a new dispatch
  /// removed, which verify does not re-run); and, for one that does not, of the dispatches not in
  /// `droppedDispatches`, whose lines are not decoded.
  func effects(
    kept: Set<TransactionID>, droppedDispatches: Set<TransactionID> = []
  ) throws(SessionError) -> [TransactionID: [RecordedEffect]] {
    var effects: [TransactionID: [RecordedEffect]] = [:]
    for (dispatch, lines) in index.effects {
      for line in lines {
        // The transaction read from the line's bytes first: a line not kept is not decoded.
        if let transaction = index.effectTransaction(of: line) {
          if !kept.contains(transaction) { continue }
        } else if droppedDispatches.contains(dispatch) {
          continue
        }
        guard case .effect(_, let transaction, let key, let outcome) = try decode(line) else {
          throw .corruptLine(line: line.number, reason: "not an effect")
        }
        effects[dispatch, default: []].append(RecordedEffect(key: key, outcome: outcome, transactionID: transaction))
      }
    }
    return effects
  }

  // MARK: - Models at a position

  /// A store's model at a position, and the action observers hear it with.
  struct PositionedModel {
    let model: any ModelType
    let action: (any ActionType)?
  }

  /// Each store's model right after record `position`, from the newest snapshot and the records after it: walks
  /// back from `position` only until every store is known.
  func models(at position: Int) throws(SessionError) -> [String: PositionedModel] {
    var found: [String: PositionedModel] = [:]
    var undone: [String: any ActionType] = [:]
    let wanted = Set(index.storeIdentifiers)
    var snapshots = index.snapshots.filter { $0.index <= position + 1 }
    var offset = position - index.firstIndex
    while found.count < wanted.count {
      // A snapshot just before record offset + 1 is newer than record `offset`.
      while let last = snapshots.last, last.index > offset + index.firstIndex {
        snapshots.removeLast()
        guard let (models, actions) = try snapshot(last.line) else { continue }
        for (store, model) in models where found[store] == nil {
          found[store] = PositionedModel(model: model, action: actions[store])
        }
      }
      guard offset >= 0 else { break }
      let line = index.records[offset]
      if found[line.store] == nil {
        let record = try record(at: line.index)
        found[line.store] = PositionedModel(model: record.model, action: record.action)
      }
      offset -= 1
    }
    // A store known only from a snapshot without its action: observers hear the action of its first record after the
    // position, the one being undone. The search ends once each such store has one (a store not found at all gets
    // no model, so none is looked for).
    var withoutAction = Set(found.filter { wanted.contains($0.key) && $0.value.action == nil }.keys)
    for line in index.records.dropFirst(max(0, position + 1 - index.firstIndex)) {
      guard !withoutAction.isEmpty else { break }
      guard withoutAction.remove(line.store) != nil else { continue }
      undone[line.store] = try record(at: line.index).action
    }
    for (store, action) in undone {
      if let known = found[store] { found[store] = PositionedModel(model: known.model, action: action) }
    }
    return found
  }

  /// The models and actions of the snapshot `line`, of the stores the header lists.
  ///
  /// A store's models are looked for until each listed store has one, so another store's would stand in for a
  /// listed one. (A resumed recorder may keep a store its privacy settings now leave out of a new file's header.)
  private func snapshot(
    _ line: SessionIndex.Line
  ) throws(SessionError) -> (models: [String: any ModelType], actions: [String: any ActionType])? {
    guard case .snapshot(_, let models, let actions) = try decode(line) else { return nil }
    let listed = Set(index.storeIdentifiers)
    return (models.filter { listed.contains($0.key) }, actions.filter { listed.contains($0.key) })
  }

  /// The model each of `stores` has in the first snapshot at or after `position` (and at or before `last`) that
  /// holds it: where a store whose first record comes after `position` starts.
  func firstSnapshotModels(
    of stores: Set<String>, from position: Int, through last: Int = .max
  ) throws(SessionError) -> [String: PositionedModel] {
    var found: [String: PositionedModel] = [:]
    guard !stores.isEmpty else { return found }
    for snapshot in index.snapshots where snapshot.index >= position && snapshot.index <= last {
      guard let (models, actions) = try self.snapshot(snapshot.line) else { continue }
      for (store, model) in models where stores.contains(store) && found[store] == nil {
        found[store] = PositionedModel(model: model, action: actions[store])
      }
      if found.count == stores.count { break }
    }
    return found
  }

  // MARK: - Restore

  /// Puts every store of the session at its models at the session's cursor: no reducer runs, so no side effect repeats.
  ///
  /// Observers hear each restored model with ``ModelChange/isRestore`` set. Stores the session has no model for keep
  /// theirs, and so do the stores whose models the recorder's ``SessionPrivacy`` redacted (a redacted model is not
  /// the app's): their identifiers are returned.
  /// - Parameter dispatcher: A dispatcher with the session's stores registered.
  /// - Returns: The stores left as they were because the session holds redacted models of them; sorted.
  /// - Throws: ``SessionError`` if a store is not registered or has other types, or the session does not decode;
  ///   nothing is changed then. ``SessionError/storeBusy(storeIdentifier:)`` if an all-or-nothing dispatch holds a
  ///   store: nothing is changed if it held the store when this was called; if it took the store while this ran,
  ///   the stores before it (in identifier order) were restored. Try again once that dispatch ended.
  @discardableResult
  public func restore(into dispatcher: Dispatcher) throws(SessionError) -> [String] {
    let plan = try restorePlan(in: dispatcher, at: cursor)
    try Self.requireFree(plan)
    try Self.apply(plan, event: nil)
    return index.redactions.filter(\.value.model).keys.sorted()
  }

  /// Checks that no all-or-nothing dispatch holds a store of `plan`, before anything changes.
  /// - Throws: ``SessionError/storeBusy(storeIdentifier:)`` if one does.
  static func requireFree(
    _ plan: [(any ModelRestoring, (model: any ModelType, action: (any ActionType)?))]
  ) throws(SessionError) {
    if let held = plan.first(where: { $0.0.isHeld }) { throw .storeBusy(storeIdentifier: held.0.identifier) }
  }

  /// Restores each store of `plan` (after ``requireFree(_:)``).
  /// - Throws: ``SessionError/storeBusy(storeIdentifier:)`` if an all-or-nothing dispatch took a store since.
  static func apply(
    _ plan: [(any ModelRestoring, (model: any ModelType, action: (any ActionType)?))], event: UInt64?
  ) throws(SessionError) {
    for (store, model) in plan where !store.restore(model: model.model, action: model.action, event: event) {
      throw .storeBusy(storeIdentifier: store.identifier)
    }
  }

  /// The stores whose models or actions the recorder's privacy settings redacted somewhere in the session
  /// (``SessionPrivacy``): ``verify(against:mode:)`` leaves them out, and ``restore(into:)`` those whose models are
  /// redacted.
  public var redactedStores: [String] {
    index.redactions.keys.sorted()
  }

  /// The stores and models a restore at `position` applies; checked, so that applying cannot fail.
  func restorePlan(
    in dispatcher: Dispatcher, at position: Int
  ) throws(SessionError) -> [(any ModelRestoring, (model: any ModelType, action: (any ActionType)?))] {
    let models: [String: PositionedModel]
    models = try self.models(at: position)
    var plan: [(any ModelRestoring, (model: any ModelType, action: (any ActionType)?))] = []
    // A redacted model is not the app's: its store keeps its own.
    let restorable = models.filter { index.redactions[$0.key]?.model != true }
    for (identifier, positioned) in restorable.sorted(by: { $0.key < $1.key }) {
      guard let store = dispatcher.store(with: identifier) as? any ModelRestoring,
        store.canRestore(model: positioned.model, action: positioned.action)
      else {
        throw .unregisteredStore(index: position, storeIdentifier: identifier)
      }
      plan.append((store, (positioned.model, positioned.action)))
    }
    return plan
  }

  // MARK: - Verify

  /// Re-runs every recorded transaction in order and compares each store's model with the recorded one: a
  /// regression test of the reducers against a real session.
  ///
  /// Start from a fresh dispatcher with the session's stores registered. The stores are first put at the models the
  /// history starts from (the snapshot a recorder writes of each store's first model, or the one a compacted
  /// session starts with); then each transaction's action goes to its store, and a transaction that failed when
  /// recorded must fail again, with the same model. An operation that recorded several changes is re-run once and
  /// compared with its last record; one whose earlier changes are before the history (a compacted file) is not
  /// re-run, and its last record's model is put back instead. Operations read the effects they fetched from the session
  /// (`ActionOperation.effect(_:_:)`). The follow-up actions re-run operations dispatch are absorbed (they complete
  /// at once, without running) and matched to the session's records of them, which are replayed in their turn. A
  /// failed all-or-nothing dispatch's records are re-run, then each store it put back is put back again, to the
  /// model its rollback record holds (`DispatchOptions(allOrNothing: true)`).
  /// - Parameters:
  ///   - dispatcher: The dispatcher to replay into.
  ///   - mode: How each action is dispatched; `.sync` by default.
  /// - Throws: ``SessionError`` at the first divergence, naming the dispatch, the store, the action and the fields
  ///   that differ; ``SessionError/interleavedChanges(index:dispatchID:storeIdentifier:action:otherIndex:)`` for an
  ///   operation whose changes interleaved with another transaction's, which re-running cannot reproduce;
  ///   ``SessionError/storeBusy(storeIdentifier:)`` if an all-or-nothing dispatch of the app holds a store a rollback
  ///   step puts back.
  ///
  /// The stores whose models or actions the recorder's ``SessionPrivacy`` redacted cannot be checked: their records
  /// are neither re-run nor compared, and their identifiers are returned.
  ///
  /// Records are compared on a second thread while the re-run goes on, and a session of 4,096 records or more is read
  /// on two threads where the machine has two or more processors: the error thrown is the first in the session's
  /// order all the same. The re-run stops soon after a divergence found there, but not at once: its stores may then
  /// be some records past it, as the reducers left them.
  ///
  /// > Important: This blocks until each dispatch finished; do not call it on the thread a mode needs
  /// > (the main run-loop thread for `.mainThread`). While it runs, every other dispatch on `dispatcher` is
  /// > absorbed as a follow-up: verify against a dispatcher of its own.
  /// - Returns: The stores not checked because the session holds redacted values of them; sorted. The stores are left
  ///   at the models of the last record (the end of the history), not at the recorder's cursor: verify checks every
  ///   record, undone ones included.
  @discardableResult
  public func verify(against dispatcher: Dispatcher, mode: Dispatcher.Mode = .sync) throws(SessionError) -> [String] {
    var counts = VerifyCounts()
    return try verify(against: dispatcher, mode: mode, counts: &counts)
  }

  /// How a verify compared its records (``verify(against:mode:counts:)``), for tests.
  struct VerifyCounts {
    /// Records whose models were compared by their bytes, on either thread.
    var byBytes = 0
    /// Records whose models were decoded to be compared, on either thread: their encodings differed, or had no base
    /// to rest on.
    var decoded = 0
    /// Records handed to the other thread: those that hold their lists whole, and the runs it took.
    var handedOver = 0
    /// Records that hold their lists whole compared by their bytes against the lines before them, without encoding
    /// their lists (``WholeLineSplice``); counted in `byBytes` too.
    var spliced = 0
  }

  /// ``verify(against:mode:)``, counting in `counts` how the records were compared.
  ///
  /// `otherThreadFound` is called on the other thread when a record compared there differed, before the re-run can see
  /// it. With `keepingRuns`, only the lines that hold their lists whole are compared there: a test of the bases that
  /// pass between the threads.
  @discardableResult
  func verify(
    against dispatcher: Dispatcher, mode: Dispatcher.Mode, counts: inout VerifyCounts,
    otherThreadFound: (@Sendable () -> Void)? = nil, keepingRuns: Bool = false
  ) throws(SessionError) -> [String] {
    var steps: [VerifyStep]
    let playback: EffectPlayback
    steps = try verifySteps()
    if !index.redactions.isEmpty { steps.removeAll { index.redactions[$0.store] != nil } }
    // The set of every step's transaction only where there are effects to sort: most sessions have none.
    let effects = try effects(kept: index.effects.isEmpty ? [] : Set(steps.lazy.map(\.transactionID)))
    playback = EffectPlayback(effects: effects)
    // The last step of each dispatch that recorded effects, where those no operation read are reported: the others'
    // `unused(in:)` is always `nil`, so most sessions need none of this.
    var lastOfDispatch: [TransactionID: Int] = [:]
    if !effects.isEmpty {
      for step in steps where effects[step.dispatchID] != nil { lastOfDispatch[step.dispatchID] = step.index }
    }
    // An operation's records filed at its changes share its transaction: re-run at the first, and compared with the
    // last (`final`, by offset in `steps`); the others are not dispatched again. Only the transactions with a later
    // change (number 1 or more) are looked up: in most sessions, none.
    var final = Array(steps.indices)
    var continues = [Bool](repeating: false, count: steps.count)
    let continued = Set(steps.lazy.filter { $0.change > 0 }.map(\.transactionID))
    if !continued.isEmpty {
      var firstOfTransaction: [TransactionID: Int] = [:]
      for (offset, step) in steps.enumerated() where continued.contains(step.transactionID) {
        // A later change of a transaction whose first is kept; a first change (number 0) always starts a
        // transaction, since two processes appending to one file may hand out the same identifier.
        if step.change > 0, let first = firstOfTransaction[step.transactionID] {
          continues[offset] = true
          final[first] = offset
        } else {
          firstOfTransaction[step.transactionID] = offset
        }
      }
    }
    for (store, model) in try restorePlan(in: dispatcher, at: index.firstIndex - 1) {
      store.restore(model: model.model, action: model.action, event: nil)
    }
    // A follow-up matches a transaction's record once, however many changes it recorded.
    let followUps = FollowUpMatcher(
      steps: steps, continues: continues, codecs: codecs, unchecked: Set(index.redactions.keys))
    let reads = try readPlayback()
    dispatcher.replay.withLock { $0 = SessionReplay(followUps: followUps, playback: playback, reads: reads) }
    dispatcher.isReplaying.store(true, ordering: .relaxed)
    defer {
      dispatcher.isReplaying.store(false, ordering: .relaxed)
      dispatcher.replay.withLock { $0 = nil }
    }
    // Models are compared as the writer encoded them (`ModelComparison`), some on another thread. Each record handed
    // there comes before the step an error of this thread's is at: the other thread's error is the one thrown (the
    // first in the session's order, but for a line whose lists both threads found wanting, `UnconfirmedBases`).
    let background = BackgroundComparison(session: self, found: otherThreadFound)
    var comparison = ModelComparison(
      session: self, background: background, unconfirmed: background.unconfirmed, keepingRuns: keepingRuns)
    defer { counts = comparison.counts }
    do throws(SessionError) {
      try rerun(
        steps, final: final, continues: continues, lastOfDispatch: lastOfDispatch, in: dispatcher, mode: mode,
        playback: playback, reads: reads, followUps: followUps, comparison: &comparison)
    } catch {
      throw comparison.finish() ?? error
    }
    if let failure = comparison.finish() { throw failure }
    return redactedStores
  }

  /// Re-runs the transactions of `steps` in `dispatcher`, one after another, and compares their models with the
  /// records' (``verify(against:mode:)``).
  private func rerun(
    _ steps: [VerifyStep], final: [Int], continues: [Bool], lastOfDispatch: [TransactionID: Int],
    in dispatcher: Dispatcher, mode: Dispatcher.Mode, playback: EffectPlayback, reads: ReadPlayback,
    followUps: FollowUpMatcher, comparison: inout ModelComparison
  ) throws(SessionError) {
    var stores: [String: any AnyStore] = [:]
    var lastStore: (identifier: String, store: any AnyStore)?
    // Dispatches with a transaction that was not re-run: their recorded effects are not all asked for.
    var partial: Set<TransactionID> = []
    for (offset, step) in steps.enumerated() {
      // A line compared on the other thread differed: the re-run stops there, not at the session's end.
      if comparison.background?.hasFailed == true, let failure = comparison.finish() { throw failure }
      // Fields read from a long line's end (`fieldsFromEnd`) hold once its model compares equal by its bytes: a step
      // whose own model is not compared is checked against a full scan first, and so is one whose outcome or
      // cancellation is held against the re-run, or whose bytes differ. For a line no writer makes (an object-valued
      // field after the model), the transactions grouped above may then be wrong, and verify may throw another error
      // before the check refuses the line: an error all the same, never a verify that passes.
      if continues[offset] || final[offset] != offset || step.change > 0 || step.rollback {
        try checkFieldsFromTheEnd(of: step)
        // Undo steps over a record that says it changed nothing: a recorder says so only of the one record of a
        // transaction that did not change its store, which these are not.
        if let marked = [step, steps[final[offset]]].first(where: \.unchanged) {
          try checkFieldsFromTheEnd(of: marked)
          throw .corruptLine(
            line: index.records[marked.index - index.firstIndex].line.number,
            reason: "a record of an operation's changes, or of a store put back, says it changed nothing")
        }
      }
      if continues[offset] {
        if !lastOfDispatch.isEmpty, lastOfDispatch[step.dispatchID] == step.index, !partial.contains(step.dispatchID),
          let unused = playback.unused(in: step.dispatchID)
        {
          throw unused
        }
        continue
      }
      let last = steps[final[offset]]
      if final[offset] != offset,
        let other = steps[(offset + 1)..<final[offset]].first(where: {
          $0.store == step.store && $0.transactionID != step.transactionID
        })
      {
        // Another transaction changed the store between this operation's changes: re-running the operation whole
        // cannot reproduce that.
        throw .interleavedChanges(
          index: step.index, dispatchID: step.dispatchID, storeIdentifier: step.store, action: "\(step.action)",
          otherIndex: other.index)
      }
      if step.change > 0 {
        // The operation's first changes are before the history (a compacted file, a recorder's bound): re-running it
        // would apply them again. Its last record's model is put back instead, unchecked, as a snapshot would be.
        try restoreUnchecked(last, in: dispatcher)
        partial.insert(step.dispatchID)
        continue
      }
      if step.rollback {
        // A failed all-or-nothing dispatch put the store back (no reducer ran): its model is put back as recorded,
        // the model before the dispatch, which the records before it checked.
        if !lastOfDispatch.isEmpty, lastOfDispatch[step.dispatchID] == step.index, !partial.contains(step.dispatchID),
          let unused = playback.unused(in: step.dispatchID)
        {
          throw unused
        }
        try restoreUnchecked(step, in: dispatcher)
        continue
      }
      let store: any AnyStore
      if let last = lastStore, last.identifier == step.store {
        // The store of the step before: sessions dispatch to one store many times in a row.
        store = last.store
      } else if let known = stores[step.store] {
        store = known
      } else {
        guard let found = dispatcher.store(with: step.store) else {
          throw .unregisteredStore(index: step.index, storeIdentifier: step.store)
        }
        stores[step.store] = found
        store = found
      }
      lastStore = (step.store, store)
      playback.begin(step.dispatchID, transactionID: step.transactionID)
      reads.begin(step.transactionID)
      followUps.begin(index: step.index, dispatchID: step.dispatchID)
      if last.unchanged { try checkFieldsFromTheEnd(of: last) }
      // A record that says its transaction changed nothing is stepped over by undo: the re-run must leave the model
      // as it found it.
      let before = last.unchanged ? store.anyModel : nil
      let result = Self.dispatchAndWait(step.action, to: step.store, in: dispatcher, mode: mode)
      if last.fieldsFromEnd {
        let failed: Bool
        if case .failure = result { failed = true } else { failed = false }
        if last.cancelled || failed != last.failed { try checkFieldsFromTheEnd(of: last) }
      }
      if last.cancelled, !Self.reproduced(result, failed: last.failed, playback: playback, followUps: followUps) {
        // The dispatch was cancelled while the transaction ran, at a moment re-running does not reproduce (the re-run
        // ended otherwise, or asked for an effect or sent a follow-up the recorded run did not reach). Its last
        // record's model is put back, unchecked, as a snapshot would be.
        playback.forgetMissing()
        followUps.forgetUnrecorded()
        try restoreUnchecked(last, in: dispatcher, unchangedFrom: before, after: step)
        partial.insert(step.dispatchID)
        continue
      }
      if let missing = playback.missing { throw missing }
      if let unrecorded = followUps.unrecorded { throw unrecorded }
      if !lastOfDispatch.isEmpty, lastOfDispatch[step.dispatchID] == step.index, !partial.contains(step.dispatchID),
        let unused = playback.unused(in: step.dispatchID)
      {
        throw unused
      }
      switch (result, last.failed) {
      case (.failure(let error), false):
        throw .dispatchFailed(
          index: step.index, dispatchID: step.dispatchID, storeIdentifier: step.store, action: "\(step.action)",
          error: error)
      case (.success, true):
        let recorded = try? record(at: last.index).error
        throw .outcomeDiffered(
          index: step.index, dispatchID: step.dispatchID, storeIdentifier: step.store, action: "\(step.action)",
          recordedError: recorded.map { "\($0)" } ?? "an error")
      default:
        break
      }
      if let before { try checkUnchanged(before, store.anyModel, after: step, with: last) }
      try comparison.compare(store.anyModel, after: step, with: last)
    }
  }

  /// The reads the session recorded, for verify to give the re-run: each names a record, whose model is decoded when
  /// the re-run reads it (a line resting on the one before costs about its change), or a position before the
  /// history, whose model is the store's where the history starts.
  private func readPlayback() throws(SessionError) -> ReadPlayback {
    let reads = index.reads.mapValues { $0.map(\.read) }
    let first = index.firstIndex
    let beforeHistory = reads.values.contains { $0.contains { $0.index < first } }
    let start = beforeHistory ? try models(at: first - 1) : [:]
    return ReadPlayback(reads: reads) { [self] read in
      // A redacted model is not the app's: the re-run reads the store's own.
      if index.redactions[read.store]?.model == true { return nil }
      if read.index < first { return start[read.store]?.model }
      return try? record(at: read.index).model
    }
  }

  /// Checks that the re-run of a transaction whose last record says it changed nothing (`"u"`) left its store's model
  /// as it found it (`before`, `after`).
  ///
  /// - Throws: ``SessionError/diverged(index:dispatchID:storeIdentifier:action:differences:)`` naming the fields the
  ///   re-run changed, each with its value before the transaction as the expected one.
  private func checkUnchanged(
    _ before: any ModelType, _ after: any ModelType, after step: VerifyStep, with last: VerifyStep
  ) throws(SessionError) {
    guard let codec = codecs.codecs[step.store] else {
      throw .unregisteredStore(index: step.index, storeIdentifier: step.store)
    }
    guard !codec.modelsEqual(before, after) else { return }
    let differences = codec.differences(expected: before, actual: after)
    throw .diverged(
      index: last.index, dispatchID: step.dispatchID, storeIdentifier: step.store, action: "\(step.action)",
      differences: differences)
  }

  /// A record as ``verify(against:mode:)`` re-runs it: its action decoded, its model left as the bytes written
  /// (a version 2 or 3 file), or the whole record decoded (a version 1 file, or records decoded already).
  struct VerifyStep: Sendable {
    let index: Int
    let dispatchID: TransactionID
    let transactionID: TransactionID
    /// The record's number among its transaction's (``Record/change``).
    let change: Int
    let store: String
    let action: any ActionType
    let failed: Bool
    /// Whether the dispatch was cancelled while the transaction ran.
    let cancelled: Bool
    /// Whether the record puts its store back after its all-or-nothing dispatch failed (``Record/isRollback``).
    let rollback: Bool
    /// Whether the record says its transaction did not change the model (`"u"`; ``Record/changedModel``).
    var unchanged = false
    let modelBytes: Range<Int>?
    /// Where the line's `"l"` is, the paths of its list forms, and the record whose lists they change (`"z"`).
    var listPaths: Range<Int>?
    var base: Int?
    let record: Record?
    /// Where the action's JSON is in the file (a version 2 or 3 file).
    var actionBytes: Range<Int>?
    /// Whether the fields after the model were read from the line's end (``RecordFields/fromEnd``): until the
    /// model compared equal by its bytes, ``Session/checkFieldsFromTheEnd(of:)`` checks them before verify acts on
    /// them.
    var fieldsFromEnd = false

    /// Whether the line holds list forms (`"l"`).
    var hasListForms: Bool { listPaths != nil }
  }

  private func verifySteps() throws(SessionError) -> [VerifyStep] {
    if let decoded = cache.records.withLock({ $0 }) {
      return decoded.map { record in
        VerifyStep(
          index: record.index, dispatchID: record.dispatchID, transactionID: record.transactionID,
          change: record.change, store: record.storeIdentifier, action: record.action, failed: record.error != nil,
          cancelled: record.wasCancelled, rollback: record.isRollback, unchanged: !record.changedModel,
          modelBytes: nil, record: record)
      }
    }
    let lines = index.records
    // Reading the lines, decoding their actions, is a large share of verifying a long session: the two halves of one
    // are read at once, on two threads. The first error in the file's order is the one thrown.
    let parts = lines.count >= 4_096 && ProcessInfo.processInfo.activeProcessorCount > 1 ? 2 : 1
    guard parts > 1 else { return try verifySteps(lines[...]) }
    let results = LockedValue<[Result<[VerifyStep], SessionError>?]>(Array(repeating: nil, count: parts))
    DispatchQueue.concurrentPerform(iterations: parts) { part in
      let range = (lines.count * part / parts)..<(lines.count * (part + 1) / parts)
      let result = Result { () throws(SessionError) in try verifySteps(lines[range]) }
      results.withLock { $0[part] = result }
    }
    var steps: [VerifyStep] = []
    steps.reserveCapacity(lines.count)
    for result in results.withLock({ $0 }) {
      guard let result else { preconditionFailure("concurrentPerform returned before running every part") }
      steps.append(contentsOf: try result.get())
    }
    return steps
  }

  /// The steps of `lines`, in order (``verifySteps()``).
  private func verifySteps(_ lines: ArraySlice<SessionIndex.RecordLine>) throws(SessionError) -> [VerifyStep] {
    // The file's bytes are read through one access for all the lines: each access to a `Data` is checked.
    let steps = index.data.withUnsafeBytes { bytes -> Result<[VerifyStep], SessionError> in
      Result { () throws(SessionError) in try verifySteps(lines, in: bytes) }
    }
    return try steps.get()
  }

  /// ``verifySteps(_:)`` over the file's bytes.
  private func verifySteps(
    _ lines: ArraySlice<SessionIndex.RecordLine>, in bytes: UnsafeRawBufferPointer
  ) throws(SessionError) -> [VerifyStep] {
    let decoder = JSONDecoder()
    // Sessions repeat actions (the same tap, the same tick): each distinct encoding is decoded once per store.
    var actions = DecodedActions(bytes: bytes)
    var steps: [VerifyStep] = []
    steps.reserveCapacity(lines.count)
    let outcomes = index.outcomes
    // The store of the line before, whose codec was found: lines of one store follow one another.
    var knownStore: String?
    for line in lines {
      var fields = RecordFields(bytes, range: line.line.range, readingLongModelsFromTheEnd: true)
      if let read = fields, read.fromEnd, read.action == nil || read.transaction == nil {
        // Neither before the model nor read from the end, as they would be in a line a writer makes: scanned in full.
        fields = RecordFields(bytes, range: line.line.range)
      }
      if line.store != knownStore, codecs.codecs.index(forKey: line.store) != nil { knownStore = line.store }
      guard let fields, let actionRange = fields.action, let modelRange = fields.model,
        let transaction = RecordFields.unsigned(bytes, fields.transaction), line.store == knownStore,
        RecordFields.isUnsignedIfPresent(bytes, fields.dispatch),
        RecordFields.isUnsignedIfPresent(bytes, fields.change, maximum: RecordFields.maximumChange)
      else {
        // Not as a writer makes it: decoding it names what is wrong.
        _ = try record(line)
        throw .corruptLine(line: line.line.number, reason: "not a record line")
      }
      let action: any ActionType
      let found = actions.find(line.store, at: actionRange)
      if let known = found.action {
        action = known
      } else {
        guard let codec = codecs.codecs[line.store] else {
          throw .unregisteredStore(index: line.index, storeIdentifier: line.store)
        }
        do {
          action =
            try codec.decodeActionBytes(UnsafeRawBufferPointer(rebasing: bytes[actionRange]))
            ?? codec.decodeActionJSON(Data(bytes[actionRange]), decoder)
        } catch let error as DecodingError {
          throw .corruptLine(line: line.line.number, reason: error.shortDescription)
        } catch {
          throw .corruptLine(line: line.line.number, reason: "\(error)")
        }
        actions.keep(action, line.store, at: actionRange, hash: found.hash)
      }
      steps.append(
        VerifyStep(
          line, fields: fields, bytes: bytes, transaction: transaction, model: modelRange, action: action,
          outcomes: outcomes))
    }
    return steps
  }

  /// Checks that the fields of `step`'s line read from its end (``RecordFields/fromEnd``) are the line's, before
  /// verify acts on them other than by comparing the line's model by its bytes: the line scanned in full must give
  /// the same step, but for where its model ends (a model not equal by its bytes is decoded from the line).
  ///
  /// - Throws: ``SessionError/corruptLine(line:reason:)`` if they differ: a field of the format lies between the model
  ///   and an object-valued field after it, which a writer never writes.
  func checkFieldsFromTheEnd(of step: VerifyStep) throws(SessionError) {
    guard step.fieldsFromEnd else { return }
    let line = index.records[step.index - index.firstIndex]
    let same = index.data.withUnsafeBytes { bytes -> Bool in
      guard let fields = RecordFields(bytes, range: line.line.range), let model = fields.model,
        let transaction = RecordFields.unsigned(bytes, fields.transaction)
      else { return false }
      let scanned = VerifyStep(
        line, fields: fields, bytes: bytes, transaction: transaction, model: model, action: step.action,
        outcomes: index.outcomes)
      return scanned.sameFields(as: step)
    }
    guard same else {
      throw .corruptLine(line: line.line.number, reason: "a field after the model is not one a recorder writes")
    }
  }

  /// The actions ``verifySteps(_:in:)`` decoded, by store and by the bytes of their JSON in the file: at most 65,536
  /// per store.
  private struct DecodedActions {
    let bytes: UnsafeRawBufferPointer
    /// By the hash of the store and the JSON: where the JSON is, and its action.
    private var kept: [Int: [(store: String, range: Range<Int>, action: any ActionType)]] = [:]
    /// How many are kept per store.
    private var counts: [String: Int] = [:]

    init(bytes: UnsafeRawBufferPointer) {
      self.bytes = bytes
    }

    private func hash(_ store: String, _ range: Range<Int>) -> Int {
      var hasher = Hasher()
      hasher.combine(store)
      hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes[range]))
      return hasher.finalize()
    }

    /// The action decoded from the same JSON for `store`, if one was kept, and the hash that keeps one.
    func find(_ store: String, at range: Range<Int>) -> (hash: Int, action: (any ActionType)?) {
      let hash = hash(store, range)
      guard let candidates = kept[hash] else { return (hash, nil) }
      for candidate in candidates
      where candidate.range.count == range.count && candidate.store == store
        && memcmp(bytes.baseAddress! + candidate.range.lowerBound, bytes.baseAddress! + range.lowerBound, range.count)
          == 0
      {
        return (hash, candidate.action)
      }
      return (hash, nil)
    }

    /// Keeps `action`, decoded from the JSON at `range` for `store`, whose ``find(_:at:)`` gave `hash`.
    mutating func keep(_ action: any ActionType, _ store: String, at range: Range<Int>, hash: Int) {
      guard counts[store, default: 0] < 65_536 else { return }
      kept[hash, default: []].append((store, range, action))
      counts[store, default: 0] += 1
    }
  }

  /// Whether a re-run ended as its recorded transaction did: failed or not alike, asking for no effect and sending no
  /// follow-up the session lacks.
  private static func reproduced(
    _ result: Result<Void, DispatchError>, failed: Bool, playback: EffectPlayback, followUps: FollowUpMatcher
  ) -> Bool {
    guard playback.missing == nil, followUps.unrecorded == nil else { return false }
    if case .failure = result { return failed }
    return !failed
  }

  /// Puts the model of `step`'s record in its store without running a reducer (``verify(against:mode:)``).
  ///
  /// With `before`, the model before the transaction `first` started, the record, which says the transaction changed
  /// nothing (`"u"`), must hold that model (``checkUnchanged(_:_:after:with:)``).
  private func restoreUnchecked(
    _ step: VerifyStep, in dispatcher: Dispatcher, unchangedFrom before: (any ModelType)? = nil,
    after first: VerifyStep? = nil
  ) throws(SessionError) {
    let recorded: Record
    if let decoded = step.record {
      recorded = decoded
    } else {
      recorded = try record(at: step.index)
    }
    if let before, let first { try checkUnchanged(before, recorded.model, after: first, with: step) }
    guard let store = dispatcher.store(with: step.store) as? any ModelRestoring,
      store.canRestore(model: recorded.model, action: recorded.action)
    else {
      throw .unregisteredStore(index: step.index, storeIdentifier: step.store)
    }
    // Refused only while an all-or-nothing dispatch of the app's holds the store.
    guard store.restore(model: recorded.model, action: recorded.action, event: nil) else {
      throw .storeBusy(storeIdentifier: step.store)
    }
  }

  /// Dispatches a record's action and waits for it.
  private static func dispatchAndWait(
    _ action: any ActionType, to storeIdentifier: String, in dispatcher: Dispatcher, mode: Dispatcher.Mode
  ) -> Result<Void, DispatchError> {
    if mode == .sync { return dispatcher.dispatchReplayedSync(storeIdentifier: storeIdentifier, action: action) }
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox()
    dispatcher.dispatchReplayed(storeIdentifier: storeIdentifier, action: action, mode: mode) { result in
      box.result = result
      done.signal()
    }
    // As a `.sync` dispatch waits: from inside a synchronous observer, the threads waiting for its turn go on.
    ThreadContext.blocking { done.wait() }
    return box.result ?? .success(())
  }

  // MARK: - Writing

  /// Writes the session to `url` in the current format (version 3): how an older file is upgraded.
  ///
  /// A file already at `url` is replaced only if it is a session (or empty), as ``RecorderMiddleware/save(to:codecs:)``
  /// replaces it.
  /// - Parameter url: Where to write.
  /// - Throws: ``SessionError`` if a record does not decode or encode, the path holds something other than a session,
  ///   a recorder is attached to it, or the file cannot be written; ``SessionError/fileChanged(path:)`` if `url` is
  ///   the file the session was loaded from and it changed since.
  public func save(to url: URL) throws(SessionError) {
    try write(to: url, from: index.firstIndex)
  }

  /// Writes the session to `url` with the history before record `position` folded into a snapshot: the models at
  /// that point, then the records from `position` on, so the file is shorter and undo still reaches back to the
  /// snapshot.
  ///
  /// ```swift
  /// let session = try Session.load(from: url, codecs: codecs)
  /// // Keep the last 1,000 records (positions are record indices, from `firstIndex`), and those undone after the
  /// // cursor.
  /// let last = session.firstIndex + session.recordCount
  /// try session.compact(before: min(session.cursor + 1, max(session.firstIndex, last - 1_000)), to: url)
  /// ```
  /// - Parameters:
  ///   - position: The index of the first record kept; between ``firstIndex`` and one past the ``cursor``. Records
  ///     undone after the cursor are not folded: that would move the cursor, and restore would give other models.
  ///   - url: Where to write; may be the session's own file (a session is replaced atomically, under its lock).
  /// - Throws: ``SessionError/invalidIndex(_:line:)`` for a position outside the history or past one after the cursor;
  ///   ``SessionError/inUse(path:)`` if a recorder is attached to the file; ``SessionError/fileChanged(path:)`` if
  ///   `url` is the file the session was loaded from and it changed since; a decoding, encoding or I/O error.
  public func compact(before position: Int, to url: URL) throws(SessionError) {
    guard position >= index.firstIndex, position <= cursor + 1 else { throw .invalidIndex(position, line: 0) }
    try write(to: url, from: position)
  }

  private func write(to url: URL, from position: Int) throws(SessionError) {
    var lines: [SessionFormat.Line] = []
    var snapshots = index.snapshots.filter { $0.index >= position }[...]
    if position > index.firstIndex {
      // The folded history, as one snapshot of every store's model (and the action that made it).
      var models: [String: any ModelType] = [:]
      var actions: [String: any ActionType] = [:]
      for (store, positioned) in try self.models(at: position - 1) {
        models[store] = positioned.model
        if let action = positioned.action { actions[store] = action }
      }
      lines.append(.snapshot(index: position, models: models, actions: actions))
      snapshots = snapshots.drop { $0.index == position }
    }
    var dispatches: Set<TransactionID> = []
    var transactions: Set<TransactionID> = []
    var next = position
    // Every record, in one run of the decoder (each line's lists rest on the lines before it).
    let all = try records
    for offset in max(0, position - index.firstIndex)..<index.records.count {
      let record = all[offset]
      while let snapshot = snapshots.first, snapshot.index <= next {
        snapshots.removeFirst()
        lines.append(try decode(snapshot.line))
      }
      lines.append(.record(record))
      dispatches.insert(record.dispatchID)
      transactions.insert(record.transactionID)
      next = record.index + 1
    }
    for snapshot in snapshots { lines.append(try decode(snapshot.line)) }
    // The effects of the transactions kept (proposal 0027); a line that names none goes with its dispatch.
    for (dispatch, effects) in index.effects where dispatches.contains(dispatch) {
      for line in effects {
        let effect = try decode(line)
        if case .effect(_, let transaction?, _, _) = effect, !transactions.contains(transaction) { continue }
        lines.append(effect)
      }
    }
    // The reads of the transactions kept, in the order of the file. One of a record before `position` keeps its line
    // only if verify will give it that record's model: the store's latest before `position`, which the snapshot
    // holds (or, for a store with no record from the history's first to there, a model from before the history).
    var latestBefore: [String: Int] = [:]
    for line in index.records.prefix(max(0, position - index.firstIndex)) { latestBefore[line.store] = line.index }
    let first = index.firstIndex
    let reads = index.reads.filter { transactions.contains($0.key) }.flatMap { transaction, reads in
      reads.filter { read in
        guard read.read.index < position else { return true }
        return latestBefore[read.read.store].map { $0 == read.read.index } ?? (read.read.index < first)
      }.map { (transaction, $0) }
    }
    for (transaction, read) in reads.sorted(by: { $0.1.line.number < $1.1.line.number }) {
      lines.append(.read(transactionID: transaction, store: read.read.store, index: read.read.index))
    }
    // `position` is at most one past the cursor (`compact(before:to:)`): the records undone after it stay undone.
    if cursor != nextIndex - 1 { lines.append(.move(cursor)) }
    try SessionFormat.write(
      lines, codecs: codecs, marked: index.redactions, to: url, loaded: source?.fingerprint)
  }
}

extension Data {
  /// Whether the bytes in `range` are those of `other`.
  func elementsEqual(_ other: [UInt8], in range: Range<Int>) -> Bool {
    guard other.count == range.count else { return false }
    return withUnsafeBytes { mine in
      other.withUnsafeBytes { theirs in
        memcmp(mine.baseAddress! + range.lowerBound, theirs.baseAddress!, range.count) == 0
      }
    }
  }

  /// Whether the line's `"l"` in `range` (`nil`: none) names the path of each of `lists`, spelt as a writer spells it
  /// or otherwise: a reader looks for lists only at those paths, so a line whose `"l"` leaves one out does not leave
  /// its store's next line that list to rest on. (A line that names them but spells its model's keys otherwise, so
  /// that the reader files a list at another path, is refused when it is compared.)
  func namesEveryList(_ lists: LineLists, in range: Range<Int>?) -> Bool {
    guard !lists.lists.isEmpty else { return true }
    guard let range else { return false }
    // As a writer writes it for a model with one list, nothing inside it: the bytes compared.
    if lists.lists.count == 1, isListOfPaths(Array(lists.lists.keys), in: range) { return true }
    guard let paths = try? JSONDecoder().decode([[ListPath.Component]].self, from: self[range]) else { return false }
    let named = Set(paths.map(ListPath.json))
    return lists.lists.keys.allSatisfy(named.contains)
  }

  /// Whether the bytes in `range` are a JSON array of `paths`, as a writer writes a line's `"l"`: `[`, the paths
  /// separated by commas, `]`.
  func isListOfPaths(_ paths: [[UInt8]], in range: Range<Int>) -> Bool {
    guard !paths.isEmpty, range.count == paths.reduce(1, { $0 + $1.count + 1 }) else { return false }
    return withUnsafeBytes { bytes in
      var position = range.lowerBound
      guard bytes[position] == UInt8(ascii: "[") else { return false }
      position += 1
      for (offset, path) in paths.enumerated() {
        if offset > 0 {
          guard bytes[position] == UInt8(ascii: ",") else { return false }
          position += 1
        }
        let equal = path.withUnsafeBytes { path in
          memcmp(bytes.baseAddress! + position, path.baseAddress!, path.count) == 0
        }
        guard equal else { return false }
        position += path.count
      }
      return bytes[position] == UInt8(ascii: "]")
    }
  }
}

/// The records of a session, once decoded.
private final class SessionCache: Sendable {
  let records: LockedValue<[Record]?>
  /// The lists of record lines decoded one by one, by record index: the bases of the lines after them.
  let lists = LockedValue<[Int: LineLists]>([:])

  init(decoded: [Record]?) {
    records = LockedValue(decoded)
  }
}

/// Carries a dispatch result to the thread waiting on the semaphore.
///
/// Where a replayed dispatch's completion leaves its result.
///
/// `@unchecked Sendable`: written once before `signal()` and read after `wait()`, which orders the two.
private final class ResultBox: @unchecked Sendable {
  var result: Result<Void, DispatchError>?
}

extension Session.VerifyStep {
  /// The step of a record line of a version 2 or 3 file, from its fields: `transaction` and `model` are those it has.
  init(
    _ line: SessionIndex.RecordLine, fields: RecordFields, bytes: UnsafeRawBufferPointer, transaction: UInt64,
    model: Range<Int>, action: any ActionType, outcomes: [TransactionID: SessionIndex.Outcome]
  ) {
    let dispatch = RecordFields.unsigned(bytes, fields.dispatch) ?? transaction
    let outcome = outcomes.isEmpty ? nil : outcomes[TransactionID(rawValue: transaction)]
    self.init(
      index: line.index, dispatchID: TransactionID(rawValue: dispatch),
      transactionID: TransactionID(rawValue: transaction),
      change: RecordFields.unsigned(bytes, fields.change).map { Int(clamping: $0) } ?? 0,
      store: line.store, action: action,
      failed: fields.error != nil || outcome?.e != nil,
      cancelled: RecordFields.isTrue(bytes, fields.cancelled) || outcome?.c == true,
      rollback: RecordFields.isTrue(bytes, fields.rollback), unchanged: RecordFields.isTrue(bytes, fields.unchanged),
      modelBytes: model, listPaths: fields.lists, base: line.base, record: nil, actionBytes: fields.action,
      fieldsFromEnd: fields.fromEnd)
  }

  /// Whether `other` was read from the same line with the same fields, but for where its model ends.
  func sameFields(as other: Session.VerifyStep) -> Bool {
    index == other.index && dispatchID == other.dispatchID && transactionID == other.transactionID
      && change == other.change && store == other.store && actionBytes == other.actionBytes
      && failed == other.failed && cancelled == other.cancelled && rollback == other.rollback
      && unchanged == other.unchanged && listPaths == other.listPaths && base == other.base
  }
}
