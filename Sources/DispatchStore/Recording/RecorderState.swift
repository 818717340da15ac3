/// The recorder's state, behind its lock: the history, the cursor, what each store started from, and the lines
/// queued for the writer.
///
/// Every method runs under the recorder's lock, often inside a store's: none calls user code or releases a model
/// (what is dropped goes to `garbage`, released after the lock).
struct RecorderState {
  var history: RecordHistory
  var cursor = -1
  /// Each store's model before its oldest kept record, and the action of the record that produced it, if known.
  var baselines: [String: (model: any ModelType, action: (any ActionType)?)] = [:]
  /// Where each recorded store is registered, for moves.
  var stores: [String: StoreLocation] = [:]
  /// The stores seen by `willDispatch`, by identity: the check made per transaction.
  var known: Set<ObjectIdentifier> = []
  var writer: SessionWriter?
  /// The lines the writer has not taken yet, and how many were queued since it was attached.
  var outbox: [SessionFormat.Line] = []
  var queued = 0
  /// The effects operations fetched through the recorder, by dispatch (`ActionOperation.effect(_:_:)`).
  var effects: [TransactionID: [RecordedEffect]] = [:]
  /// The transactions whose records a dispatch after moving back removed, whether or not they fetched an effect yet:
  /// each one's dispatch, and the index its record was removed from (``dropOrphanedEffects()``).
  var orphanedEffects: [TransactionID: (dispatchID: TransactionID, removedFrom: Int)] = [:]
  /// The reads of other stores' models, by transaction (`ActionOperation.model(of:as:)`): each store read and the
  /// index of the record whose model it held.
  var reads: [TransactionID: [RecordedRead]] = [:]
  /// Per store read, the index its last read found, and the next index then.
  ///
  /// A read searches only the records filed since (``readIndex(of:)``). Forgotten when the cursor moves or records
  /// after it are dropped.
  var readIndices: [String: (index: Int, next: Int)] = [:]
  /// Per store, the index of its latest record dropped by the bound: the record its baseline holds.
  var droppedIndices: [String: Int] = [:]
  /// The actions the app dispatched, for the records of transactions whose stores map them (rare): taken when the
  /// record is filed.
  var dispatchedActions: [TransactionID: DispatchedAction] = [:]
  /// The number of the last record filed or move committed (``StoreState/filedEvent``).
  var event: UInt64 = 0
  /// How many times the history changed: a record filed, a move that moved the cursor, a session taken over.
  private var changes: UInt64 = 0
  /// The session file's history this recorder took over (``RecorderMiddleware/resume(_:in:)``).
  ///
  /// Its last line's hash and its cursor, and ``changes`` when it was taken over: a file appended to must end there,
  /// and the history must not have changed since.
  var resumed: (lastHash: UInt64, cursor: Int, changes: UInt64)?
  /// The file the history was taken over from, as it was loaded, as this recorder last saved over it, or as its
  /// writer left it: a save over it checks that nobody changed it since.
  var loadedFile: SessionFile.Fingerprint?
  /// The writer appending to ``loadedFile``'s file: what it leaves there becomes ``loadedFile`` when it is replaced.
  var loadedFileWriter: ObjectIdentifier?
  /// What the recorder dropped, for the caller to release after the lock.
  var garbage: [any Sendable] = []
  /// The chunk the next record goes into, while it has free slots.
  var chunk: RecordChunk?

  init(bound: Int) {
    history = RecordHistory(limit: bound)
  }

  /// Appends a record at the cursor and returns its event number, and whether there is work for after the lock.
  ///
  /// Drops the records after the cursor, and hidden ones in batches; queues the line for the writer. The work for
  /// after the lock is releasing what was dropped, or waking the writer.
  mutating func file(_ fields: (_ index: Int) -> RecordChunk.Fields) -> (event: UInt64, afterLock: Bool) {
    if cursor < history.lastIndex {
      let removed = history.removeAll(from: cursor + 1)
      readIndices.removeAll()
      if !reads.isEmpty {
        // The reads of the transactions whose first record is dropped here, which keep none (verify re-runs a
        // transaction from its first record), and any read of a record dropped here, which names another record's
        // index from now on; as the loader drops them from a file. A transaction that keeps a record keeps its reads.
        for record in removed where record.change == 0 { reads.removeValue(forKey: record.transactionID) }
        let kept = cursor
        dropReads { $0.index > kept }
      }
      // Every removed record's transaction, whether or not it fetched an effect yet: an operation still running may
      // fetch one after its record went, and file no record again (helper-60).
      let removedFrom = cursor + 1
      for record in removed { orphanedEffects[record.transactionID] = (record.dispatchID, removedFrom) }
      garbage.append(removed)
    }
    // A full chunk may hold the last reference to records already dropped: released after the lock too.
    let record = newRecord(fields(history.nextIndex))
    history.append(record)
    if !orphanedEffects.isEmpty { orphanedEffects.removeValue(forKey: record.transactionID) }
    if history.hasHiddenBatch { dropHidden() }
    cursor = record.index
    let wake = queue(.record(record))
    event &+= 1
    changes &+= 1
    return (event, wake || !garbage.isEmpty)
  }

  /// Gives the records of `transactionID` from index `first` on (those its operation filed at its changes) the
  /// operation's outcome, and queues it as a line; returns whether there is work for after the lock.
  ///
  /// Each record kept is replaced by one with the outcome, in a new slot (a filled slot is never written again);
  /// the replaced ones are released after the lock. A record dropped since (by the bound, or by a dispatch after
  /// moving back) is not looked for; the line applies to the records of the transaction the file holds.
  mutating func fileOutcome(
    transactionID: TransactionID, store: String, from first: Int, error: (any Error)?, cancelled: Bool
  ) -> Bool {
    var index = max(first, history.firstIndex)
    while index <= history.lastIndex {
      if let record = history.record(at: index), record.transactionID == transactionID {
        let replacement = newRecord(record.fieldsWithOutcome(error: error, cancelled: cancelled))
        garbage.append(history.replace(at: index, with: replacement))
      }
      index += 1
    }
    let wake = queue(.outcome(transactionID: transactionID, store: store, error: error, cancelled: cancelled))
    return wake || !garbage.isEmpty
  }

  /// A record in the next free slot of the current chunk, not yet in the history.
  @inline(__always)
  private mutating func newRecord(_ fields: consuming RecordChunk.Fields) -> Record {
    if let current = chunk, !current.isFull { return current.append(fields) }
    if let full = chunk { garbage.append(full) }
    let fresh = RecordChunk()
    chunk = fresh
    return fresh.append(fields)
  }

  /// Drops the records kept beyond the bound, making the last of each store its baseline: once per store and batch
  /// rather than once per record, since each is a dictionary write.
  mutating func dropHidden() {
    let dropped = history.dropHidden()
    // The latest dropped record of each store, newest first; an app has few stores, so a list beats hashing
    // every record's identifier.
    var latest: [Record] = []
    for record in dropped.reversed() where !latest.contains(where: { $0.storeIdentifier == record.storeIdentifier }) {
      latest.append(record)
    }
    if !effects.isEmpty {
      // A dropped record's transaction takes its effects along, not its dispatch's others: a store's operation of the
      // same dispatch may have a record kept, or file one later, that verify re-runs (proposal 0027). Effects without
      // a transaction (a resumed file's older lines) go with their dispatch.
      for record in dropped { dropEffects(of: record.transactionID, in: record.dispatchID) }
    }
    if !orphanedEffects.isEmpty { dropOrphanedEffects() }
    if !reads.isEmpty {
      for record in dropped { reads.removeValue(forKey: record.transactionID) }
    }
    for record in latest {
      droppedIndices[record.storeIdentifier] = record.index
      if let replaced = baselines.updateValue((record.model, record.action), forKey: record.storeIdentifier) {
        garbage.append(replaced.model)
      }
    }
    garbage.append(dropped)
  }

  /// Notes the model a store starts from, unless a baseline is known, and writes it as a snapshot.
  mutating func noteBaseline(_ model: any ModelType, of store: String) {
    guard baselines[store] == nil else { return }
    baselines[store] = (model, nil)
    _ = queue(.snapshot(index: cursor + 1, models: [store: model], actions: [:]))
  }

  /// Notes that transaction `transactionID` read the model of `store`, as the store's current record left it, and
  /// queues the read's line; returns whether there is work for after the lock.
  ///
  /// Called under the lock of the store read, whose current record is then the one its model holds.
  mutating func noteRead(of store: String, by transactionID: TransactionID) -> Bool {
    let read = RecordedRead(store: store, index: readIndex(of: store))
    reads[transactionID, default: []].append(read)
    return queue(.read(transactionID: transactionID, store: store, index: read.index))
  }

  /// The index of the record whose model `store` holds: its latest at or before the cursor, the latest the bound
  /// dropped, or -1 for none.
  ///
  /// Searches back from the cursor only to the records its last read searched: a store read at every dispatch and
  /// rarely changed (the settings) costs the records filed since, not the whole history, per read.
  mutating func readIndex(of store: String) -> Int {
    let known = readIndices[store]
    let index =
      history.latestIndex(of: store, atOrBefore: cursor, from: known?.next ?? Int.min)
      ?? max(known?.index ?? -1, droppedIndices[store] ?? -1)
    readIndices[store] = (index, history.nextIndex)
    return index
  }

  /// Drops the reads `drop` picks, and the transactions left with none.
  mutating func dropReads(where drop: (RecordedRead) -> Bool) {
    for (transaction, kept) in reads {
      let left = kept.filter { !drop($0) }
      if left.count < kept.count { reads[transaction] = left.isEmpty ? nil : left }
    }
  }

  /// Drops the effects of the transactions whose records a dispatch after moving back removed, once the bound has
  /// dropped every record before where they were removed: such a transaction then has no record left, as a save
  /// leaves its effects out.
  ///
  /// Not when the records go: an operation may still be running, holding an effect it has yet to file a record for
  /// (it files that record after the cursor, which takes its transaction out of ``orphanedEffects``). Another
  /// store's operation of the same dispatch keeps its effects, and so does a transaction with a record before the
  /// cursor, until the bound drops that record. Effects without a transaction (a resumed file's older lines) go with
  /// the first of their dispatch's transactions to go. So effects kept for removed records cost what the bound
  /// allows, not the recorder's life.
  private mutating func dropOrphanedEffects() {
    let first = history.firstIndex
    let due = orphanedEffects.filter { $0.value.removedFrom <= first }
    for (transaction, orphan) in due {
      orphanedEffects.removeValue(forKey: transaction)
      dropEffects(of: transaction, in: orphan.dispatchID)
    }
  }

  /// Drops the effects transaction `transaction` fetched in dispatch `dispatchID`, and those of the dispatch that name
  /// no transaction (a resumed file's older lines).
  ///
  /// One lookup of the dispatch: most dispatches fetch their effects in one transaction, and lose them all here.
  private mutating func dropEffects(of transaction: TransactionID, in dispatchID: TransactionID) {
    guard let slot = effects.index(forKey: dispatchID) else { return }
    let goes = { (effect: RecordedEffect) in effect.transactionID == nil || effect.transactionID == transaction }
    if effects.values[slot].allSatisfy(goes) {
      effects.remove(at: slot)
    } else {
      effects.values[slot].removeAll(where: goes)
    }
  }

  /// Keeps an effect's value with its dispatch, and queues its line.
  mutating func fileEffect(
    dispatchID: TransactionID, transactionID: TransactionID, key: String, outcome: EffectOutcome
  ) -> Bool {
    effects[dispatchID, default: []].append(RecordedEffect(key: key, outcome: outcome, transactionID: transactionID))
    return queue(.effect(dispatchID: dispatchID, transactionID: transactionID, key: key, outcome: outcome))
  }

  // MARK: - Moves

  struct RestoreStep {
    let storeIdentifier: String
    let location: StoreLocation
    let model: any ModelType
    let action: (any ActionType)?
  }

  struct RestorePlan {
    var steps: [RestoreStep] = []
  }

  struct Commit {
    let plan: RestorePlan
    let event: UInt64
    let current: Record?
  }

  /// What moving the cursor to `target` restores; changes nothing.
  func restorePlan(to target: Int) throws(SessionError) -> RestorePlan {
    let valid = history.validPositions
    guard valid.contains(target) else { throw .indexOutOfRange(target, valid: valid) }
    var plan = RestorePlan()
    guard target != cursor else { return plan }
    // Records dropped by the bound since the cursor was set are before the first kept position.
    let low = max(min(cursor, target), valid.lowerBound)
    let high = max(cursor, target)
    var seen: Set<String> = []
    for index in stride(from: low + 1, through: high, by: 1) {
      guard let changed = history.record(at: index) else { continue }
      guard seen.insert(changed.storeIdentifier).inserted else { continue }
      guard let location = stores[changed.storeIdentifier] else {
        throw .storeUnavailable(storeIdentifier: changed.storeIdentifier)
      }
      if let latest = history.latest(of: changed.storeIdentifier, atOrBefore: target) {
        plan.steps.append(
          RestoreStep(
            storeIdentifier: changed.storeIdentifier, location: location, model: latest.model, action: latest.action))
      } else if let baseline = baselines[changed.storeIdentifier] {
        plan.steps.append(
          RestoreStep(
            storeIdentifier: changed.storeIdentifier, location: location, model: baseline.model,
            action: baseline.action ?? changed.action))
      } else {
        throw .storeUnavailable(storeIdentifier: changed.storeIdentifier)
      }
    }
    return plan
  }

  /// Moves the cursor to `position`, queues the move's line, and takes the move's event number.
  mutating func commitMove(to position: Int, plan: RestorePlan) -> Commit {
    let moved = position != cursor
    cursor = position
    if moved {
      readIndices.removeAll()
      changes &+= 1
    }
    event &+= 1
    if moved { _ = queue(.move(position)) }
    return Commit(plan: plan, event: event, current: history.record(at: position))
  }

  // MARK: - Files

  /// Each store's model at the cursor, and the action of the record that produced it.
  func modelsAtCursor() -> (models: [String: any ModelType], actions: [String: any ActionType]) {
    var models: [String: any ModelType] = [:]
    var actions: [String: any ActionType] = [:]
    for store in Set(baselines.keys).union(stores.keys) {
      if let latest = history.latest(of: store, atOrBefore: cursor) {
        models[store] = latest.model
        actions[store] = latest.action
      } else if let baseline = baselines[store] {
        models[store] = baseline.model
        if let action = baseline.action { actions[store] = action }
      }
    }
    return (models, actions)
  }

  mutating func writeSnapshot() {
    guard writer != nil else { return }
    let (models, actions) = modelsAtCursor()
    _ = queue(.snapshot(index: cursor + 1, models: models, actions: actions))
  }

  /// Queues `line` for the writer, if there is one; returns whether there is work for after the lock: waking it
  /// (it sleeps with work it should do now), or waiting for it (it is far behind, or every record waits for its
  /// line: `syncEachRecord`).
  mutating func queue(_ line: SessionFormat.Line) -> Bool {
    guard let writer else { return false }
    outbox.append(line)
    queued += 1
    return writer.durability == .eachRecord || writer.isSleeping && outbox.count >= SessionWriter.batch
      || outbox.count >= SessionWriter.backlog
  }

  /// The index of the record whose model `store` has before the first kept record: its latest hidden one, the
  /// latest the bound dropped, or -1 for none.
  func startIndex(of store: String) -> Int {
    history.latestIndex(of: store, atOrBefore: history.firstIndex - 1, from: Int.min) ?? droppedIndices[store] ?? -1
  }

  /// The lines of the whole kept history: the models before its oldest record, its records, and the cursor.
  func historyLines() -> [SessionFormat.Line] {
    var lines: [SessionFormat.Line] = []
    if !baselines.isEmpty {
      // The models before the first kept record: a hidden record's (one the bound left out, not dropped yet), or the
      // baseline.
      var models: [String: any ModelType] = [:]
      var actions: [String: any ActionType] = [:]
      for (store, baseline) in baselines {
        if let hidden = history.latest(of: store, atOrBefore: history.firstIndex - 1) {
          models[store] = hidden.model
          actions[store] = hidden.action
        } else {
          models[store] = baseline.model
          if let action = baseline.action { actions[store] = action }
        }
      }
      lines.append(.snapshot(index: history.firstIndex, models: models, actions: actions))
    }
    var dispatches: Set<TransactionID> = []
    var transactions: Set<TransactionID> = []
    for record in history.all {
      lines.append(.record(record))
      dispatches.insert(record.dispatchID)
      transactions.insert(record.transactionID)
    }
    // The effects of the transactions with a record here: not those of one an undo and a new dispatch removed, nor
    // of one still running, which files its record after this history (proposal 0027, helper-58).
    for (dispatch, values) in effects where dispatches.contains(dispatch) {
      for effect in values where effect.transactionID.map(transactions.contains) ?? true {
        lines.append(
          .effect(dispatchID: dispatch, transactionID: effect.transactionID, key: effect.key, outcome: effect.outcome))
      }
    }
    // Every read, in the order of its transaction (a transaction's reads in the order made), also those of one that
    // files its record later. One of a record before the history keeps its line only if the record is the store's
    // model where the history starts: that is what verify gives it.
    for (transaction, values) in reads.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
      for read in values where read.index >= history.firstIndex || read.index == startIndex(of: read.store) {
        lines.append(.read(transactionID: transaction, store: read.store, index: read.index))
      }
    }
    if cursor != history.lastIndex { lines.append(.move(cursor)) }
    return lines
  }

  /// Where a file this recorder appends to must end: the history's next index, and, if the recorder took over a
  /// file's history and has not changed it since, that file's last hash and cursor (`nil`: only a file without
  /// records will do).
  var appendingPoint: SessionWriter.AppendingPoint {
    let file = resumed.flatMap { $0.changes == changes ? (lastHash: $0.lastHash, cursor: $0.cursor) : nil }
    return SessionWriter.AppendingPoint(nextIndex: history.nextIndex, file: file)
  }

  /// Makes `writer` the recorder's; returns the previous one and the lines it had not taken.
  ///
  /// The caller hands those over after the lock. A new file gets the whole kept history.
  /// `loaded` is the ``loadedFile`` the caller found `writer` appends to, if it does; the caller fingerprints what the
  /// previous writer leaves if it was the loaded file's (the returned `Bool`).
  mutating func attach(
    _ writer: SessionWriter, loaded: SessionFile.Fingerprint?
  ) -> (SessionWriter?, [SessionFormat.Line], Bool) {
    let previous = self.writer
    var leftover: [SessionFormat.Line] = []
    swap(&leftover, &outbox)
    self.writer = writer
    queued = 0
    let previousWasLoadedFiles = previous != nil && previous?.identity == loadedFileWriter
    loadedFileWriter = loaded != nil && loaded == loadedFile ? writer.identity : nil
    if writer.startedEmpty {
      for line in historyLines() { _ = queue(line) }
    }
    return (previous, leftover, previousWasLoadedFiles)
  }

  /// Takes over a session's history; returns the event number of the restore that follows, and what was
  /// replaced, for the caller to release after the lock.
  mutating func adopt(
    records: [Record], firstIndex: Int, cursor: Int,
    baselines adopted: [String: (model: any ModelType, action: (any ActionType)?)],
    effects adoptedEffects: [TransactionID: [RecordedEffect]],
    reads adoptedReads: [TransactionID: [RecordedRead]],
    stores adoptedStores: [String: StoreLocation],
    bound: Int, lastHash: UInt64, loadedFile: SessionFile.Fingerprint?,
    dropped: Session.DroppedRecords = Session.DroppedRecords()
  ) -> (UInt64, [any Sendable]) {
    self.loadedFile = loadedFile
    loadedFileWriter = nil
    var replaced: [any Sendable] = [history.all]
    replaced.append(contentsOf: baselines.values.map(\.model))
    history = RecordHistory(limit: bound, startingAt: firstIndex)
    baselines = adopted
    // What the session's records before `firstIndex` leave, as a recorder that dropped them keeps it; and only the
    // effects of dispatches with a record (a file keeps the effect lines of dispatches a later move and dispatch
    // removed, and nothing is running yet to file one).
    let recorded = Set(records.lazy.map(\.dispatchID))
    // (`Session.effects(kept:droppedDispatches:)` left out those of the transactions without a record kept.)
    effects = adoptedEffects.filter { recorded.contains($0.key) }
    orphanedEffects = [:]
    reads = dropped.transactions.isEmpty ? adoptedReads : adoptedReads.filter { !dropped.transactions.contains($0.key) }
    readIndices.removeAll()
    droppedIndices = dropped.latest
    // The session's reads of records before its history name each store's model where it starts (a recorder writes
    // no other, and compacting keeps no other): the records those models come from.
    for read in adoptedReads.values.joined() where read.index < firstIndex {
      droppedIndices[read.store] = max(droppedIndices[read.store] ?? -1, read.index)
    }
    for record in records {
      history.append(record)
      if history.hasHiddenBatch { dropHidden() }
    }
    replaced.append(contentsOf: garbage)
    garbage = []
    stores.merge(adoptedStores) { _, new in new }
    self.cursor = max(cursor, history.firstIndex - 1)
    event &+= 1
    changes &+= 1
    resumed = (lastHash, self.cursor, changes)
    return (event, replaced)
  }
}

/// The retained records, addressed by their absolute index, in a ring.
///
/// At most `limit` records are visible. Older ones are dropped in batches: until then they stay in the ring,
/// hidden (not in ``all``, not a valid position), though ``latest(of:atOrBefore:)`` still finds them as the model
/// before the first visible record.
///
/// A ring rather than an array that drops its front: filing a record moves no other, and a dropped batch is moved
/// out of its slots (for the caller to release after the lock) without shifting the rest.
struct RecordHistory {
  /// The slots, `nil` where no record is kept: grown to `capacity` by appending, then reused in turn.
  private var slots: [Record?] = []
  /// The slot of the oldest kept record (hidden ones included); zero until the ring first wraps.
  private var head = 0
  /// The number of records kept, hidden ones included.
  private var stored = 0
  /// The number of the oldest kept records that are hidden: past the limit, not dropped yet.
  ///
  /// Removing the newest records (a dispatch after moving back) does not show them again.
  private var hidden = 0
  /// The index the next record gets.
  private(set) var nextIndex = 0
  let limit: Int

  init(limit: Int, startingAt firstIndex: Int = 0) {
    self.limit = limit
    nextIndex = firstIndex
  }

  /// Hidden records dropped at once: a sixteenth of the limit, at most 64.
  private var batch: Int { min(64, limit / 16) }
  /// The most records kept at once: a batch of hidden ones is dropped as soon as it is complete.
  private var capacity: Int { limit + batch + 1 }

  var count: Int { stored - hidden }
  var firstIndex: Int { nextIndex - count }
  var lastIndex: Int { nextIndex - 1 }
  var all: [Record] { (firstIndex..<nextIndex).map { self[$0] } }
  /// The cursor's possible positions: before the first kept record, through the last.
  var validPositions: ClosedRange<Int> { (firstIndex - 1)...max(firstIndex - 1, lastIndex) }
  /// Whether the hidden records make a batch to drop.
  var hasHiddenBatch: Bool { hidden > batch }

  /// The slot `offset` places after the oldest kept record.
  private func slot(at offset: Int) -> Int {
    let slot = head + offset
    return slot < slots.count ? slot : slot - slots.count
  }

  /// The kept record at `index`, hidden ones included.
  private subscript(index: Int) -> Record {
    slots[slot(at: stored - (nextIndex - index))].unsafelyUnwrapped
  }

  func record(at index: Int) -> Record? {
    guard index >= firstIndex, index <= lastIndex else { return nil }
    return self[index]
  }

  /// The index of the latest record of `storeIdentifier` at or before `index` and at or after `lowest`, hidden
  /// ones included.
  func latestIndex(of storeIdentifier: String, atOrBefore index: Int, from lowest: Int) -> Int? {
    var position = min(index, lastIndex)
    let lowest = max(nextIndex - stored, lowest)
    while position >= lowest {
      if self[position].storeIdentifier == storeIdentifier { return position }
      position -= 1
    }
    return nil
  }

  /// The latest record of `storeIdentifier` at or before `index`, hidden ones included.
  func latest(of storeIdentifier: String, atOrBefore index: Int) -> Record? {
    latestIndex(of: storeIdentifier, atOrBefore: index, from: Int.min).map { self[$0] }
  }

  /// Puts `record` in the place of the kept record at `index`; returns the one it replaced.
  mutating func replace(at index: Int, with record: Record) -> Record {
    let slot = slot(at: stored - (nextIndex - index))
    defer { slots[slot] = record }
    return slots[slot].unsafelyUnwrapped
  }

  mutating func append(_ record: Record) {
    if stored < slots.count {
      slots[slot(at: stored)] = record
    } else {
      // Still growing: only a full ring drops a batch, so it has not wrapped yet.
      assert(head == 0 && slots.count < capacity, "DispatchStore: the record ring is full")
      slots.append(record)
    }
    stored += 1
    nextIndex += 1
    if stored - hidden > limit { hidden += 1 }
  }

  /// Moves the records at offsets `range` from the oldest out of their slots, in order.
  private mutating func take(_ range: Range<Int>) -> [Record] {
    var taken: [Record] = []
    taken.reserveCapacity(range.count)
    for offset in range { taken.append(slots[slot(at: offset)].take().unsafelyUnwrapped) }
    return taken
  }

  /// Drops the hidden records and returns them, oldest first.
  mutating func dropHidden() -> [Record] {
    guard hidden > 0 else { return [] }
    let dropped = take(0..<hidden)
    head = slot(at: hidden)
    stored -= hidden
    hidden = 0
    return dropped
  }

  /// Removes the records from `index` on and returns them, oldest first; the next record gets `index`.
  mutating func removeAll(from index: Int) -> [Record] {
    guard index <= lastIndex else { return [] }
    let kept = max(index, firstIndex)
    let removed = take((stored - (nextIndex - kept))..<stored)
    stored -= removed.count
    nextIndex = kept
    return removed
  }

  // MARK: - Dispatch boundaries

  /// Whether no dispatch has records on both sides of each position from the first kept record on: a position
  /// after which the history holds no part of a dispatch whose other part is before it.
  ///
  /// Element `i` is position `firstIndex + i`. Dispatches that ran at the same time interleave their records;
  /// positions between them are not boundaries, so that moving by dispatch never shows half of one.
  private func boundaries() -> [Bool] {
    let start = firstIndex
    var last: [TransactionID: Int] = [:]
    for offset in 0..<count { last[self[start + offset].dispatchID] = offset }
    var reach = -1
    var result: [Bool] = []
    result.reserveCapacity(count)
    for offset in 0..<count {
      reach = max(reach, last[self[start + offset].dispatchID] ?? offset)
      result.append(reach <= offset)
    }
    return result
  }

  /// The position an undo from `cursor` goes to: the step before the latest one at or before `cursor` that changed
  /// a model, where steps that changed nothing (failed or cancelled operations that left their store as it was)
  /// are stepped over; `nil` if no step before the cursor changed anything.
  func position(before cursor: Int, by step: RecorderMiddleware.Step) -> Int? {
    guard cursor >= firstIndex else { return nil }
    let boundaries = step == .dispatch ? boundaries() : nil
    var position = min(cursor, lastIndex)
    var changed = false
    while position >= firstIndex {
      if self[position].changedModel { changed = true }
      position -= 1
      if changed, isBoundary(position, boundaries) { return position }
    }
    return nil
  }

  /// Whether `position` ends a step: a dispatch boundary, or any position when moving by record (`boundaries` is
  /// `nil`); before the first record is one.
  private func isBoundary(_ position: Int, _ boundaries: [Bool]?) -> Bool {
    guard position >= firstIndex, let boundaries else { return true }
    return boundaries[position - firstIndex]
  }

  /// The first boundary at or after `index`: the end of the dispatch (or dispatches running together) that record
  /// `index` belongs to.
  func position(endingDispatchAt index: Int) -> Int {
    guard index >= firstIndex else { return index }
    let boundaries = boundaries()
    var position = index
    while position < lastIndex {
      if boundaries[position - firstIndex] { return position }
      position += 1
    }
    return lastIndex
  }

  /// The position a redo from `cursor` goes to, or `nil` at the end: the end of the next step that changed a
  /// model, and of the steps after it that changed nothing (so that undo and redo land on the same positions); the
  /// end of the history if no step after the cursor changed anything.
  func position(after cursor: Int, by step: RecorderMiddleware.Step) -> Int? {
    guard cursor < lastIndex else { return nil }
    let boundaries = step == .dispatch ? boundaries() : nil
    var position = max(cursor + 1, firstIndex)
    var changed = false
    var landing: Int?
    while position <= lastIndex {
      let changes = self[position].changedModel
      if landing == nil {
        // The step that changes something.
        if changes { changed = true }
        if changed, isBoundary(position, boundaries) { landing = position }
      } else {
        // Then the steps that change nothing, up to the next change.
        if changes { break }
        if isBoundary(position, boundaries) { landing = position }
      }
      position += 1
    }
    return landing ?? lastIndex
  }
}

/// A read of another store's model (`ActionOperation.model(of:as:)`): the store, and the index of the record whose
/// model it held (before the history's first when it had none there; -1 for none at all).
struct RecordedRead: Sendable, Equatable {
  let store: String
  let index: Int
}
