// What a user writes for two small features, with the subclasses of the previous release ("before") and with the
// closure stores ("after"). `.ci/count-lines.sh` counts the code lines between the markers for the README; this
// program runs both versions and checks that they behave the same.
import DispatchStore

struct Counter: ModelType {
  var count = 0
}

enum CounterAction: ActionType {
  case increase(by: Int)
  case reset
}

struct Country: ModelType {
  var code = ""
}

struct Price: ModelType {
  var currency = ""
}

enum TripAction: ActionType {
  case choose(country: String)
}

enum Before {
  // BEGIN counter-before
  final class CounterReducer: Reducer<Counter, CounterAction>, @unchecked Sendable {
    override func operation(
      for action: CounterAction, in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
      ActionOperation(action: action, store: store) { operation, action, _ in
        switch action {
        case .increase(let amount): operation.updateModel { $0.count += amount }
        case .reset: operation.updateModel { $0.count = 0 }
        }
        operation.finish()
      }
    }
  }

  static let counter = Store(identifier: "counter", model: Counter(), reducer: CounterReducer())
  // END counter-before

  // BEGIN waitfor-before
  final class CountryReducer: SynchronousReducer<Country, TripAction>, @unchecked Sendable {
    override func reduce(_ action: TripAction, into model: inout Country) throws {
      guard case .choose(let code) = action else { return }
      model.code = code
    }
  }

  final class PriceReducer: Reducer<Price, TripAction>, @unchecked Sendable {
    override func waitList(for action: TripAction) -> [String] { ["country"] }

    override func operation(
      for action: TripAction, in store: Store<Price, TripAction>
    ) -> ActionOperation<Price, TripAction> {
      ActionOperation(action: action, store: store) { operation, _, store in
        let country = operation.dispatcher?.store(with: "country", as: Store<Country, TripAction>.self)
        let code = country?.model.code
        operation.updateModel { $0.currency = code == "FR" ? "EUR" : "USD" }
        operation.finish()
      }
    }
  }

  static let country = Store(identifier: "country", model: Country(), reducer: CountryReducer())
  static let price = Store(identifier: "price", model: Price(), reducer: PriceReducer())
  // END waitfor-before
}

enum After {
  // BEGIN counter-after
  static let counter = Store(identifier: "counter", model: Counter()) { (action: CounterAction, model) in
    switch action {
    case .increase(let amount): model.count += amount
    case .reset: model.count = 0
    }
  }
  // END counter-after

  // BEGIN waitfor-after
  static let country = Store(identifier: "country", model: Country()) { (action: TripAction, model) in
    guard case .choose(let code) = action else { return }
    model.code = code
  }

  static let price = Store(identifier: "price", model: Price(), waitFor: ["country"]) {
    (action: TripAction, operation) in
    let code = operation.model(of: "country", as: Country.self)?.code
    operation.updateModel { $0.currency = code == "FR" ? "EUR" : "USD" }
  }
  // END waitfor-after
}

func run(
  _ name: String, counter: Store<Counter, CounterAction>, country: Store<Country, TripAction>,
  price: Store<Price, TripAction>
) async throws -> String {
  let dispatcher = Dispatcher()
  try dispatcher.register(store: price)
  try dispatcher.register(store: country)
  try dispatcher.register(store: counter)
  try await dispatcher.dispatch(action: CounterAction.increase(by: 2))
  try await dispatcher.dispatch(action: CounterAction.increase(by: 3))
  try await dispatcher.dispatch(action: TripAction.choose(country: "FR"))
  return "count \(counter.model.count), currency \(price.model.currency)"
}

let before = try await run("before", counter: Before.counter, country: Before.country, price: Before.price)
let after = try await run("after", counter: After.counter, country: After.country, price: After.price)
print("before: \(before)")
print("after: \(after)")
precondition(before == after, "the two versions differ")
