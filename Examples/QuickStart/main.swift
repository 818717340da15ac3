import DispatchStore

struct Counter: ModelType {
  var count = 0
}

enum CounterAction: ActionType {
  case increase(by: Int)
  case reset
}

// A small store needs no reducer class: the closure changes the model in place, under the store's lock.
let counter = Store(identifier: "counter", model: Counter()) { (action: CounterAction, model) in
  switch action {
  case .increase(let amount): model.count += amount
  case .reset: model.count = 0
  }
}

let dispatcher = Dispatcher()

func start() throws -> ObservationToken {
  try dispatcher.register(store: counter)
  // Observed until the token is released or cancelled: a view keeps it for as long as it shows the count.
  let observation = counter.observe { change in
    print("count is now \(change.model.count) after \(change.action)")
  }
  dispatcher.dispatch(action: CounterAction.increase(by: 1), mode: .sync)  // returns when done
  print("count after the sync dispatch: \(counter.model.count)")  // the store's model, read from any thread
  dispatcher.dispatch(action: CounterAction.reset, mode: .serial)  // fire and forget, from synchronous code
  return observation
}

func addTwo() async throws {
  // In async code `dispatch` is awaited and throws the DispatchError that made it fail.
  try await dispatcher.dispatch(action: CounterAction.increase(by: 2))
}

let price = Store(identifier: "price", model: Price(), waitFor: ["country"]) { (action: TripAction, operation) in
  let code = operation.model(of: "country", as: Country.self)?.code
  operation.updateModel { $0.currency = code == "FR" ? "EUR" : "USD" }
}

let fastCounter = Store(identifier: "fast-counter", model: Counter()) { (action: CounterAction, model) in
  switch action {
  case .increase(let amount): model.count += amount
  case .reset: model.count = 0
  }
}
// Notified on the thread that made the change, before its dispatch returns.
let token = fastCounter.observe(synchronously: true) { change in print(change.model.count) }

// MARK: - Not in the README: runs the code above (CI checks that the README's blocks are this file's first lines).

struct Country: ModelType {
  var code = ""
}

struct Price: ModelType {
  var currency = ""
}

enum TripAction: ActionType {
  case choose(country: String)
}

let country = Store(identifier: "country", model: Country()) { (action: TripAction, model) in
  guard case .choose(let code) = action else { return }
  model.code = code
}

func run() async throws {
  let observation = try start()
  // The serial lane is FIFO: this returns after the reset that `start()` queued.
  try await dispatcher.dispatch(action: CounterAction.reset, mode: .serial)
  try await addTwo()
  print("counter: \(counter.model.count)")
  // Every store of the action's type hears it: both counters.
  try dispatcher.register(store: fastCounter)
  try await dispatcher.dispatch(action: CounterAction.increase(by: 3), mode: .sync)
  print("counters: \(counter.model.count), \(fastCounter.model.count)")
  try dispatcher.register(store: price)
  try dispatcher.register(store: country)
  try await dispatcher.dispatch(action: TripAction.choose(country: "FR"))
  print("currency: \(price.model.currency)")
  // The view's notifications run on the main queue: deliver the pending ones before the tool exits.
  await dispatcher.drain()
  withExtendedLifetime((token, observation)) {}
}

try await run()
