// Dispatches N times in one of a few shapes, for `valgrind --tool=callgrind`: instruction counts are repeatable on
// a noisy virtual machine where times are not. Run it twice (N = 10,000 and 30,000) and divide the difference of
// the totals by 20,000 to get the instructions per dispatch, set-up excluded (Benchmarks/README.md).
import DispatchStore
import Foundation

struct Tally: ModelType, Codable {
  var count = 0
}

enum TallyAction: ActionType, Codable {
  case increment
}

final class InPlace: SynchronousReducer<Tally, TallyAction>, @unchecked Sendable {
  let waits: [String]
  init(waits: [String] = []) { self.waits = waits }
  override func waitList(for action: TallyAction) -> [String] { waits }
  override func reduce(_ action: TallyAction, into model: inout Tally) { model.count += 1 }
}

/// An operation that changes the model through its `updateModel`, then finishes.
final class ThroughOperation: Reducer<Tally, TallyAction>, @unchecked Sendable {
  override func operation(
    for action: TallyAction, in store: Store<Tally, TallyAction>
  ) -> ActionOperation<Tally, TallyAction> {
    ActionOperation(action: action, store: store) { operation, _, _ in
      operation.updateModel { $0.count += 1 }
      operation.finish()
    }
  }
}

struct Row: Identifiable, Sendable, Equatable {
  let id: Int
  var title: String
  var done = false
}

struct Rows: ModelType {
  var rows: IdentifiedList<Row>
}

enum RowsAction: ActionType {
  case toggle(Int)
}

/// An `ObservedModel` of a store of `items` rows in an `IdentifiedList`, whose rows were read: each dispatch
/// toggles a row, and the observed model compares the rows before and after (issue 27, point 4).
func observeRows(count: Int, items: Int) {
  let store = Store(
    identifier: "rows", model: Rows(rows: IdentifiedList((0..<items).map { Row(id: $0, title: "Row \($0)") }))
  ) { (action: RowsAction, model) in
    switch action {
    case .toggle(let position): model.rows[position].done.toggle()
    }
  }
  let dispatcher = Dispatcher()
  try! dispatcher.register(store: store)
  let observed = store.observable(synchronously: true)
  _ = observed.rows
  for index in 0..<count { try! dispatcher.dispatchSync(action: RowsAction.toggle(index % items)) }
  let (rounds, rest) = (count / items, count % items)
  let done = (0..<items).filter { (rounds + ($0 < rest ? 1 : 0)) % 2 == 1 }.count
  precondition(store.model.rows.filter(\.done).count == done, "the probe's rows were not all toggled")
  withExtendedLifetime(observed) {}
}

/// A store of `items` rows in an `IdentifiedList`, each dispatch toggling a row by id: `recorded` in memory, while the
/// recorder keeps the previous models (issue 27, point 1); otherwise with no recorder and no observer, in place
/// (point 5: what a list's changes cost a plain dispatch).
func toggleRowsByID(count: Int, items: Int, recorded: Bool) {
  let store = Store(
    identifier: "rows", model: Rows(rows: IdentifiedList((0..<items).map { Row(id: $0, title: "Row \($0)") }))
  ) { (action: RowsAction, model) in
    switch action {
    case .toggle(let id): model.rows[id: id]?.done.toggle()
    }
  }
  let dispatcher = Dispatcher()
  try! dispatcher.register(store: store)
  let recorder = recorded ? RecorderMiddleware(maxNumberOfRecords: 1_000) : nil
  if let recorder { dispatcher.register(middleware: recorder) }
  for index in 0..<count { try! dispatcher.dispatchSync(action: RowsAction.toggle(index % items)) }
  precondition(store.model.rows.count == items, "the probe's rows were lost")
  if let recorder {
    precondition(recorder.records.count == min(count, 1_000), "the probe's recorder kept \(recorder.records.count)")
  }
}

enum OrderAction: ActionType, Codable {
  case insertAtFront(id: Int)
  case moveToFront(Int)
  case remove(Int)
}

/// A store of `items` rows in an `IdentifiedList`, recorded to a file (or in memory): the dispatches in turn insert a row at the
/// front, move one to the front and remove one, as an inbox does (issue 27, point 1, for changes to the order).
func orderRows(count: Int, items: Int) throws {
  let store = Store(
    identifier: "rows", model: CodedRows(rows: IdentifiedList((0..<items).map { CodedRow(id: $0, title: "Row \($0)") }))
  ) { (action: OrderAction, model) in
    switch action {
    case .insertAtFront(let id): model.rows.insert(CodedRow(id: id, title: "Row \(id)"), at: 0)
    case .moveToFront(let position): model.rows.move(fromOffsets: [position], toOffset: 0)
    case .remove(let position): model.rows.remove(at: position)
    }
  }
  let dispatcher = Dispatcher()
  try dispatcher.register(store: store)
  var codecs = SessionCodecs()
  codecs.register(storeIdentifier: "rows", model: CodedRows.self, action: OrderAction.self)
  let file = FileManager.default.temporaryDirectory.appendingPathComponent("probe-order-\(UUID()).jsonl")
  defer { try? FileManager.default.removeItem(at: file) }
  let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
  dispatcher.register(middleware: recorder)
  // With DISPATCHPROBE_IN_MEMORY set, recorded in memory only.
  let inMemory = ProcessInfo.processInfo.environment["DISPATCHPROBE_IN_MEMORY"] != nil
  if !inMemory { try recorder.attach(appendingTo: file, codecs: codecs) }
  for index in 0..<count {
    let position = index * 7_919 % (items - 1)
    let action: OrderAction =
      switch index % 3 {
      case 0: .insertAtFront(id: items + index)
      case 1: .moveToFront(position)
      default: .remove(position)
      }
    try dispatcher.dispatchSync(action: action)
  }
  recorder.flush()
  precondition(recorder.persistenceError == nil && store.model.rows.count == items + (count + 2) / 3 - count / 3)
}

struct CodedRow: Identifiable, Codable, Sendable, Equatable {
  let id: Int
  var title: String
  var done = false
}

struct CodedRows: ModelType, Codable {
  var rows: IdentifiedList<CodedRow>
}

enum CodedRowsAction: ActionType, Codable {
  case toggle(Int)
}

/// COUNT toggles of a store of `items` rows in an `IdentifiedList`, recorded to a file, then the session verified
/// and restored in fresh stores: records per second and the restore's time (issue 27, point 3).
func sessionRows(count: Int, items: Int) throws {
  func makeStore() -> Store<CodedRows, CodedRowsAction> {
    Store(
      identifier: "rows",
      model: CodedRows(rows: IdentifiedList((0..<items).map { CodedRow(id: $0, title: "Row \($0)") }))
    ) { (action: CodedRowsAction, model) in
      switch action {
      case .toggle(let id): model.rows[id: id]?.done.toggle()
      }
    }
  }
  var codecs = SessionCodecs()
  codecs.register(storeIdentifier: "rows", model: CodedRows.self, action: CodedRowsAction.self)
  // With DISPATCHPROBE_SESSION naming a file, the session is recorded there once and read from there after, so that
  // a profiler sees the reading alone; with DISPATCHPROBE_VERIFY_ONLY set as well, it sees only the load and verify.
  let kept = ProcessInfo.processInfo.environment["DISPATCHPROBE_SESSION"].map { URL(fileURLWithPath: $0) }
  let file = kept ?? FileManager.default.temporaryDirectory.appendingPathComponent("probe-rows-\(UUID()).jsonl")
  defer { if kept == nil { try? FileManager.default.removeItem(at: file) } }
  let dispatcher = Dispatcher()
  let live = makeStore()
  try dispatcher.register(store: live)
  let toggles = (0..<count).map { CodedRowsAction.toggle(($0 * 7_919) % items) }
  if kept == nil || !FileManager.default.fileExists(atPath: file.path) {
    let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
    dispatcher.register(middleware: recorder)
    try recorder.attach(appendingTo: file, codecs: codecs)
    for toggle in toggles { try dispatcher.dispatchSync(action: toggle) }
    recorder.flush()
  } else if ProcessInfo.processInfo.environment["DISPATCHPROBE_VERIFY_ONLY"] == nil {
    for toggle in toggles { try dispatcher.dispatchSync(action: toggle) }
  }
  let loading = ContinuousClock.now
  let session = try Session.load(from: file, codecs: codecs)
  let loaded = ContinuousClock.now
  // With DISPATCHPROBE_RESTORE_ONLY set as well, only the load and a restore of the end, each timed.
  if kept != nil, ProcessInfo.processInfo.environment["DISPATCHPROBE_RESTORE_ONLY"] != nil {
    let restoring = Dispatcher()
    let restored = makeStore()
    try restoring.register(store: restored)
    let restoreStarted = ContinuousClock.now
    try session.restore(into: restoring)
    print("load: \(loaded - loading); restore: \(ContinuousClock.now - restoreStarted)")
    return
  }
  let verifying = Dispatcher()
  try verifying.register(store: makeStore())
  // The monotonic clock's seconds, for `perf report --time` of a `perf record -k CLOCK_MONOTONIC`.
  func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
  }
  let verifyStart = monotonicSeconds()
  let verifyStarted = ContinuousClock.now
  try session.verify(against: verifying)
  let verified = ContinuousClock.now
  let verifyEnd = monotonicSeconds()
  let seconds = (verified - verifyStarted) / .seconds(1)
  if ProcessInfo.processInfo.environment["DISPATCHPROBE_VERIFY_ONLY"] != nil {
    print("verify: \(Int(Double(session.recordCount) / seconds)) records/s")
    print("verify from \(verifyStart) to \(verifyEnd)")
    // What verify cannot beat while it re-runs every record (proposal 0026): the same dispatches in a fresh store on
    // one thread, nothing compared, with each model let go (the reducer changes the rows in place), then with each
    // model kept until the next dispatch, as a comparison of it keeps it (the reducer copies the path it changes).
    if ProcessInfo.processInfo.environment["DISPATCHPROBE_CEILINGS"] != nil {
      for keeping in [false, true] {
        let rerunning = Dispatcher()
        let store = makeStore()
        try rerunning.register(store: store)
        var kept = store.model
        let started = ContinuousClock.now
        for toggle in toggles {
          try rerunning.dispatchSync(action: toggle)
          if keeping { kept = store.model }
        }
        let rate = Double(toggles.count) / ((ContinuousClock.now - started) / .seconds(1))
        precondition(kept.rows.count == items)
        print("re-run alone, \(keeping ? "each model kept" : "in place"): \(Int(rate)) records/s")
      }
    }
    return
  }
  let restoring = Dispatcher()
  let restored = makeStore()
  try restoring.register(store: restored)
  try session.restore(into: restoring)
  let end = ContinuousClock.now
  precondition(restored.model.rows == live.model.rows, "the restored rows differ from the recorded ones")
  print(
    "load: \(loaded - loading); verify: \(Int(Double(session.recordCount) / seconds)) records/s; restore: \(end - verified)"
  )
}

/// Reads every row of a list of `items` rows `count` times, as a derived count or a view's `ForEach` does, from an
/// `IdentifiedList` and, for the baseline, from an `Array` of the same rows: nanoseconds per element of each.
func iterateRows(count: Int, items: Int) {
  let array = (0..<items).map { CodedRow(id: $0, title: "Row \($0)", done: $0 % 3 == 0) }
  let list = IdentifiedList(array)
  func measure(_ body: () -> Int) -> (nanoseconds: Double, total: Int) {
    let start = ContinuousClock.now
    var total = 0
    for _ in 0..<count { total &+= body() }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (seconds * 1e9 / Double(count * items), total)
  }
  let fromList = measure { list.reduce(0) { $0 + ($1.done ? 1 : 0) } }
  let fromArray = measure { array.reduce(0) { $0 + ($1.done ? 1 : 0) } }
  let byIndex = measure { list.indices.reduce(0) { $0 + (list[$1].done ? 1 : 0) } }
  precondition(fromList.total == fromArray.total && byIndex.total == fromArray.total)
  print(
    "per element: IdentifiedList \(fromList.nanoseconds) ns, by index \(byIndex.nanoseconds) ns, "
      + "Array \(fromArray.nanoseconds) ns")
}

/// An operation that reads another store's model `reads` times (`model(of:as:)`), then counts.
final class Reading: Reducer<Tally, TallyAction>, @unchecked Sendable {
  let reads: Int
  init(reads: Int) { self.reads = reads }
  override func operation(
    for action: TallyAction, in store: Store<Tally, TallyAction>
  ) -> ActionOperation<Tally, TallyAction> {
    ActionOperation(action: action, store: store) { [reads] operation, _, _ in
      var seen = 0
      for _ in 0..<reads { seen += operation.model(of: "source", as: Tally.self)?.count ?? 1 }
      operation.updateModel { $0.count += 1 + seen }
      operation.finish()
    }
  }
}

/// COUNT `.sync` dispatches to an operation store that reads another store `reads` times each.
///
/// With `recorded`, a recorder in memory (bound 1,000) notes each read and keeps its line (proposal 0022). Prints the
/// time per dispatch.
func readShape(count: Int, reads: Int, recorded: Bool) throws {
  let dispatcher = Dispatcher()
  try dispatcher.register(store: Store(identifier: "source", model: Tally(), reducer: InPlace()))
  let reader = Store(identifier: "reader", model: Tally(), reducer: Reading(reads: reads))
  try dispatcher.register(store: reader)
  let recorder = recorded ? RecorderMiddleware(maxNumberOfRecords: 1_000) : nil
  if let recorder { dispatcher.register(middleware: recorder) }
  let start = ContinuousClock.now
  for _ in 0..<count { try dispatcher.dispatchSync(action: TallyAction.increment, to: "reader") }
  print("reads\(reads)\(recorded ? "recorder" : ""): \((ContinuousClock.now - start) / count) per dispatch")
  precondition(reader.model.count == count, "the probe's reader counted \(reader.model.count)")
  withExtendedLifetime(recorder) {}
}

/// An operation that fetches one effect (`ActionOperation.effect(_:_:)`), then counts.
final class Fetching: Reducer<Tally, TallyAction>, @unchecked Sendable {
  override func operation(
    for action: TallyAction, in store: Store<Tally, TallyAction>
  ) -> ActionOperation<Tally, TallyAction> {
    ActionOperation(action: action, store: store) { operation, _, _ in
      let fetched = (try? operation.effect("count") { 1 }) ?? 0
      operation.updateModel { $0.count += fetched }
      operation.finish()
    }
  }
}

/// COUNT `.sync` dispatches to an operation store that fetches an effect each, recorded.
///
/// In memory (bound 1,000) or to a file (`toFile`, flushed at the end): what an effect adds to a recorded dispatch
/// (its line names its transaction, proposal 0027). Prints the time per dispatch.
func effectShape(count: Int, toFile: Bool) throws {
  let dispatcher = Dispatcher()
  let store = Store(identifier: "fetcher", model: Tally(), reducer: Fetching())
  try dispatcher.register(store: store)
  let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
  dispatcher.register(middleware: recorder)
  let file = FileManager.default.temporaryDirectory.appendingPathComponent("probe-effects-\(UUID()).jsonl")
  defer { try? FileManager.default.removeItem(at: file) }
  if toFile {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "fetcher", model: Tally.self, action: TallyAction.self)
    try recorder.attach(appendingTo: file, codecs: codecs)
  }
  let start = ContinuousClock.now
  for _ in 0..<count { try dispatcher.dispatchSync(action: TallyAction.increment) }
  recorder.flush()
  print("effects\(toFile ? "file" : ""): \((ContinuousClock.now - start) / count) per dispatch")
  precondition(store.model.count == count, "the probe's fetcher counted \(store.model.count)")
}

let shapes = [
  "reads0", "reads10", "reads0recorder", "reads10recorder",
  "iteraterows10", "iteraterows10000", "iteraterows100000",
  "inplace", "op", "chain", "tokensinplace", "tokensop", "handle", "recorder",
  "recorderfile", "oprecorder", "oprecorderfile", "verify", "restore",
  "handle10", "allornothing", "allornothing10", "contended", "contendedallornothing",
  "observedrows10", "observedrows10000", "recordedrows10", "recordedrows10000", "sessionrows10", "sessionrows10000",
  "orderrows10", "orderrows10000", "effects", "effectsfile", "handleop", "plainrows10000",
]
let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[1]),
  shapes.contains(arguments[2])
else {
  print("usage: DispatchProbe COUNT \(shapes.joined(separator: "|"))")
  exit(2)
}
let shape = arguments[2]
if shape.hasPrefix("plainrows") {
  toggleRowsByID(count: count, items: Int(shape.dropFirst("plainrows".count))!, recorded: false)
  exit(0)
}
if shape.hasPrefix("observedrows") {
  observeRows(count: count, items: Int(shape.dropFirst("observedrows".count))!)
  exit(0)
}
if shape.hasPrefix("effects") {
  try effectShape(count: count, toFile: shape == "effectsfile")
  exit(0)
}
if shape.hasPrefix("reads") {
  let reads = Int(shape.dropFirst("reads".count).prefix { $0.isNumber })!
  try readShape(count: count, reads: reads, recorded: shape.hasSuffix("recorder"))
  exit(0)
}
if shape.hasPrefix("iteraterows") {
  iterateRows(count: count, items: Int(shape.dropFirst("iteraterows".count))!)
  exit(0)
}
if shape.hasPrefix("sessionrows") {
  try sessionRows(count: count, items: Int(shape.dropFirst("sessionrows".count))!)
  exit(0)
}
if shape.hasPrefix("orderrows") {
  try orderRows(count: count, items: Int(shape.dropFirst("orderrows".count))!)
  exit(0)
}
if shape.hasPrefix("recordedrows") {
  toggleRowsByID(count: count, items: Int(shape.dropFirst("recordedrows".count))!, recorded: true)
  exit(0)
}
let dispatcher = Dispatcher()
let inPlace =
  shape == "inplace" || shape == "chain" || shape == "tokensinplace"
  || (shape.hasPrefix("handle") && shape != "handleop")
  || shape.hasPrefix("recorder") || shape.hasPrefix("allornothing") || shape.hasPrefix("contended")
let reducer: Reducer<Tally, TallyAction> =
  inPlace ? InPlace() : ThroughOperation()
let store = Store(identifier: "s0", model: Tally(), reducer: reducer)
try dispatcher.register(store: store)
if shape == "chain" {
  // Nine more stores, each waiting for the one before: a waitFor chain of 10.
  for index in 1..<10 {
    try dispatcher.register(
      store: Store(identifier: "s\(index)", model: Tally(), reducer: InPlace(waits: ["s\(index - 1)"])))
  }
}
// Ten stores (or four, contended) that every dispatch reaches, none waiting: a held handle per dispatch, plain or
// all or nothing.
let storeCount = shape.hasSuffix("10") ? 10 : shape.hasPrefix("contended") ? 4 : 1
for index in 1..<storeCount {
  try dispatcher.register(store: Store(identifier: "s\(index)", model: Tally(), reducer: InPlace()))
}
let allOrNothing = DispatchOptions(allOrNothing: shape.contains("allornothing"))
var tokens: [ObservationToken] = []
if shape.hasPrefix("tokens") {
  for _ in 0..<10 {
    tokens.append(store.observe(synchronously: true) { change in precondition(change.model.count > 0) })
  }
}
// Recording in memory (a bounded history) or to a file as well (proposal 0010).
let recorder =
  shape.contains("recorder") || shape == "verify" || shape == "restore"
  ? RecorderMiddleware(maxNumberOfRecords: 1_000) : nil
if let recorder { dispatcher.register(middleware: recorder) }
let sessionFile = FileManager.default.temporaryDirectory.appendingPathComponent("probe-\(UUID()).jsonl")
let codecs = {
  var codecs = SessionCodecs()
  codecs.register(storeIdentifier: "s0", model: Tally.self, action: TallyAction.self)
  return codecs
}()
if shape.hasSuffix("recorderfile"), let recorder {
  try recorder.attach(appendingTo: sessionFile, codecs: codecs)
}
defer { try? FileManager.default.removeItem(at: sessionFile) }
/// Records COUNT in-place actions to the session file (no snapshots) and returns a fresh dispatcher with the store,
/// for the session shapes.
func recordSessionAndMakeFreshDispatcher(_ recorder: RecorderMiddleware) throws -> Dispatcher {
  try recorder.attach(appendingTo: sessionFile, codecs: codecs)
  for _ in 0..<count { try dispatcher.dispatchSync(action: TallyAction.increment) }
  recorder.flush()
  let fresh = Dispatcher()
  try fresh.register(store: Store(identifier: "s0", model: Tally(), reducer: InPlace()))
  return fresh
}
if shape == "verify", let recorder {
  // Time decoding the session and re-running it.
  let fresh = try recordSessionAndMakeFreshDispatcher(recorder)
  let session = try Session.load(from: sessionFile, codecs: codecs)
  let start = ContinuousClock.now
  try session.verify(against: fresh)
  let verified = ContinuousClock.now
  print("verify: \((verified - start) / session.recordCount) per record")
  exit(0)
}
if shape == "restore", let recorder {
  // Time loading the session and restoring its end.
  let fresh = try recordSessionAndMakeFreshDispatcher(recorder)
  let start = ContinuousClock.now
  for _ in 0..<10 { try Session.load(from: sessionFile, codecs: codecs).restore(into: fresh) }
  print("load+restore: \((ContinuousClock.now - start) / 10)")
  exit(0)
}
if shape.hasPrefix("contended") {
  // Eight threads (more than the machine's cores), COUNT / 8 `.sync` dispatches each, released together: the time
  // for the whole batch.
  let threads = 8
  let ready = DispatchSemaphore(value: 0)
  let go = DispatchSemaphore(value: 0)
  let done = DispatchGroup()
  for _ in 0..<threads {
    done.enter()
    Thread {
      ready.signal()
      go.wait()
      for _ in 0..<(count / threads) {
        _ = dispatcher.start(action: TallyAction.increment, mode: .sync, options: allOrNothing)
      }
      done.leave()
    }.start()
  }
  for _ in 0..<threads { ready.wait() }
  let start = ContinuousClock.now
  for _ in 0..<threads { go.signal() }
  done.wait()
  print("\(shape): \(ContinuousClock.now - start) for \(count / threads * threads) dispatches on \(threads) threads")
  precondition(store.model.count == count / threads * threads, "the probe's store counted \(store.model.count)")
  exit(0)
}
let started = ContinuousClock.now
if shape == "handle10" || shape.hasPrefix("allornothing") {
  for _ in 0..<count { _ = dispatcher.start(action: TallyAction.increment, mode: .sync, options: allOrNothing) }
} else if shape == "handle" || shape == "handleop" {
  // A held handle per action (proposal 0009), through an operation with `handleop`. Two loops, so that the others
  // compare no string per dispatch.
  for _ in 0..<count { _ = dispatcher.start(action: TallyAction.increment, mode: .sync) }
} else {
  for _ in 0..<count { try dispatcher.dispatchSync(action: TallyAction.increment) }
}
// The loop's time per dispatch, for a quick look (benchmarks are the figures): the dispatching thread's cost, before
// the flush.
let elapsed = ContinuousClock.now - started
print("dispatch: \(elapsed / count) per dispatch")
precondition(store.model.count == count, "the probe's store counted \(store.model.count), expected \(count)")
recorder?.flush()
withExtendedLifetime(tokens) {}
