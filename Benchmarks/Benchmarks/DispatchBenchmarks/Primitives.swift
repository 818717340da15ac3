// The primitives a dispatch is made of, measured in the same run as the dispatches, so that the README can say
// what a target's floor is on the machine that ran it: an atomic read-modify-write (every retain, release and
// uncontended lock makes one or two), a heap object's allocation and release, a monotonic clock read (two per
// transaction that middleware watches), and loading a weak reference (one per observer notified).
import Benchmark
import Foundation
import Synchronization

func registerPrimitives() {
  Benchmark("Atomic.add(relaxed)") { benchmark in
    let counter = Atomic(0)
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      counter.add(1, ordering: .relaxed)
    }
    benchmark.stopMeasurement()
    precondition(counter.load(ordering: .relaxed) == benchmark.scaledIterations.count)
  }

  Benchmark("Object.allocateAndRelease") { benchmark in
    benchmark.startMeasurement()
    for index in benchmark.scaledIterations {
      blackHole(Box(index))
    }
    benchmark.stopMeasurement()
  }

  Benchmark("clock_gettime(monotonic)") { benchmark in
    var spec = timespec()
    var total: Int = 0
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      clock_gettime(CLOCK_MONOTONIC, &spec)
      total &+= spec.tv_nsec
    }
    benchmark.stopMeasurement()
    blackHole(total)
  }

  Benchmark("WeakReference.loadStrong") { benchmark in
    let target = Box(1)
    let references = WeakBox(target)
    var total = 0
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      if let object = references.object { total &+= object.value }
    }
    benchmark.stopMeasurement()
    precondition(total == benchmark.scaledIterations.count)
    withExtendedLifetime(target) {}
  }
}

/// A heap object holding one value.
final class Box: @unchecked Sendable {
  let value: Int

  @inline(never)
  init(_ value: Int) {
    self.value = value
  }
}

/// Holds a weak reference, as a store holds an observer.
final class WeakBox: @unchecked Sendable {
  weak var object: Box?

  init(_ object: Box) {
    self.object = object
  }
}
