// FlightBooking: three stores on one dispatcher, ordered with waitFor.
//
// Selecting a country updates the country store; the city store waits for it and picks that country's main
// airport city; the price store waits for both and quotes a fare. Each store's change is printed as it happens.
import DispatchStore
import Foundation

// MARK: - Actions and models

enum BookingAction: ActionType {
  case selectCountry(String)
  case selectCity(String)
}

struct CountryModel: ModelType {
  var country: String?
}

struct CityModel: ModelType {
  var available: [String] = []
  var city: String?
}

struct PriceModel: ModelType {
  var quote: String?
}

/// What the "backend" knows: cities per country and a fare per city, in euros.
enum Catalogue {
  static let cities: [String: [String]] = [
    "Italy": ["Rome", "Milan", "Venice"],
    "Japan": ["Tokyo", "Osaka"],
    "Norway": ["Oslo", "Bergen", "Tromsø"],
  ]
  static let fares: [String: Int] = [
    "Rome": 180, "Milan": 150, "Venice": 210, "Tokyo": 890, "Osaka": 840, "Oslo": 240, "Bergen": 260, "Tromsø": 330,
  ]
}

struct UnknownCountry: Error, CustomStringConvertible {
  let name: String
  var description: String { "we do not fly to \(name)" }
}

// MARK: - Reducers

/// Looks the country up "remotely": the operation finishes later, on another thread.
final class CountryReducer: Reducer<CountryModel, BookingAction>, @unchecked Sendable {
  override func operation(
    for action: BookingAction, in store: Store<CountryModel, BookingAction>
  ) -> ActionOperation<CountryModel, BookingAction> {
    ActionOperation(action: action, store: store) { operation, action, store in
      guard case .selectCountry(let name) = action else { return operation.finish() }
      DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
        guard Catalogue.cities[name] != nil else {
          return operation.finish(throwing: UnknownCountry(name: name))
        }
        store.updateModel { $0.country = name }
        operation.finish()
      }
    }
  }
}

/// Waits for the country store, then offers that country's cities.
final class CityReducer: Reducer<CityModel, BookingAction>, @unchecked Sendable {
  let countries: Store<CountryModel, BookingAction>

  init(countries: Store<CountryModel, BookingAction>) {
    self.countries = countries
  }

  override func waitList(for action: BookingAction) -> [String] { ["country"] }

  override func operation(
    for action: BookingAction, in store: Store<CityModel, BookingAction>
  ) -> ActionOperation<CityModel, BookingAction> {
    ActionOperation(action: action, store: store) { [countries] operation, action, store in
      switch action {
      case .selectCountry:
        let available = countries.model.country.flatMap { Catalogue.cities[$0] } ?? []
        guard available != store.model.available else { return operation.finish() }
        store.updateModel {
          $0.available = available
          $0.city = available.first
        }
      case .selectCity(let city):
        store.updateModel { if $0.available.contains(city) { $0.city = city } }
      }
      operation.finish()
    }
  }
}

/// Waits for country and city, then quotes a fare.
final class PriceReducer: Reducer<PriceModel, BookingAction>, @unchecked Sendable {
  let countries: Store<CountryModel, BookingAction>
  let cities: Store<CityModel, BookingAction>

  init(countries: Store<CountryModel, BookingAction>, cities: Store<CityModel, BookingAction>) {
    self.countries = countries
    self.cities = cities
  }

  override func waitList(for action: BookingAction) -> [String] { ["country", "city"] }

  override func operation(
    for action: BookingAction, in store: Store<PriceModel, BookingAction>
  ) -> ActionOperation<PriceModel, BookingAction> {
    ActionOperation(action: action, store: store) { [countries, cities] operation, _, store in
      if let country = countries.model.country, let city = cities.model.city, let fare = Catalogue.fares[city] {
        let quote = "\(city), \(country): €\(fare)"
        if store.model.quote != quote { store.updateModel { $0.quote = quote } }
      }
      operation.finish()
    }
  }
}

// MARK: - Wiring

let dispatcher = Dispatcher()
let countryStore = Store(identifier: "country", model: CountryModel(), reducer: CountryReducer())
let cityStore = Store(identifier: "city", model: CityModel(), reducer: CityReducer(countries: countryStore))
let priceStore = Store(
  identifier: "price", model: PriceModel(), reducer: PriceReducer(countries: countryStore, cities: cityStore))

// Registered in reverse on purpose: waitFor, not registration order, decides who runs first.
try dispatcher.register(store: priceStore)
try dispatcher.register(store: cityStore)
try dispatcher.register(store: countryStore)

/// Observers run on the library's main run-loop thread, in the order the changes happened.
final class Screen {}
let screen = Screen()
countryStore.register(observer: screen) { model, _ in
  print("  country  -> \(model.country ?? "none")")
}
cityStore.register(observer: screen) { model, _ in
  print("  city     -> \(model.city ?? "none")   (flights to \(model.available.joined(separator: ", ")))")
}
priceStore.register(observer: screen) { model, _ in
  print("  price    -> \(model.quote ?? "no quote")")
}

/// Returns once every notification scheduled so far on the main run-loop thread was printed (it is FIFO).
func flushScreen() async {
  await withCheckedContinuation { continuation in
    dispatcher.mainQueue.schedule { continuation.resume() }
  }
}

/// Dispatches each step, waits for all three stores, then for the screen to show their changes.
func book() async {
  print("Flight booking: three stores on one dispatcher.")
  print("city waits for country; price waits for country and city.\n")
  let steps: [(String, BookingAction)] = [
    ("Select Italy", .selectCountry("Italy")),
    ("Choose Venice", .selectCity("Venice")),
    ("Select Japan", .selectCountry("Japan")),
    ("Select Atlantis (unknown: the country store fails, the others still finish)", .selectCountry("Atlantis")),
    ("Select Norway", .selectCountry("Norway")),
  ]
  for (title, action) in steps {
    print("> \(title)")
    do {
      try await dispatcher.dispatch(action: action, mode: .async)
    } catch {
      print("  ! dispatch failed: \(error)")
    }
    await flushScreen()
  }
  print("\nFinal booking: \(priceStore.model.quote ?? "none")")
}

await book()
