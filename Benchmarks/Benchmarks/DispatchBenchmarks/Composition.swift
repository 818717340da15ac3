// Child stores and combined reducers (proposal 0012): a dispatch through a child store against the same action
// dispatched to the parent, and what a child's observers cost when another part of the parent changes.
import Benchmark
import DispatchStore

struct Mall: ModelType {
  var cart = Tally()
  var visits = 0
}

enum MallAction: ActionType {
  case cart(TallyAction)
  case visit
}

/// Counts the cart's increments in place, as a scope of the mall's combined reducer.
final class CartTallyReducer: SynchronousReducer<Tally, TallyAction>, @unchecked Sendable {
  override func reduce(_ action: TallyAction, into model: inout Tally) throws {
    model.count += 1
  }
}

func makeMall() -> (Dispatcher, Store<Mall, MallAction>) {
  let dispatcher = Dispatcher()
  let mall = Store(
    identifier: "mall", model: Mall(),
    reducer: Reducer<Mall, MallAction>.combine([
      .scope(
        \.cart, action: { if case .cart(let action) = $0 { action } else { nil } }, reduce: CartTallyReducer().reduce),
      .reduce { action, mall in
        guard case .visit = action else { return }
        mall.visits += 1
      },
    ]))
  try! dispatcher.register(store: mall)
  return (dispatcher, mall)
}

/// Counts a child's notifications; only the benchmark's thread touches it (synchronous delivery).
final class NotificationCount: @unchecked Sendable {
  var value = 0
}

func registerComposition() {
  Benchmark("Dispatcher.dispatch(sync,combinedReducer,parent)", configuration: allocatesNothing) { benchmark in
    let (dispatcher, mall) = makeMall()
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      try? dispatcher.dispatchSync(action: MallAction.cart(.increment))
    }
    benchmark.stopMeasurement()
    precondition(mall.model.cart.count == benchmark.scaledIterations.count)
  }

  // Ten observers of the cart while another part of the mall changes: none is called.
  Benchmark("ChildStore.observe(observers:10,otherPartChanged)", configuration: allocatesNothing) { benchmark in
    let (dispatcher, mall) = makeMall()
    let cart = mall.scope(\.cart, action: MallAction.cart)
    let count = NotificationCount()
    let tokens = (0..<10).map { _ in cart.observe(synchronously: true) { _ in count.value += 1 } }
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      try? dispatcher.dispatchSync(action: MallAction.visit)
    }
    benchmark.stopMeasurement()
    precondition(count.value == 0, "a child's observers heard \(count.value) changes of another part")
    withExtendedLifetime(tokens) {}
  }

  // The same ten observers when their part changes: each is called once per dispatch.
  Benchmark("ChildStore.observe(observers:10,partChanged)") { benchmark in
    let (dispatcher, mall) = makeMall()
    let cart = mall.scope(\.cart, action: MallAction.cart)
    let count = NotificationCount()
    let tokens = (0..<10).map { _ in cart.observe(synchronously: true) { _ in count.value += 1 } }
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
      try? await cart.dispatch(action: .increment, mode: .sync)
    }
    benchmark.stopMeasurement()
    precondition(count.value == 10 * benchmark.scaledIterations.count)
    withExtendedLifetime((tokens, dispatcher)) {}
  }
}
