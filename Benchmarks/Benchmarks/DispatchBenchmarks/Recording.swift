// Recording, restoring and verifying sessions (proposal 0010). Compare each recording case with the same dispatch
// without a recorder (`Dispatcher.dispatch(sync,observers:0)`, `...(sync,synchronousReducer,observers:0)`), run
// in the same invocation.
import Benchmark
import Dispatch
import DispatchStore
import Foundation
import Synchronization

func tallyCodecs(stores: Int = 1) -> SessionCodecs {
  var codecs = SessionCodecs()
  for index in 0..<stores {
    codecs.register(storeIdentifier: "tally-\(index)", model: Tally.self, action: TallyAction.self)
  }
  return codecs
}

/// A new session file's path in the temporary directory; the file is removed when the process exits (fixtures live
/// as long as the process, and a session at scale is tens of megabytes).
func temporarySession(_ name: String) -> URL {
  let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID()).jsonl")
  _ = removedAtExit
  temporarySessions.withLock { $0.append(url) }
  return url
}

private let temporarySessions = Mutex<[URL]>([])
private let removedAtExit: Void = {
  atexit {
    for url in temporarySessions.withLock({ $0 }) { try? FileManager.default.removeItem(at: url) }
  }
}()

/// A session of `records` in-place increments, with a snapshot every `snapshotEvery` records (none if `nil`).
func recordedSession(records: Int, snapshotEvery: Int?) -> URL {
  let url = temporarySession("restore-bench")
  let fixture = Fixture(synchronous: true)
  let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
  fixture.dispatcher.register(middleware: recorder)
  try! recorder.attach(appendingTo: url, codecs: tallyCodecs())
  for index in 1...records {
    try! fixture.dispatcher.dispatchSync(action: TallyAction.increment)
    if let snapshotEvery, index % snapshotEvery == 0 { recorder.snapshot() }
  }
  recorder.flush()
  precondition(recorder.persistenceError == nil)
  return url
}

func registerRecording() {
  for synchronous in [false, true] {
    let kind = synchronous ? "synchronousReducer," : ""
    Benchmark("Dispatcher.dispatch(sync,\(kind)recorder:memory)") { benchmark in
      let fixture = Fixture(synchronous: synchronous)
      fixture.dispatcher.register(middleware: RecorderMiddleware(maxNumberOfRecords: 1_000))
      benchmark.startMeasurement()
      for _ in benchmark.scaledIterations {
        try? fixture.dispatcher.dispatchSync(action: TallyAction.increment)
      }
      benchmark.stopMeasurement()
      fixture.verify(benchmark.scaledIterations.count)
    }

    // The dispatching thread's cost: encoding and writing happen on the recorder's writer thread. The flush at the
    // end is outside the measurement, so that the figure is what the app's thread pays.
    Benchmark("Dispatcher.dispatch(sync,\(kind)recorder:file)") { benchmark in
      let fixture = Fixture(synchronous: synchronous)
      let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000)
      fixture.dispatcher.register(middleware: recorder)
      let file = temporarySession("dispatch-bench")
      defer { try? FileManager.default.removeItem(at: file) }
      try! recorder.attach(appendingTo: file, codecs: tallyCodecs())
      benchmark.startMeasurement()
      for _ in benchmark.scaledIterations {
        try? fixture.dispatcher.dispatchSync(action: TallyAction.increment)
      }
      benchmark.stopMeasurement()
      recorder.flush()
      fixture.verify(benchmark.scaledIterations.count)
      precondition(recorder.persistenceError == nil)
    }

    Benchmark("Session.verify(\(kind)actions:1000)") { benchmark in
      // Record 1,000 actions to a file, load it, then measure re-running it in a fresh dispatcher.
      let file = temporarySession("verify-bench")
      defer { try? FileManager.default.removeItem(at: file) }
      let recorded = Fixture(synchronous: synchronous)
      let recorder = RecorderMiddleware()
      recorded.dispatcher.register(middleware: recorder)
      try! recorder.attach(appendingTo: file, codecs: tallyCodecs())
      for _ in benchmark.scaledIterations {
        try? recorded.dispatcher.dispatchSync(action: TallyAction.increment)
      }
      recorder.flush()
      let session = try! Session.load(from: file, codecs: tallyCodecs())
      let fresh = Fixture(synchronous: synchronous)
      benchmark.startMeasurement()
      try! session.verify(against: fresh.dispatcher)
      benchmark.stopMeasurement()
      fresh.verify(benchmark.scaledIterations.count)
    }
  }

  // Loading a session file and restoring the models at its end: what an app does at launch. Each file is recorded
  // once, before the first iteration.
  let restoreCases: [(records: Int, snapshotEvery: Int?)] = [(10_000, nil), (10_000, 1_000), (100_000, 1_000)]
  for (records, snapshotEvery) in restoreCases {
    let name = "Session.load+restore(records:\(records),snapshots:\(snapshotEvery.map { "every\($0)" } ?? "none"))"
    let file = LazyFile { recordedSession(records: records, snapshotEvery: snapshotEvery) }
    Benchmark(
      name,
      configuration: .init(scalingFactor: .one, maxDuration: .seconds(3), maxIterations: 20)
    ) { benchmark in
      let url = file.url
      let fresh = Fixture(synchronous: true)
      benchmark.startMeasurement()
      let session = try! Session.load(from: url, codecs: tallyCodecs())
      try! session.restore(into: fresh.dispatcher)
      benchmark.stopMeasurement()
      fresh.verify(records)
    }
  }
}

/// A file made on first use.
final class LazyFile: @unchecked Sendable {
  // `@unchecked Sendable`: benchmarks run one at a time, on one thread.
  private let make: () -> URL
  private var made: URL?

  init(_ make: @escaping () -> URL) {
    self.make = make
  }

  var url: URL {
    if let made { return made }
    let url = make()
    made = url
    return url
  }

  deinit {
    if let made { try? FileManager.default.removeItem(at: made) }
  }
}
