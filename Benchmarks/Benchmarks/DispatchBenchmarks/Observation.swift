// Observation (proposal 0011): the cost per dispatch of ten `withObservationTracking` trackers on an
// `ObservedModel`, each reading one of ten fields, next to ten token observers of the same store; and the check that
// one change of one field fires exactly one tracker.
import Benchmark
import DispatchStore
import Observation

struct TenFields: ModelType {
  var f0 = 0, f1 = 0, f2 = 0, f3 = 0, f4 = 0, f5 = 0, f6 = 0, f7 = 0, f8 = 0, f9 = 0
}

enum TenFieldsAction: ActionType {
  case set(field: Int, to: Int)
}

let tenFieldPaths: [WritableKeyPath<TenFields, Int> & Sendable] = [
  \.f0, \.f1, \.f2, \.f3, \.f4, \.f5, \.f6, \.f7, \.f8, \.f9,
]

func makeTenFieldsStore() -> (Dispatcher, Store<TenFields, TenFieldsAction>) {
  let dispatcher = Dispatcher()
  let store = Store(identifier: "ten", model: TenFields()) { (action: TenFieldsAction, model) in
    guard case .set(let field, let value) = action else { return }
    model[keyPath: tenFieldPaths[field]] = value
  }
  try! dispatcher.register(store: store)
  return (dispatcher, store)
}

/// Counts tracker firings; a tracker is armed again by the benchmark loop after it fired, as a view renders again.
final class FireCounter: @unchecked Sendable {
  // Only touched by the benchmark's thread: trackers fire synchronously, inside its dispatch.
  var fired = [Int](repeating: 0, count: 10)
}

func arm(_ field: Int, on observed: ObservedModel<TenFields>, counter: FireCounter) {
  withObservationTracking {
    _ = observed[tenFieldPaths[field]]
  } onChange: {
    counter.fired[field] += 1
  }
}

func registerObservation() {
  Benchmark("Dispatcher.dispatch(sync,synchronousReducer,fields:10,observationTrackers:10)") { benchmark in
    let (dispatcher, store) = makeTenFieldsStore()
    let observed = store.observable(synchronously: true)
    let counter = FireCounter()
    for field in 0..<10 { arm(field, on: observed, counter: counter) }
    var dispatched = 0
    benchmark.startMeasurement()
    for iteration in benchmark.scaledIterations {
      let field = iteration % 10
      try? dispatcher.dispatchSync(action: TenFieldsAction.set(field: field, to: iteration + 1))
      arm(field, on: observed, counter: counter)
      dispatched += 1
    }
    benchmark.stopMeasurement()
    // Each dispatch changed one field and fired exactly its tracker.
    let fired = counter.fired.reduce(0, +)
    precondition(fired == dispatched, "\(fired) trackers fired for \(dispatched) changes of one field each")
  }

  // What arming one tracker costs by itself (Observation's `withObservationTracking` and one read here): the part of
  // the case above that a view pays when it renders again, whichever library it observes.
  Benchmark("ObservedModel.withObservationTracking(arm:1)") { benchmark in
    let (_, store) = makeTenFieldsStore()
    let observed = store.observable(synchronously: true)
    let counter = FireCounter()
    benchmark.startMeasurement()
    for iteration in benchmark.scaledIterations {
      arm(iteration % 10, on: observed, counter: counter)
    }
    benchmark.stopMeasurement()
  }

  Benchmark(
    "Dispatcher.dispatch(sync,synchronousReducer,fields:10,observationTokens:10)", configuration: allocatesNothing
  ) { benchmark in
    let (dispatcher, store) = makeTenFieldsStore()
    let tokens = (0..<10).map { field in
      store.observe(synchronously: true) { change in blackHole(change.model[keyPath: tenFieldPaths[field]]) }
    }
    benchmark.startMeasurement()
    for iteration in benchmark.scaledIterations {
      try? dispatcher.dispatchSync(action: TenFieldsAction.set(field: iteration % 10, to: iteration + 1))
    }
    benchmark.stopMeasurement()
    withExtendedLifetime(tokens) {}
  }
}
