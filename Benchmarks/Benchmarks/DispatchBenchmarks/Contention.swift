// Many threads dispatching to one store at once, next to one thread doing the same total, and next to the
// toolchain's locks under the same load. The claim is a ratio within one run: 8 threads x 100,000 against
// 1 thread x 800,000. With more threads than cores, a lock that hands itself to a sleeping waiter on every unlock
// makes the 8-thread case hundreds of times slower; one that lets the running thread take it again does not.
import Benchmark
import Dispatch
import DispatchStore
import Foundation
import Synchronization

/// The total number of actions (or increments) in every contention case, however many threads share them.
let contentionTotal = 800_000

func registerContention() {
  let configuration = Benchmark.Configuration(
    metrics: [.wallClock], timeUnits: .milliseconds, scalingFactor: .one, maxDuration: .seconds(10),
    maxIterations: 5, thresholds: [:])
  // The toolchain's mutex: the slow one would take minutes at 5 iterations, so it runs once.
  let once = Benchmark.Configuration(
    metrics: [.wallClock], timeUnits: .milliseconds, scalingFactor: .one, maxDuration: .seconds(1), maxIterations: 1,
    thresholds: [:])

  for threads in [1, 8] {
    let name = "contention(threads:\(threads))"
    Benchmark("Mutex.withLock(\(name))", configuration: threads == 1 ? configuration : once) { benchmark in
      let counter = Mutex(0)
      runOnThreads(threads, benchmark: benchmark) { counter.withLock { $0 += 1 } }
      precondition(counter.withLock { $0 } == contentionTotal)
    }
    Benchmark("NSLock.withLock(\(name))", configuration: configuration) { benchmark in
      let counter = LockedCounter()
      runOnThreads(threads, benchmark: benchmark) { counter.increment() }
      precondition(counter.value == contentionTotal)
    }
    Benchmark("Dispatcher.dispatch(sync,\(name))", configuration: configuration) { benchmark in
      let fixture = Fixture(synchronous: true)
      runOnThreads(threads, benchmark: benchmark) {
        try? fixture.dispatcher.dispatchSync(action: TallyAction.increment)
      }
      fixture.verify(contentionTotal)
    }
    for mode in [Dispatcher.Mode.serial, .mainThread] {
      Benchmark("Dispatcher.dispatch(\(mode),\(name))", configuration: configuration) { benchmark in
        let fixture = Fixture(synchronous: true)
        let done = DispatchSemaphore(value: 0)
        let token = fixture.whenCount(reaches: contentionTotal) { done.signal() }
        runOnThreads(threads, benchmark: benchmark, until: done) {
          fixture.dispatcher.dispatch(action: TallyAction.increment, mode: mode)
        }
        fixture.verify(contentionTotal)
        withExtendedLifetime(token) {}
      }
    }
  }
}

/// Starts `threads` threads that each run `body` `contentionTotal / threads` times, and measures from their start
/// until they all returned and, if given, `done` was signalled.
func runOnThreads(
  _ threads: Int, benchmark: Benchmark, until done: DispatchSemaphore? = nil, _ body: @escaping @Sendable () -> Void
) {
  let perThread = contentionTotal / threads
  let finished = DispatchGroup()
  // Threads are made before the measurement and released together, so that making them is not measured.
  let start = DispatchSemaphore(value: 0)
  for _ in 0..<threads {
    finished.enter()
    let thread = Thread {
      start.wait()
      for _ in 0..<perThread { body() }
      finished.leave()
    }
    thread.start()
  }
  benchmark.startMeasurement()
  for _ in 0..<threads { start.signal() }
  finished.wait()
  done?.wait()
  benchmark.stopMeasurement()
}

/// An integer behind Foundation's `NSLock` (a `pthread_mutex_t` on Linux).
final class LockedCounter: @unchecked Sendable {
  private let lock = NSLock()
  private var count = 0

  func increment() {
    lock.lock()
    count += 1
    lock.unlock()
  }

  var value: Int {
    lock.lock()
    defer { lock.unlock() }
    return count
  }
}
