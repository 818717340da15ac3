import Foundation
import Synchronization

/// Middleware that records every transaction as it happened, moves through the history by whole dispatches (time
/// travel), and writes the session to a file that ``Session`` loads, restores and verifies.
///
/// ```swift
/// let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
/// dispatcher.register(middleware: recorder)
/// try recorder.attach(appendingTo: url, codecs: codecs)  // optional: a session file, written off-thread
/// // ... dispatch ...
/// try recorder.undo()  // every store the last dispatch changed is back where it was
/// ```
///
/// Each record is filed in the critical section that made its change: for a ``SynchronousReducer``, the one that
/// reduced the action; for an operation, each change it made (``ActionOperation/updateModel(_:)``), or, if it
/// changed nothing, the one in which it finished.
/// So a record holds the model its change produced, also while other threads dispatch to the same store, and records
/// of one store are in the order of its changes. Failed and cancelled transactions are recorded too, with their
/// changes and their error.
///
/// > Important: Safe to use from any thread, also while other threads dispatch. Moves (``undo(byRecord:)``,
/// > ``redo(byRecord:)``, ``jump(to:byRecord:)``) are checked before anything changes: one that throws changes
/// > nothing. An operation that changed its store again after another transaction changed it has records on both
/// > sides of that transaction's; ``Session/verify(against:mode:)``, which re-runs operations one after another,
/// > reports it (``SessionError/interleavedChanges(index:dispatchID:storeIdentifier:action:otherIndex:)``).
///
/// > Important: One recorder per dispatcher: records are filed through the first recorder registered, and a second
/// > one records nothing. A recorder in memory that is also attached to a file does both (undo, and the file).
public final class RecorderMiddleware: Middleware {
  /// How far a move goes.
  enum Step: Sendable, Hashable {
    /// To the position before (or after) a whole dispatch: every store it changed moves together. Dispatches whose
    /// records interleave (they ran at the same time) move together.
    case dispatch
    /// One record: one store's transaction.
    case record
  }

  /// The most records kept in memory; when a new record would exceed it, the oldest goes.
  let maxNumberOfRecords: Int

  /// The state, in an object of its own that the writer thread takes lines from: the writer never holds the
  /// recorder, so the recorder is always released (and its writer closed, with what is left written) on the thread
  /// that lets it go.
  let storage: RecorderStorage
  /// Whether a record left work for after the lock (``afterLock()``): checked without the lock after every
  /// transaction, which mostly leaves none.
  private let pendingWork = Atomic<Bool>(false)
  /// The store whose baseline `willDispatch` last confirmed, by identity: a dispatch to the same store skips the
  /// lock.
  private let lastKnownStore = Atomic<UInt>(0)

  /// What the recorder leaves out of what it keeps and writes (``SessionPrivacy``).
  let privacy: SessionPrivacy
  /// Whether `privacy` excludes any store: checked, without hashing, for every record.
  private let excludesStores: Bool

  /// Creates a recorder that keeps at most `maxNumberOfRecords` records in memory.
  /// - Parameters:
  ///   - maxNumberOfRecords: The bound on the history; at least 1.
  ///   - privacy: The stores it leaves out, and the redactions it applies before writing; none by default.
  public init(maxNumberOfRecords: Int = 10_000, privacy: SessionPrivacy = SessionPrivacy()) {
    precondition(maxNumberOfRecords > 0, "DispatchStore: maxNumberOfRecords must be at least 1")
    self.maxNumberOfRecords = maxNumberOfRecords
    self.privacy = privacy
    self.excludesStores = !privacy.excluded.isEmpty
    self.storage = RecorderStorage(bound: maxNumberOfRecords)
  }

  deinit {
    // The writer writes what is left, and ends its thread, here: taken out of the storage, which the writer thread
    // may still hold for a moment, it is released on this thread, which waits for it.
    let (writer, rest) = storage.state.withLock { state in
      defer {
        state.outbox = []
        state.writer = nil
      }
      return (state.writer, state.outbox)
    }
    writer?.write(finally: rest)
  }

  // MARK: - Reading the history

  /// The records kept in memory, oldest first.
  ///
  /// Those of a store whose models or actions the recorder redacts (``SessionPrivacy``) are shown as the session file
  /// holds them: redacted, with their failure's type rather than its description.
  public var records: [Record] {
    let records = storage.state.withLock { $0.history.all }
    // Redactions are app code: run after the lock.
    return privacy.redactions.isEmpty ? records : records.map(privacy.shown)
  }

  /// The index of the current record.
  ///
  /// The latest record's, unless you moved back; one less than the first record's index when you moved before it.
  public var cursor: Int {
    storage.state.withLock { $0.cursor }
  }

  /// The current record, or `nil` before the first one.
  var currentRecord: Record? {
    storage.state.withLock { $0.history.record(at: $0.cursor) }
  }

  /// The first failure writing the session file, if any.
  ///
  /// After one the recorder stops writing, so the file stays a valid prefix of the session. Recording in memory
  /// continues.
  public var persistenceError: SessionError? {
    let writer = storage.state.withLock { $0.writer }
    return writer?.failure
  }

  // MARK: - Time travel

  /// Moves back by one dispatch (or one record) and restores every store it changed to the models before it.
  ///
  /// Dispatches that changed no model (an operation that failed, or was cancelled, before changing its store) are
  /// stepped over: the move undoes the latest dispatch at or before the cursor that changed something.
  /// - Parameter byRecord: `false` (the default) to move by a whole dispatch, every store it changed together
  ///   (dispatches whose records interleave, having run at the same time, move together); `true` to move by one
  ///   record, one store's transaction.
  /// - Returns: The record now current, as ``records`` shows it, or `nil` if the cursor is now before the first record.
  /// - Throws: ``SessionError/atStartOfHistory`` if nothing before the cursor changed a model, or
  ///   ``SessionError/storeUnavailable(storeIdentifier:)`` if a store to restore is no longer registered, or
  ///   ``SessionError/storeBusy(storeIdentifier:)`` if an all-or-nothing dispatch holds one; nothing is changed then.
  @discardableResult
  public func undo(byRecord: Bool = false) throws(SessionError) -> Record? {
    try move { state throws(SessionError) in
      guard let target = state.history.position(before: state.cursor, by: byRecord ? .record : .dispatch) else {
        throw .atStartOfHistory
      }
      return target
    }
  }

  /// Moves forward by one dispatch (or one record) and restores every store it changed.
  ///
  /// It goes on over the dispatches after it that changed no model, up to the next that did, so that undo and redo
  /// land on the same positions.
  /// - Parameter byRecord: `false` (the default) to move by a whole dispatch; `true` to move by one record.
  /// - Returns: The record now current, as ``records`` shows it.
  /// - Throws: ``SessionError/atEndOfHistory``, ``SessionError/storeUnavailable(storeIdentifier:)`` if a store to
  ///   restore is no longer registered, or ``SessionError/storeBusy(storeIdentifier:)`` if an all-or-nothing dispatch
  ///   holds one; nothing is changed then.
  @discardableResult
  public func redo(byRecord: Bool = false) throws(SessionError) -> Record? {
    try move { state throws(SessionError) in
      guard let target = state.history.position(after: state.cursor, by: byRecord ? .record : .dispatch) else {
        throw .atEndOfHistory
      }
      return target
    }
  }

  /// Moves to the record at `index`, or to the end of its dispatch, and restores each store's model to what it was
  /// right after it.
  ///
  /// No reducer runs; observers hear each restored model with ``ModelChange/isRestore`` set and the action of the
  /// record it comes from (for a store restored to before its first record, the action being undone). Dispatching
  /// afterwards drops the records after the cursor. A dispatch that changed no model is a position like any other:
  /// jumping to it shows the models of the change before it.
  /// - Parameters:
  ///   - index: A record's ``Record/index``, or one less than the first record's to go before it.
  ///   - byRecord: `false` (the default) goes on to the last record of the dispatch `index` belongs to (of the
  ///     dispatches running at the same time), so that no store shows half a dispatch; `true` stops at `index`.
  /// - Returns: The record now current, as ``records`` shows it, or `nil` before the first record.
  /// - Throws: ``SessionError`` if `index` is outside the history, a store to restore is no longer registered, or an
  ///   all-or-nothing dispatch holds one (``SessionError/storeBusy(storeIdentifier:)``); nothing is changed then.
  @discardableResult
  public func jump(to index: Int, byRecord: Bool = false) throws(SessionError) -> Record? {
    try move { state throws(SessionError) in
      let valid = state.history.validPositions
      guard valid.contains(index) else { throw .indexOutOfRange(index, valid: valid) }
      return byRecord ? index : state.history.position(endingDispatchAt: index)
    }
  }

  /// Moves the cursor to the position `target` picks.
  ///
  /// In three steps, so that a move that fails changes nothing and moves racing dispatches and each other leave
  /// every store at the models of the cursor, and the history true:
  /// 1. under the recorder's lock, plan which store gets which model;
  /// 2. after it, resolve each store (user code may run when a reference is released) and check the types;
  /// 3. with the lock of every resolved store taken, plan again under the recorder's lock (a dispatch may have
  ///    come), commit if every store to restore is locked, and apply each store's model before its lock is released.
  ///    No dispatch can then reduce a store between the commit and its restore: one that comes after reduces the
  ///    restored model and files its record after the new cursor (proposal 0015).
  ///
  /// The move never waits for a store's lock while it holds another: a dispatch holds a store's lock while it
  /// reduces, and a reducer may read another store. It waits for the first lock, holding none, and tries the others;
  /// if one is taken, it releases what it holds and starts again waiting for that one.
  private func move(
    _ target: (RecorderState) throws(SessionError) -> Int
  ) throws(SessionError) -> Record? {
    // The store whose lock the move waits for first: the one found taken last time.
    var first: String?
    while true {
      // Resolved again on every try: a store may have been unregistered, or replaced, meanwhile.
      var resolved: [String: any ModelRestoring] = [:]
      let plan = try storage.state.withLock { state throws(SessionError) in try state.restorePlan(to: target(state)) }
      for step in plan.steps where resolved[step.storeIdentifier] == nil {
        guard let store = step.location.store(step.storeIdentifier),
          store.canRestore(model: step.model, action: step.action)
        else {
          throw .storeUnavailable(storeIdentifier: step.storeIdentifier)
        }
        resolved[step.storeIdentifier] = store
      }
      let deliveries = PendingDeliveries()
      var stores = Array(resolved.values)
      if let first, let index = stores.firstIndex(where: { $0.identifier == first }) { stores.swapAt(0, index) }
      let attempt = Self.locking(stores[...], deliveries: deliveries) { () -> MoveAttempt in
        do throws(SessionError) {
          return try storage.state.withLock { state throws(SessionError) -> MoveAttempt in
            let position = try target(state)
            let plan = try state.restorePlan(to: position)
            // A dispatch brought a store not locked yet, or a store locked is no longer the one registered under its
            // identifier: plan again. (The registry never takes a store's lock inside its own: looking it up here,
            // with stores locked, is safe.)
            for step in plan.steps {
              guard let locked = resolved[step.storeIdentifier],
                let current = step.location.store(step.storeIdentifier), current === locked
              else { return .replan }
            }
            return .committed(state.commitMove(to: position, plan: plan))
          }
        } catch {
          return .failed(error)
        }
      }
      switch attempt {
      case .committed(let committed):
        deliveries.deliver()
        afterLock()
        // Shown as `records` shows it: redacted, if its store is.
        return committed.current.map(privacy.shown)
      case .failed(let error):
        throw error
      case .replan:
        continue
      case .busy(let store):
        // A dispatch holds that store's lock for as long as it reduces: wait for it first, holding none.
        first = store
      }
    }
  }

  /// Takes the lock of each of `stores`, waiting only for the first one's (holding none), trying the others'; then
  /// runs `innermost` with all of them held.
  private static func locking(
    _ stores: ArraySlice<any ModelRestoring>, deliveries: PendingDeliveries, _ innermost: () -> MoveAttempt,
    waiting: Bool = true
  ) -> MoveAttempt {
    guard let first = stores.first else { return innermost() }
    let rest = stores.dropFirst()
    return first.restoreLocked(
      waiting: waiting, { locking(rest, deliveries: deliveries, innermost, waiting: false) }, deliveries: deliveries)
  }

  // MARK: - Snapshots

  /// Writes every recorded store's model at the cursor to the session file, so that ``Session/restore(into:)``
  /// starts from here instead of reading the records before it.
  ///
  /// Does nothing without a file (``attach(appendingTo:codecs:syncEachRecord:)``).
  public func snapshot() {
    storage.state.withLock { $0.writeSnapshot() }
    afterLock()
  }

  // MARK: - Continuing a session

  /// Puts the stores of `dispatcher` at the session's cursor and takes over its history, so that undo, redo and
  /// appending continue where the session left off: the launch of an app that restores its last state.
  ///
  /// No reducer runs (see ``Session/restore(into:)``). Register the recorder with `dispatcher` to go on recording,
  /// and ``attach(appendingTo:codecs:syncEachRecord:)`` to the same file to go on appending to it.
  /// - Parameters:
  ///   - session: A loaded session.
  ///   - dispatcher: A dispatcher with the session's stores registered.
  /// - Throws: ``SessionError`` if a store is missing or the session does not decode, or
  ///   ``SessionError/redacted(storeIdentifiers:)`` if it holds redacted models (``SessionPrivacy``), which undo
  ///   would put back in the app; nothing is changed then. ``SessionError/storeBusy(storeIdentifier:)`` if an
  ///   all-or-nothing dispatch holds a store (nothing is changed), or took one while this ran (the history is taken
  ///   over and the stores before it, in identifier order, are restored). Try again once that dispatch ended.
  ///   ``SessionError/recorderAttached(path:)`` if the recorder is attached to a file (a recorder stays attached until
  ///   it is released or attached elsewhere: resume with a new recorder, registered in place of this one), and
  ///   ``SessionError/indexOutOfRange(_:valid:)`` if the session's cursor is before the records the recorder keeps
  ///   (`maxNumberOfRecords`); nothing is changed then.
  public func resume(_ session: Session, in dispatcher: Dispatcher) throws(SessionError) {
    // Redacted models, which undo would put back; and stores this recorder leaves out, which it would write again.
    let redacted = Set(session.index.redactions.filter(\.value.model).keys)
      .union(session.index.records.map(\.store).filter(privacy.excluded.contains))
    guard redacted.isEmpty else { throw .redacted(storeIdentifiers: redacted.sorted()) }
    if let path = storage.state.withLock({ $0.writer?.path }) { throw .recorderAttached(path: path) }
    // The stores go back to the session's cursor, which the history kept must hold.
    let firstKept = max(session.firstIndex, session.nextIndex - maxNumberOfRecords)
    guard session.cursor >= firstKept - 1 else {
      throw .indexOutOfRange(session.cursor, valid: (firstKept - 1)...(session.nextIndex - 1))
    }
    let plan = try session.restorePlan(in: dispatcher, at: session.cursor)
    try Session.requireFree(plan)
    // Only the records the recorder keeps are decoded, and the models before the first of them.
    let records = try session.records(from: firstKept)
    let base = try session.models(at: firstKept - 1)
    // What the session's operations fetched and read: saving the history again keeps them, for verify; not those
    // of the records left out, as a recorder that dropped them keeps none.
    let dropped = session.dropped(before: firstKept)
    let effects = try session.effects(
      kept: Set(records.map(\.transactionID)), droppedDispatches: dropped.dispatches)
    let loadedFile = session.source?.fingerprint
    var stores: [String: StoreLocation] = [:]
    var baselines: [String: (model: any ModelType, action: (any ActionType)?)] = [:]
    var recorded = Set(records.map(\.storeIdentifier)).union(base.keys)
    // A store first recorded after the records kept begin starts from the model of the snapshot that introduced it.
    let introduced = try session.firstSnapshotModels(of: recorded.subtracting(base.keys), from: firstKept)
    // So does one that a snapshot among them introduced and no record names, if restore puts it back (a snapshot at
    // or before the cursor's next record), and this recorder does not leave it out (helper-57).
    let unrecorded = Set(session.index.storeIdentifiers).subtracting(recorded).subtracting(privacy.excluded)
    let onlyInSnapshots = try session.firstSnapshotModels(of: unrecorded, from: firstKept, through: session.cursor + 1)
    recorded.formUnion(onlyInSnapshots.keys)
    for identifier in recorded {
      guard let store = dispatcher.store(with: identifier) as? any ModelRestoring else {
        throw .unregisteredStore(index: session.cursor, storeIdentifier: identifier)
      }
      stores[identifier] = StoreLocation(dispatcher)
      let start = base[identifier] ?? introduced[identifier] ?? onlyInSnapshots[identifier]
      baselines[identifier] = start.map { ($0.model, $0.action) } ?? (store.anyModel, nil)
    }
    let (event, replaced) = storage.state.withLock { state in
      state.adopt(
        records: records, firstIndex: firstKept, cursor: session.cursor, baselines: baselines,
        effects: effects, reads: session.index.reads.mapValues { $0.map(\.read) }, stores: stores,
        bound: maxNumberOfRecords, lastHash: session.lastHash, loadedFile: loadedFile, dropped: dropped)
    }
    withExtendedLifetime(replaced) {}  // The previous history is released here, after the lock.
    try Session.apply(plan, event: event)
  }

  // MARK: - Files

  /// From now on, writes every record, move and snapshot to the session file at `url`, on a writer thread.
  ///
  /// A missing file is created with a header listing the stores in `codecs`; a new, empty or header-only file then
  /// gets the recorder's history so far (from a snapshot of the models before its oldest record). An existing
  /// session must be the one this recorder resumed (``resume(_:in:)``): it is checked first, a corrupt one is left
  /// untouched, and an incomplete last line (from a crash) is dropped. Stores in `codecs` that the file's header does
  /// not list (ones the app added since the file was written) are added to it: the file is written again, its
  /// records unchanged, atomically, under its lock.
  ///
  /// While the recorder is attached it holds the file's lock: another recorder, in this process or another, that
  /// attaches to it, or saves over it, gets ``SessionError/inUse(path:)``. The lock is released when the recorder is
  /// released or attached elsewhere.
  /// - Parameters:
  ///   - url: The session file: a regular file, or nothing yet.
  ///   - codecs: How each store's actions and models encode.
  ///   - syncEachRecord: `false` (the default) to write lines in batches: once many are waiting, at least every few
  ///     tens of milliseconds, on ``flush()``, when the recorder is released, and when the process exits normally.
  ///     `true` to write and sync (`fsync`) each record before its dispatch completes: a dispatch that completed is
  ///     on disk, and a crash loses none of them; the dispatching thread waits for the writer's sync.
  /// - Throws: ``SessionError/inUse(path:)``; ``SessionError/notARegularFile(path:kind:)`` or
  ///   ``SessionError/cannotRead(path:reason:)`` for a path that is not a readable regular file;
  ///   ``SessionError/historyMismatch(fileRecords:recorderRecords:)`` if the file holds records but not the history
  ///   this recorder resumed, as it resumed it (another recorder appended to it or moved its cursor since, or this
  ///   one recorded or moved before attaching); or why the file is not a valid session for `codecs`. The path is left
  ///   as it was.
  public func attach(
    appendingTo url: URL, codecs: SessionCodecs, syncEachRecord: Bool = false
  ) throws(SessionError) {
    let point = storage.state.withLock { $0.appendingPoint }
    let writer = try SessionWriter(
      appendingTo: url, codecs: codecs, privacy: privacy, durability: syncEachRecord ? .eachRecord : .buffered,
      at: point)
    // The file the recorder resumed from: the writer's appends are its own, which a save over it keeps.
    let loaded = storage.state.withLock { $0.loadedFile }.flatMap { writer.appendsTo($0) ? $0 : nil }
    let attached = storage.state.withLock { state -> (SessionWriter?, [SessionFormat.Line], Bool)? in
      // A record filed or a move made meanwhile is not in the file's history.
      guard writer.startedEmpty || state.appendingPoint == point else {
        // Written again to list stores the app added, the file holds what it held, hashed anew: a save checks that.
        if let rewritten = writer.rewritten, let loaded, state.loadedFile == loaded {
          state.loadedFile = rewritten.file
        }
        return nil
      }
      // Its lines hashed anew: attaching to it again after attaching elsewhere checks the new hash.
      if let rewritten = writer.rewritten { state.resumed?.lastHash = rewritten.lastHash }
      return state.attach(writer, loaded: loaded)
    }
    guard let (previous, leftover, previousWasLoadedFiles) = attached else {
      throw .historyMismatch(
        fileRecords: point.nextIndex, recorderRecords: storage.state.withLock { $0.history.nextIndex })
    }
    previous?.write(finally: leftover)
    if let previous, previousWasLoadedFiles {
      // What it leaves in the file the recorder resumed from, read before its lock is released: a later save there
      // checks against it. If it cannot be read, the older fingerprint stays, and such a save is refused.
      let before = storage.state.withLock { $0.loadedFile }
      if let before, let left = previous.close() {
        // Named by the path it was loaded from, whichever name (a hard link) the writer reached it by.
        let kept = left.named(before.path)
        storage.state.withLock { state in
          if state.loadedFile == before, state.loadedFileWriter == nil { state.loadedFile = kept }
        }
      }
    }
    writer.start(taking: storage)
    afterLock()
  }

  /// Returns once everything recorded before the call is written to the session file (or writing failed: see
  /// ``persistenceError``).
  ///
  /// The recorder also flushes when it is released and when the process exits normally.
  public func flush() {
    storage.flush()
  }

  /// Writes the whole history to a session file at `url`: a new one, or one that replaces a session file there.
  ///
  /// The file starts with a snapshot of the models before the oldest record kept, so a history whose oldest
  /// records were dropped still restores and verifies from there. An existing file is replaced only if it is a
  /// session (or empty), under its lock, by renaming a complete copy over it; anything else at the path is left as
  /// it was.
  /// - Parameters:
  ///   - url: Where to write.
  ///   - codecs: How each store's actions and models encode.
  ///
  /// Saving over the file the recorder resumed from (``resume(_:in:)``) replaces it only if nobody changed it since it
  /// was loaded (or since this recorder last saved over it): another launch's records are never lost.
  /// - Throws: ``SessionError/missingHeader(path:)`` if the file there is not a session,
  ///   ``SessionError/inUse(path:)`` if a recorder is attached to it, ``SessionError/notARegularFile(path:kind:)``;
  ///   ``SessionError/fileChanged(path:)`` if it is the file the recorder resumed from and it changed since; an
  ///   encoding or I/O error.
  public func save(to url: URL, codecs: SessionCodecs) throws(SessionError) {
    let (lines, loaded) = storage.state.withLock { ($0.historyLines(), $0.loadedFile) }
    let written = try SessionFormat.write(lines, codecs: codecs, privacy: privacy, to: url, loaded: loaded)
    // The file now holds this history: the next save over it checks against that.
    if let loaded, loaded.isFile(at: url) {
      storage.state.withLock { state in
        if state.loadedFile == loaded { state.loadedFile = written }
      }
    }
  }

  // MARK: - Middleware

  /// Notes the model a store starts from, the first time the recorder sees the store.
  public func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    let id = ObjectIdentifier(store)
    if lastKnownStore.load(ordering: .relaxed) == UInt(bitPattern: id) { return }
    noteStore(store, identifier: transaction.storeIdentifier)
  }

  /// ``willDispatch(transaction:action:in:)`` when the recorder is the only middleware: the dispatch calls it
  /// directly, with the store as it holds it (``TransactionHook``).
  @usableFromInline
  func willHandle(_ store: AnyObject, kind: StoreKind) {
    if lastKnownStore.load(ordering: .relaxed) == UInt(bitPattern: ObjectIdentifier(store)) { return }
    noteStore(kind.anyStore(store), identifier: kind.identifier(of: store))
  }

  /// Notes a store's first model and where it is registered, for moves, the first time the recorder sees it.
  private func noteStore(_ store: any AnyStore, identifier: String) {
    let id = ObjectIdentifier(store)
    if excludesStores, privacy.excluded.contains(identifier) {
      lastKnownStore.store(UInt(bitPattern: id), ordering: .relaxed)
      return
    }
    guard !storage.state.withLock({ $0.known.contains(id) }) else {
      lastKnownStore.store(UInt(bitPattern: id), ordering: .relaxed)
      return
    }
    let model = store.anyModel
    let location = StoreLocation((store as? any ModelRestoring)?.dispatcher)
    storage.state.withLock { state in
      state.known.insert(id)
      state.stores[identifier] = location
      state.noteBaseline(model, of: identifier)
    }
  }

  /// Releases what the records filed for the transaction dropped, and wakes the writer if it has work.
  ///
  /// The records themselves were filed by the store, in the critical sections of the transaction's changes.
  public func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    didHandle()
  }

  /// ``didDispatch(transaction:action:in:)`` when the recorder is the only middleware, and after a failed
  /// all-or-nothing dispatch filed its rollback records.
  @usableFromInline
  func didHandle() {
    guard pendingWork.load(ordering: .relaxed) else { return }
    afterLock()
  }

  /// Files a record; returns the event number, which the store keeps.
  ///
  /// Called by a store under its lock
  /// (``HookedTransaction/file(store:action:model:error:cancelled:elapsed:changedModel:change:first:)``).
  ///
  /// Appends under the recorder's lock and queues the line for the writer; runs no user code, releases nothing
  /// (dropped records wait for ``afterLock()``), wakes nobody.
  @usableFromInline
  func file(
    dispatchID: TransactionID, transactionID: TransactionID, store: String, action: any ActionType,
    model: any ModelType, error: (any Error)?, cancelled: Bool, elapsed: UInt64, changedModel: Bool,
    change: UInt32 = 0, first: Int = -1
  ) -> UInt64 {
    let filed = fileRecord(
      dispatchID: dispatchID, transactionID: transactionID, store: store, action: action, model: model, error: error,
      cancelled: cancelled, elapsed: elapsed, changedModel: changedModel, change: change, first: first)
    return filed?.event ?? 0
  }

  /// Files the record of an operation's change; returns its index and event number, or `nil` if the store is left
  /// out.
  ///
  /// Called by the store under its lock, right after the change
  /// (``HookedTransaction/fileChange(store:action:model:change:first:)``); as
  /// ``file(dispatchID:transactionID:store:action:model:error:cancelled:elapsed:changedModel:change:first:)``.
  @usableFromInline
  func fileChange(
    dispatchID: TransactionID, transactionID: TransactionID, store: String, action: any ActionType,
    model: any ModelType, elapsed: UInt64, change: UInt32, first: Int
  ) -> (index: Int, event: UInt64)? {
    fileRecord(
      dispatchID: dispatchID, transactionID: transactionID, store: store, action: action, model: model, error: nil,
      cancelled: false, elapsed: elapsed, changedModel: true, change: change, first: first)
  }

  /// Files the record of a store put back after its all-or-nothing dispatch failed (``Record/isRollback``); returns
  /// the recorder's event number, which the store keeps.
  ///
  /// Called by the store under its lock, with the model it was put back to
  /// (``Store/release(from:rollingBack:deliveries:)``).
  @usableFromInline
  func fileRollback(dispatchID: TransactionID, store: String, action: any ActionType, model: any ModelType) -> UInt64 {
    let transactionID = TransactionID.next()
    let filed = fileRecord(
      dispatchID: dispatchID, transactionID: transactionID, store: store, action: action, model: model, error: nil,
      cancelled: false, elapsed: 0, changedModel: true, change: 0, first: -1, isRollback: true)
    return filed?.event ?? 0
  }

  /// Files a record; `change` is its number among its transaction's, `first` the index of the transaction's first
  /// (-1 for none), whose dispatched action it keeps.
  private func fileRecord(
    dispatchID: TransactionID, transactionID: TransactionID, store: String, action: any ActionType,
    model: any ModelType, error: (any Error)?, cancelled: Bool, elapsed: UInt64, changedModel: Bool, change: UInt32,
    first: Int, isRollback: Bool = false
  ) -> (index: Int, event: UInt64)? {
    // Left out (``SessionPrivacy/exclude(storeIdentifier:)``): nothing is kept; no move restores the store.
    if excludesStores, privacy.excluded.contains(store) {
      storage.state.withLock { if !$0.dispatchedActions.isEmpty { $0.dispatchedActions[transactionID] = nil } }
      return nil
    }
    let (index, event, afterLock) = storage.state.withLock { state in
      var dispatched =
        state.dispatchedActions.isEmpty ? nil : state.dispatchedActions.removeValue(forKey: transactionID)
      if change > 0, let earlier = state.history.record(at: first), earlier.transactionID == transactionID {
        dispatched = earlier.dispatched  // Taken by the transaction's first record.
      }
      let (event, afterLock) = state.file { index in
        RecordChunk.Fields(
          index: index, dispatchID: dispatchID, transactionID: transactionID, storeIdentifier: store, action: action,
          model: model, error: error, wasCancelled: cancelled, changedModel: changedModel, isRollback: isRollback,
          change: change, elapsed: elapsed, dispatched: dispatched)
      }
      return (state.cursor, event, afterLock)
    }
    if afterLock { pendingWork.store(true, ordering: .relaxed) }
    return (index, event)
  }

  /// Gives the records transaction `transactionID` filed at its changes, from index `first` on, the operation's
  /// error or cancellation, and writes it as a line of its own.
  ///
  /// Called by the store under its lock when the operation finished
  /// (``HookedTransaction/fileOutcome(store:from:error:cancelled:)``); runs no user code, releases nothing.
  @usableFromInline
  func fileOutcome(
    transactionID: TransactionID, store: String, from first: Int, error: (any Error)?, cancelled: Bool
  ) {
    if excludesStores, privacy.excluded.contains(store) { return }
    let afterLock = storage.state.withLock { state in
      state.fileOutcome(transactionID: transactionID, store: store, from: first, error: error, cancelled: cancelled)
    }
    if afterLock { pendingWork.store(true, ordering: .relaxed) }
  }

  /// Keeps the action the app dispatched for the record of transaction `id`, whose store maps it to an action of
  /// its own; called before the store handles it.
  @usableFromInline
  func noteDispatchedAction(_ action: any ActionType, of id: TransactionID) {
    let kept = DispatchedAction(action)
    storage.state.withLock { $0.dispatchedActions[id] = kept }
  }

  /// Notes which record's model transaction `transactionID` read of `store`, and writes it
  /// (`ActionOperation.model(of:as:)`).
  ///
  /// Called under the lock of the store read (``HookedTransaction/noteRead(of:reader:)``): its current record is
  /// the one whose model was read. Runs no user code, releases nothing.
  @usableFromInline
  func noteRead(of store: String, by transactionID: TransactionID, reader: String) {
    // A store left out has no records to name, and one that reads has none to re-run.
    if excludesStores, privacy.excluded.contains(store) || privacy.excluded.contains(reader) { return }
    let afterLock = storage.state.withLock { $0.noteRead(of: store, by: transactionID) }
    if afterLock { pendingWork.store(true, ordering: .relaxed) }
  }

  /// Keeps what an effect fetched (`ActionOperation.effect(_:_:)`) with its dispatch, and writes it.
  func fileEffect(dispatchID: TransactionID, transactionID: TransactionID, key: String, outcome: EffectOutcome) {
    let wake = storage.state.withLock {
      $0.fileEffect(dispatchID: dispatchID, transactionID: transactionID, key: key, outcome: outcome)
    }
    if wake { afterLock() }
  }

  /// Work that must not happen under a lock: releasing dropped records (a model may hold objects whose `deinit`
  /// is app code), waking the writer, and waiting for it.
  ///
  /// Runs on the dispatching thread before its dispatch completes, so that with `syncEachRecord` a
  /// completed dispatch's record is on disk.
  private func afterLock() {
    pendingWork.store(false, ordering: .relaxed)
    let (garbage, writer, backlog) = storage.state.withLock { state -> ([any Sendable], SessionWriter?, Bool) in
      var taken: [any Sendable] = []
      swap(&taken, &state.garbage)
      return (taken, state.writer, state.outbox.count >= SessionWriter.backlog)
    }
    withExtendedLifetime(garbage) {}
    writer?.wake()
    // Each record on disk before its dispatch completes; or far behind: wait rather than let the queue grow.
    if backlog || writer?.durability == .eachRecord { flush() }
  }
}

/// Where a recorded store is: the dispatcher it was registered with, held weakly, where moves look it up by its
/// identifier.
///
/// Not the store itself, weakly: a weak reference gives an object a side table, and every retain and release of a
/// recorded store, in every dispatch for the rest of its life, would take the runtime's slow path. The dispatcher has
/// one already (its stores refer to it weakly). So a move restores the store registered under the identifier when it
/// runs: a store unregistered since is unavailable, and one registered in its place with the same types is restored.
///
/// `@unchecked Sendable`: the weak reference is the only mutable stored property; the runtime reads and clears it
/// atomically, and a dispatcher is `Sendable`.
final class StoreLocation: @unchecked Sendable {
  weak var dispatcher: Dispatcher?

  init(_ dispatcher: Dispatcher?) {
    self.dispatcher = dispatcher
  }

  /// The store registered as `identifier` where it was recorded, if it still is.
  func store(_ identifier: String) -> (any ModelRestoring)? {
    dispatcher?.store(with: identifier) as? any ModelRestoring
  }
}

/// A recorder's state, behind its lock, and the writer's source of lines.
///
/// Separate from ``RecorderMiddleware`` so that the writer thread, which holds its source for the moment it takes
/// lines, never holds the recorder: the recorder's release, which closes the writer and waits for it, then never
/// happens on the writer thread.
final class RecorderStorage: SessionLineSource {
  // Nothing here refers to the recorder, not even weakly: a weak reference gives an object a side table, and every
  // retain and release of the recorder, several per recorded dispatch, would take the runtime's slow path.
  let state: LockedValue<RecorderState>

  init(bound: Int) {
    state = LockedValue(RecorderState(bound: bound))
  }

  func takeLines(for writer: ObjectIdentifier) -> [SessionFormat.Line] {
    state.withLock { state in
      // A replaced writer's last lines were handed to it when it was replaced; the outbox is the new one's.
      guard state.writer?.identity == writer else { return [] }
      var lines: [SessionFormat.Line] = []
      swap(&lines, &state.outbox)
      return lines
    }
  }

  func hasLines(for writer: ObjectIdentifier) -> Bool {
    state.withLock { $0.writer?.identity == writer && !$0.outbox.isEmpty }
  }

  /// Returns once everything queued before the call is written (``RecorderMiddleware/flush()``).
  func flush() {
    let (writer, queued) = state.withLock { ($0.writer, $0.queued) }
    writer?.waitUntilWritten(queued)
  }
}

/// The recorder is the dispatch path's hook: stores file its records in the critical sections of their changes.
extension RecorderMiddleware: TransactionHook {}
