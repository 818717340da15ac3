// Every dispatch path of DispatchStore, next to the toolchain mechanisms it is judged against.
//
// Each benchmark iteration builds its fixture before `startMeasurement()`, then runs `scaledIterations` actions:
// figures marked `*` by the tool are per action. Run: swift package --package-path Benchmarks benchmark
import Benchmark
import Dispatch
import DispatchStore
import Foundation
import Synchronization

/// Whether CI's malloc guard runs the cases (`DISPATCHSTORE_MALLOC_GUARD=1`), which needs only their counts: a few
/// iterations give them.
let isMallocGuard = ProcessInfo.processInfo.environment["DISPATCHSTORE_MALLOC_GUARD"] != nil

/// How long a case runs at most: 2 seconds, or a quarter of one under CI's malloc guard (its cases with the default
/// configuration allocate the same on every iteration).
let caseDuration: Duration = isMallocGuard ? .milliseconds(250) : .seconds(2)

/// The configuration of a case that allocates nothing per action, which CI's malloc guard checks.
///
/// The guard's slack is relative, a percentage of the threshold: a threshold of zero took none, and the check passed
/// whatever the case allocated (one such case allocated two mallocs per action, unnoticed). These cases allow no
/// malloc in absolute terms too.
var allocatesNothing: Benchmark.Configuration {
  .init(thresholds: [.mallocCountTotal: BenchmarkThresholds(relative: [.p90: 1.0], absolute: [.p90: 0])])
}

let benchmarks: @Sendable () -> Void = {
  Benchmark.defaultConfiguration = .init(
    metrics: [.wallClock, .throughput, .mallocCountTotal],
    timeUnits: .nanoseconds,
    scalingFactor: .kilo,
    maxDuration: caseDuration,
    maxIterations: 1_000,
    // The CI guard compares p90 mallocs with Thresholds/: 1% slack absorbs an occasional growth of a buffer
    // (3,014 rather than 3,000 per 1,000 actions), while one more malloc per action is +33% or more.
    thresholds: [.mallocCountTotal: BenchmarkThresholds(relative: [.p90: 1.0])]
  )
  registerBaselines()
  registerPrimitives()
  registerSynchronousDispatch()
  registerLanes()
  registerMemory()
  registerContention()
  registerTransactions()
  registerRecording()
  registerObservation()
  registerComposition()
  registerRecordingAtScale()
}

// MARK: - Baselines

func registerBaselines() {
  Benchmark("Mutex.withLock(increment)") { benchmark in
    let counter = Mutex(0)
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      counter.withLock { $0 += 1 }
    }
    benchmark.stopMeasurement()
    precondition(counter.withLock { $0 } == benchmark.scaledIterations.count)
  }

  Benchmark("DispatchQueue.sync(increment)") { benchmark in
    let queue = DispatchQueue(label: "baseline.sync")
    let counter = Counter()
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      queue.sync { counter.value += 1 }
    }
    benchmark.stopMeasurement()
    precondition(counter.value == benchmark.scaledIterations.count)
  }

  Benchmark("DispatchQueue.async(serial,actions:1000)") { benchmark in
    let queue = DispatchQueue(label: "baseline.serial")
    let counter = Counter()
    let done = DispatchSemaphore(value: 0)
    let last = benchmark.scaledIterations.count - 1
    benchmark.startMeasurement()
    for index in benchmark.scaledIterations {
      queue.async {
        counter.value += 1
        if index == last { done.signal() }
      }
    }
    done.wait()
    benchmark.stopMeasurement()
    precondition(counter.value == benchmark.scaledIterations.count)
  }

  Benchmark("DispatchQueue.async(roundTrip)", configuration: .init(scalingFactor: .one, maxIterations: 20_000)) {
    benchmark in
    let queue = DispatchQueue(label: "baseline.hop")
    let done = Flag()
    benchmark.startMeasurement()
    queue.async { done.raise() }
    done.wait()
    benchmark.stopMeasurement()
  }

  Benchmark("MainRunLoopThread.schedule(roundTrip)", configuration: .init(scalingFactor: .one, maxIterations: 20_000)) {
    benchmark in
    let thread = MainQueue.libraryThread
    let done = Flag()
    thread.schedule { done.raise() }  // Starts the thread outside the measurement.
    done.wait()
    benchmark.startMeasurement()
    thread.schedule { done.raise() }
    done.wait()
    benchmark.stopMeasurement()
  }

  Benchmark("OperationQueue.addOperation(maxConcurrent:1,actions:1000)") { benchmark in
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    let counter = Counter()
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      queue.addOperation(BlockOperation { counter.value += 1 })
    }
    queue.waitUntilAllOperationsAreFinished()
    benchmark.stopMeasurement()
    precondition(counter.value == benchmark.scaledIterations.count)
  }
}

/// Marks the end of a round trip: the hop's last closure raises it, and the benchmark thread polls for it.
///
/// Polling, not a semaphore, so that a round trip ends when the work did: a thread that blocked on a semaphore
/// first has to be woken by the kernel, which takes about 25 µs on a virtual machine and would swamp the hop being
/// measured. `Dispatcher.dispatch(mainThread,roundTrip,semaphore)` shows the figure with a semaphore.
final class Flag: Sendable {
  private let raised = Atomic(false)

  func raise() {
    raised.store(true, ordering: .releasing)
  }

  /// Returns once raised, and lowers the flag for the next round trip.
  func wait() {
    while !raised.load(ordering: .acquiring) {}
    raised.store(false, ordering: .relaxed)
  }
}

/// A counter changed only on one serial queue at a time (the baselines' own serialisation protects it).
final class Counter: @unchecked Sendable {
  var value = 0
}

// MARK: - Synchronous dispatch

func registerSynchronousDispatch() {
  func syncDispatch(
    _ name: String, action: TallyAction = .increment, configuration: Benchmark.Configuration? = nil,
    setup: @escaping @Sendable () -> Fixture = { Fixture() }
  ) {
    Benchmark("Dispatcher.dispatch(sync,\(name))", configuration: configuration ?? Benchmark.defaultConfiguration) {
      benchmark in
      let fixture = setup()
      benchmark.startMeasurement()
      for _ in benchmark.scaledIterations {
        try? fixture.dispatcher.dispatchSync(action: action)
      }
      benchmark.stopMeasurement()
      fixture.verify(benchmark.scaledIterations.count)
    }
  }

  for count in [0, 1, 10] {
    syncDispatch("observers:\(count)") {
      var fixture = Fixture()
      fixture.observe(count: count)
      return fixture
    }
  }
  syncDispatch("observationTokens:10") {
    var fixture = Fixture()
    fixture.observeWithTokens(count: 10)
    return fixture
  }
  for count in [1, 5] {
    syncDispatch("middleware:\(count)") {
      let fixture = Fixture()
      fixture.addMiddleware(count: count)
      return fixture
    }
  }
  syncDispatch("middleware:1,withDuration") {
    let fixture = Fixture()
    fixture.addMiddleware(count: 1, needingDurations: true)
    return fixture
  }
  syncDispatch("stores:1000,responding:1") { Fixture(responding: 1, idle: 999) }
  syncDispatch("stores:100,responding:100") { Fixture(responding: 100) }
  // Two lengths, so that the cost per store shows whether the chain scales linearly.
  syncDispatch("waitForChain:10") { Fixture(responding: 10, chained: true) }
  syncDispatch("waitForChain:100") { Fixture(responding: 100, chained: true) }

  // The same cases with a `SynchronousReducer`: no operation per transaction.
  for count in [0, 10] {
    syncDispatch("synchronousReducer,observers:\(count)", configuration: allocatesNothing) {
      var fixture = Fixture(synchronous: true)
      fixture.observe(count: count)
      return fixture
    }
  }
  syncDispatch("synchronousReducer,observationTokens:10", configuration: allocatesNothing) {
    var fixture = Fixture(synchronous: true)
    fixture.observeWithTokens(count: 10)
    return fixture
  }
  syncDispatch("synchronousReducer,middleware:1", configuration: allocatesNothing) {
    let fixture = Fixture(synchronous: true)
    fixture.addMiddleware(count: 1)
    return fixture
  }
  syncDispatch("synchronousReducer,middleware:1,withDuration", configuration: allocatesNothing) {
    let fixture = Fixture(synchronous: true)
    fixture.addMiddleware(count: 1, needingDurations: true)
    return fixture
  }
  syncDispatch("synchronousReducer,waitForChain:10") { Fixture(responding: 10, chained: true, synchronous: true) }

  syncDispatch("finishesOnAnotherThread", action: .incrementElsewhere)
}

// MARK: - Lanes

func registerLanes() {
  Benchmark("Dispatcher.dispatch(serial,actions:1000)") { benchmark in
    let fixture = Fixture()
    let done = DispatchSemaphore(value: 0)
    let token = fixture.whenCount(reaches: benchmark.scaledIterations.count) { done.signal() }
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      fixture.dispatcher.dispatch(action: TallyAction.increment, mode: .serial)
    }
    done.wait()
    benchmark.stopMeasurement()
    fixture.verify(benchmark.scaledIterations.count)
    withExtendedLifetime(token) {}
  }

  Benchmark("Dispatcher.dispatch(async,actions:1000)") { benchmark in
    let fixture = Fixture()
    let done = DispatchSemaphore(value: 0)
    let token = fixture.whenCount(reaches: benchmark.scaledIterations.count) { done.signal() }
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      fixture.dispatcher.dispatch(action: TallyAction.increment, mode: .async)
    }
    done.wait()
    benchmark.stopMeasurement()
    fixture.verify(benchmark.scaledIterations.count)
    withExtendedLifetime(token) {}
  }

  Benchmark(
    "Dispatcher.dispatch(mainThread,roundTrip)",
    configuration: .init(scalingFactor: .one, maxIterations: 20_000)
  ) { benchmark in
    let fixture = Fixture()
    let done = Flag()
    let token = fixture.whenCount(reaches: nil) { done.raise() }
    // Warm the library's main run-loop thread, so that its start is not measured.
    fixture.dispatcher.dispatch(action: TallyAction.increment, mode: .mainThread)
    done.wait()
    benchmark.startMeasurement()
    fixture.dispatcher.dispatch(action: TallyAction.increment, mode: .mainThread)
    done.wait()
    benchmark.stopMeasurement()
    fixture.verify(2)
    withExtendedLifetime(token) {}
  }

  Benchmark(
    "Dispatcher.dispatch(mainThread,roundTrip,semaphore)",
    configuration: .init(scalingFactor: .one, maxIterations: 20_000)
  ) { benchmark in
    let fixture = Fixture()
    let done = DispatchSemaphore(value: 0)
    let token = fixture.whenCount(reaches: nil) { done.signal() }
    fixture.dispatcher.dispatch(action: TallyAction.increment, mode: .mainThread)
    done.wait()
    benchmark.startMeasurement()
    fixture.dispatcher.dispatch(action: TallyAction.increment, mode: .mainThread)
    done.wait()
    benchmark.stopMeasurement()
    fixture.verify(2)
    withExtendedLifetime(token) {}
  }
}

extension Result {
  var isSuccess: Bool {
    if case .success = self { return true }
    return false
  }
}

// MARK: - Memory

func registerMemory() {
  // Benchmark names have no spaces: the tool writes threshold files with spaces replaced by `_` but looks them up
  // with the spaces, so a name with a space never finds its thresholds (benchmark 1.38.1).
  // Per store: the difference of the two peaks, divided by 10,000 (the README shows the arithmetic).
  for count in [0, 10_000] {
    Benchmark(
      "Dispatcher.register(idleStores:\(count))",
      configuration: .init(
        metrics: [.peakMemoryResident, .mallocCountTotal], units: [.peakMemoryResident: .kilo], scalingFactor: .one,
        maxIterations: 20)
    ) { _ in
      let fixture = Fixture(responding: 1, idle: count)
      blackHole(fixture)
    }
  }
}
