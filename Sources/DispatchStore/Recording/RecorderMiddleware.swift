import Foundation

/// Middleware that records every successful transaction, moves through the history (time travel), and saves
/// the session to a JSON Lines file that ``Session`` loads and replays.
///
/// ```swift
/// let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
/// dispatcher.register(middleware: recorder)
/// // ... dispatch ...
/// try recorder.previousRecord()  // the stores show the state before the last transaction
/// ```
///
/// A record keeps the store's model itself (models are value types), so recording in memory costs a copy;
/// encoding happens only for a file. Failed transactions are not recorded.
///
/// > Important: Safe to use from any thread. The model recorded is the store's model when the transaction
/// > finished: with `.sync` and `.serial` dispatch that is exactly the transaction's result; with concurrent
/// > dispatches to the same store another transaction may already have changed it.
public final class RecorderMiddleware: Middleware {
  /// The most records kept in memory; when a new record would exceed it, the oldest goes.
  public let maxNumberOfRecords: Int

  private let state = LockedValue(RecorderState())

  /// Creates a recorder that keeps at most `maxNumberOfRecords` records in memory.
  /// - Parameter maxNumberOfRecords: The bound on the history; at least 1.
  public init(maxNumberOfRecords: Int = 10_000) {
    precondition(maxNumberOfRecords > 0, "DispatchStore: maxNumberOfRecords must be at least 1")
    self.maxNumberOfRecords = maxNumberOfRecords
  }

  // MARK: - Reading the history

  /// The records kept in memory, oldest first.
  public var records: [Record] {
    state.withLock { $0.history.all }
  }

  /// The index of the current record.
  ///
  /// The latest record's, unless you moved back; one less than the first record's index when you moved before it.
  public var cursor: Int {
    state.withLock { $0.cursor }
  }

  /// The current record, or `nil` before the first one.
  public var currentRecord: Record? {
    state.withLock { $0.history.record(at: $0.cursor) }
  }

  /// The first failure writing the session file, if any.
  ///
  /// After one the recorder stops writing, so the file stays a valid prefix of the session. Recording in memory
  /// continues.
  public var persistenceError: SessionError? {
    let writer = state.withLock { $0.writer }
    return writer?.failure
  }

  // MARK: - Time travel

  /// Moves to the previous record and restores every store it changed to the models of that point.
  /// - Returns: The record now current, or `nil` if the cursor is now before the first record.
  /// - Throws: ``RecorderError`` if there is no earlier position, or a store to restore is gone.
  @discardableResult
  public func previousRecord() throws(RecorderError) -> Record? {
    try jump(to: cursor - 1)
  }

  /// Moves to the next record and restores the stores it changed.
  /// - Returns: The record now current.
  /// - Throws: ``RecorderError`` if there is no later record, or a store to restore is gone.
  @discardableResult
  public func nextRecord() throws(RecorderError) -> Record? {
    try jump(to: cursor + 1)
  }

  /// Moves to the record at `index` and restores each store's model to what it was right after that record.
  ///
  /// No reducer runs; observers hear each restored model with the action of the record it comes from (for a
  /// store restored to before its first record, the action being undone). Dispatching afterwards drops the
  /// records after the cursor.
  /// - Parameter index: A record's ``Record/index``, or one less than the first record's to go before it.
  /// - Returns: The record now current, or `nil` before the first record.
  /// - Throws: ``RecorderError`` if `index` is outside the history or a store to restore is gone; nothing is
  ///   changed then.
  @discardableResult
  public func jump(to index: Int) throws(RecorderError) -> Record? {
    let plan = try state.withLock { state throws(RecorderError) in try state.restorePlan(to: index) }
    // Resolve the weak references outside the lock: releasing a store could run its reducer's deinit.
    var restores: [(store: any ModelRestoring, step: RecorderState.RestoreStep)] = []
    for step in plan.steps {
      guard let store = step.store.value else {
        throw .storeUnavailable(storeIdentifier: step.storeIdentifier)
      }
      restores.append((store, step))
    }
    let (current, writer, sequence) = state.withLock { state in
      state.cursor = index
      return (state.history.record(at: index), state.writer, state.takeSequence())
    }
    for (store, step) in restores where !store.restore(model: step.model, action: step.action) {
      throw .storeUnavailable(storeIdentifier: step.storeIdentifier)
    }
    if let writer, let codecs = plan.codecs {
      writer.write(Self.encode(.cursor(index), codecs: codecs), sequence: sequence)
    }
    return current
  }

  // MARK: - Continuing a session

  /// Replays `session` into `dispatcher`, checking every recorded model, then takes over its history: the
  /// records keep their original ids and timestamps, and the cursor is where the session left it.
  ///
  /// While this runs the recorder does not record, so replayed transactions are not recorded twice. Register the
  /// recorder with `dispatcher` to go on recording afterwards, and ``attach(appendingTo:codecs:)`` to go on
  /// appending to the file.
  /// - Parameters:
  ///   - session: A loaded session.
  ///   - dispatcher: A fresh dispatcher with the session's stores registered at their initial models.
  ///   - mode: How each action is dispatched; `.sync` by default.
  /// - Throws: ``ReplayError`` at the first record that fails or diverges; the history is then left unchanged.
  public func replay(_ session: Session, into dispatcher: Dispatcher, mode: Dispatcher.Mode = .sync) throws(ReplayError)
  {
    var baselines: [String: any ModelType] = [:]
    var stores: [String: WeakStore] = [:]
    for identifier in Set(session.records.map(\.storeIdentifier)) {
      let store = dispatcher.store(with: identifier)
      guard let store, let restorable = store as? any ModelRestoring else {
        let first = session.records.first { $0.storeIdentifier == identifier }
        throw .unknownStore(index: first?.index ?? 0, storeIdentifier: identifier)
      }
      baselines[identifier] = store.anyModel
      stores[identifier] = WeakStore(restorable)
    }
    state.withLock { $0.isReplaying = true }
    defer { state.withLock { $0.isReplaying = false } }
    try session.replay(into: dispatcher, mode: mode)
    var history = RecordHistory()
    var adopted = baselines
    for record in session.records {
      history.append(record)
      while history.count > maxNumberOfRecords {
        var unused: [any Sendable] = []
        let dropped = history.dropOldest(released: &unused)
        adopted[dropped.storeIdentifier] = dropped.model
      }
    }
    let replaced = state.withLock { state in
      swap(&state.history, &history)
      let previousBaselines = state.baselines
      state.baselines = adopted
      state.stores.merge(stores) { _, new in new }
      state.cursor = state.history.lastIndex
      return (history, previousBaselines)
    }
    withExtendedLifetime(replaced) {}  // The previous history is released here, after the lock.
    // A cursor older than the bound keeps can only go as far back as the oldest kept record allows.
    let oldest = state.withLock { $0.history.firstIndex - 1 }
    guard session.cursor != cursor else { return }
    do {
      try jump(to: max(session.cursor, oldest))
    } catch {
      throw .unknownStore(index: session.cursor, storeIdentifier: "\(error)")
    }
  }

  // MARK: - Files

  /// From now on, appends every record and cursor move to the session file at `url`.
  ///
  /// A new or empty file gets a header listing the stores in `codecs`. An existing file is validated first; a
  /// corrupt one is left untouched, and an incomplete last line (from a crash) is dropped. To continue a
  /// session, load and replay it into the dispatcher before attaching.
  /// - Parameters:
  ///   - url: The session file.
  ///   - codecs: How each store's actions and models encode.
  /// - Throws: ``SessionError`` if the file cannot be opened or is not a valid session for `codecs`.
  public func attach(appendingTo url: URL, codecs: SessionCodecs) throws(SessionError) {
    let writer = try SessionWriter(appendingTo: url, codecs: codecs)
    state.withLock { state in
      state.writer = writer
      state.codecs = codecs
      state.nextSequence = 0
    }
  }

  /// Writes the whole history to a new session file at `url`, replacing it.
  /// - Parameters:
  ///   - url: Where to write.
  ///   - codecs: How each store's actions and models encode.
  /// - Throws: ``SessionError/historyIncomplete(droppedRecords:)`` if older records were dropped (the file
  ///   could not be replayed exactly), or an encoding or I/O error.
  public func save(to url: URL, codecs: SessionCodecs) throws(SessionError) {
    let (records, cursor, dropped) = state.withLock { state in
      (state.history.all, state.cursor, state.history.firstIndex)
    }
    guard dropped == 0 else { throw .historyIncomplete(droppedRecords: dropped) }
    var data: Data
    do {
      data = try SessionFormat.encodeHeader(SessionFormat.header(for: codecs))
    } catch {
      throw .encodingFailed(storeIdentifier: "", reason: "\(error)")
    }
    for record in records { data.append(try Self.encode(.record(record), codecs: codecs).get()) }
    if cursor != records.count - 1 { data.append(try Self.encode(.cursor(cursor), codecs: codecs).get()) }
    do {
      try data.write(to: url, options: .atomic)
    } catch {
      throw .io(path: url.path, reason: error.localizedDescription)
    }
  }

  // MARK: - Middleware

  /// Notes the model a store starts from, the first time the recorder sees the store.
  public func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    let known = state.withLock { $0.isReplaying || $0.baselines[transaction.storeIdentifier] != nil }
    guard !known else { return }
    let model = store.anyModel
    state.withLock { state in
      if state.baselines[transaction.storeIdentifier] == nil {
        state.baselines[transaction.storeIdentifier] = model
      }
    }
  }

  /// `false`, as by default: records carry the transaction's start time, not its duration, so the dispatcher
  /// reads no clock for them.
  public var needsDuration: Bool { false }

  /// Records a successful transaction, dropping any records after the cursor and the oldest beyond the bound.
  public func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    guard transaction.succeeded else { return }
    let model = store.anyModel
    let weakStore = WeakStore(store as? any ModelRestoring)
    var released: [any Sendable] = []
    let appended = state.withLock { state -> (Record, SessionWriter?, SessionCodecs?, Int)? in
      guard !state.isReplaying else { return nil }
      let record = state.append(
        transaction: transaction, action: action, model: model, store: weakStore, bound: maxNumberOfRecords,
        released: &released)
      return (record, state.writer, state.codecs, state.takeSequence())
    }
    // Dropped records are released here, after the lock: a model may hold objects whose deinit is app code.
    withExtendedLifetime(released) {}
    guard let (record, writer, codecs, sequence) = appended else { return }
    if let writer, let codecs {
      writer.write(Self.encode(.record(record), codecs: codecs), sequence: sequence)
    }
  }

  private static func encode(_ line: SessionFormat.Line, codecs: SessionCodecs) -> Result<Data, SessionError> {
    do {
      return .success(try SessionFormat.encode(line, codecs: codecs))
    } catch let error as SessionError {
      return .failure(error)
    } catch {
      let store: String
      if case .record(let record) = line { store = record.storeIdentifier } else { store = "" }
      return .failure(.encodingFailed(storeIdentifier: store, reason: "\(error)"))
    }
  }
}

/// A store held weakly, so that recording does not keep stores alive.
///
/// `@unchecked Sendable`: the weak reference is the only stored property; the runtime reads and clears it
/// atomically, and a store is `Sendable`.
final class WeakStore: @unchecked Sendable {
  weak var value: (any ModelRestoring)?

  init(_ value: (any ModelRestoring)?) {
    self.value = value
  }
}

/// The recorder's state, behind its lock.
struct RecorderState {
  var history = RecordHistory()
  var cursor = -1
  /// Each store's model before its oldest retained record.
  var baselines: [String: any ModelType] = [:]
  var stores: [String: WeakStore] = [:]
  var writer: SessionWriter?
  var codecs: SessionCodecs?
  /// The writer's sequence number for the next line.
  var nextSequence = 0
  /// A session is being replayed: its transactions are not recorded.
  var isReplaying = false

  mutating func takeSequence() -> Int {
    defer { nextSequence += 1 }
    return nextSequence
  }

  /// Appends a record; what it drops goes to `released`, for the caller to release after the lock.
  mutating func append(
    transaction: Transaction, action: any ActionType, model: any ModelType, store: WeakStore, bound: Int,
    released: inout [any Sendable]
  ) -> Record {
    if cursor < history.lastIndex { released.append(history.removeAll(from: cursor + 1)) }
    let record = Record(
      index: history.nextIndex, transactionID: transaction.id, timestamp: Date(),
      storeIdentifier: transaction.storeIdentifier, action: action, model: model)
    history.append(record)
    while history.count > bound {
      let dropped = history.dropOldest(released: &released)
      if let replaced = baselines.updateValue(dropped.model, forKey: dropped.storeIdentifier) {
        released.append(replaced)
      }
      released.append(dropped)
    }
    cursor = record.index
    if stores[transaction.storeIdentifier]?.value == nil { stores[transaction.storeIdentifier] = store }
    return record
  }

  struct RestoreStep {
    let storeIdentifier: String
    let store: WeakStore
    let model: any ModelType
    let action: any ActionType
  }

  struct RestorePlan {
    var steps: [RestoreStep] = []
    var codecs: SessionCodecs?
  }

  /// What moving the cursor to `target` restores; changes nothing.
  func restorePlan(to target: Int) throws(RecorderError) -> RestorePlan {
    let valid = (history.firstIndex - 1)...max(history.firstIndex - 1, history.lastIndex)
    guard valid.contains(target) else { throw .indexOutOfRange(target, valid: valid) }
    var plan = RestorePlan(codecs: writer == nil ? nil : codecs)
    guard target != cursor else { return plan }
    let low = min(cursor, target)
    let high = max(cursor, target)
    var seen: Set<String> = []
    for index in (low + 1)...high {
      let changed = history.record(at: index)!
      guard seen.insert(changed.storeIdentifier).inserted else { continue }
      guard let store = stores[changed.storeIdentifier] else {
        throw .storeUnavailable(storeIdentifier: changed.storeIdentifier)
      }
      if let latest = history.latest(of: changed.storeIdentifier, atOrBefore: target) {
        plan.steps.append(
          RestoreStep(
            storeIdentifier: changed.storeIdentifier, store: store, model: latest.model, action: latest.action))
      } else if let baseline = baselines[changed.storeIdentifier] {
        plan.steps.append(
          RestoreStep(storeIdentifier: changed.storeIdentifier, store: store, model: baseline, action: changed.action))
      } else {
        throw .storeUnavailable(storeIdentifier: changed.storeIdentifier)
      }
    }
    return plan
  }
}

/// The retained records, addressed by their absolute index; dropping the oldest is amortised O(1).
struct RecordHistory {
  private var storage: [Record] = []
  private var head = 0
  /// The index the next record gets.
  private(set) var nextIndex = 0

  var count: Int { storage.count - head }
  var firstIndex: Int { nextIndex - count }
  var lastIndex: Int { nextIndex - 1 }
  var all: [Record] { Array(storage[head...]) }

  func record(at index: Int) -> Record? {
    guard index >= firstIndex, index <= lastIndex else { return nil }
    return storage[head + index - firstIndex]
  }

  func latest(of storeIdentifier: String, atOrBefore index: Int) -> Record? {
    guard index >= firstIndex else { return nil }
    var position = head + min(index, lastIndex) - firstIndex
    while position >= head {
      if storage[position].storeIdentifier == storeIdentifier { return storage[position] }
      position -= 1
    }
    return nil
  }

  mutating func append(_ record: Record) {
    storage.append(record)
    nextIndex += 1
  }

  /// Drops and returns the oldest record; records freed by compacting the storage go to `released`.
  mutating func dropOldest(released: inout [any Sendable]) -> Record {
    let dropped = storage[head]
    head += 1
    if head > 64 && head * 2 > storage.count {
      released.append(Array(storage[..<head]))
      storage.removeFirst(head)
      head = 0
    }
    return dropped
  }

  /// Removes the records from `index` on and returns them; the next record gets `index`.
  mutating func removeAll(from index: Int) -> [Record] {
    guard index <= lastIndex else { return [] }
    let first = firstIndex
    let kept = max(index, first)
    let removed = Array(storage[(head + kept - first)...])
    storage.removeSubrange((head + kept - first)...)
    nextIndex = kept
    return removed
  }
}
