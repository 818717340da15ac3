// FlightBooking's actions, models, stores and interceptor: in a file of their own, so that the example's tests
// (Tests/ExampleTests) can use them; main.swift wires and runs them.
import DispatchStore
import Foundation

// MARK: - Actions and models

enum BookingAction: ActionType {
  case selectCountry(String)
  case selectCity(String)
  case clear
}

enum AccountAction: ActionType {
  case signIn(String)
  case signOut
}

/// App-wide actions: no store has them as its own type; stores map them to theirs.
enum SessionAction: ActionType {
  case signOut
}

/// Maps signing out to clearing, for the three booking stores.
let clearOnSignOut: [ActionMapping<BookingAction>] = [.on(SessionAction.self) { _ in .clear }]

struct CountryModel: ModelType, Equatable {
  var country: String?
}

struct CityModel: ModelType, Equatable {
  var available: [String] = []
  var city: String?
}

struct PriceModel: ModelType, Equatable {
  var quote: String?
}

struct AccountModel: ModelType, Equatable {
  var traveller: String?
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

struct UnknownCountry: Error, Equatable, CustomStringConvertible {
  let name: String
  var description: String { "we do not fly to \(name)" }
}

// MARK: - Stores

/// Looks the country up "remotely": the operation finishes later, after an `await`.
func makeCountryStore() -> Store<CountryModel, BookingAction> {
  Store(identifier: "country", model: CountryModel(), also: clearOnSignOut) { (action: BookingAction, operation) in
    switch action {
    case .clear:
      operation.updateModel { $0.country = nil }
    case .selectCountry(let name):
      try await Task.sleep(for: .milliseconds(50))  // the lookup; cancelled with the dispatch
      guard Catalogue.cities[name] != nil else { throw UnknownCountry(name: name) }
      operation.updateModel { $0.country = name }
    case .selectCity:
      break
    }
  }
}

/// Waits for the country store, then offers that country's cities.
func makeCityStore() -> Store<CityModel, BookingAction> {
  Store(identifier: "city", model: CityModel(), waitFor: ["country"], also: clearOnSignOut) {
    (action: BookingAction, operation) in
    switch action {
    case .selectCountry:
      let country = operation.model(of: "country", as: CountryModel.self)?.country
      let available = country.flatMap { Catalogue.cities[$0] } ?? []
      guard available != operation.model.available else { return }
      operation.updateModel {
        $0.available = available
        $0.city = available.first
      }
    case .selectCity(let city):
      operation.updateModel { if $0.available.contains(city) { $0.city = city } }
    case .clear:
      operation.updateModel { $0 = CityModel() }
    }
  }
}

/// Waits for country and city, then quotes a fare.
func makePriceStore() -> Store<PriceModel, BookingAction> {
  Store(identifier: "price", model: PriceModel(), waitFor: ["country", "city"], also: clearOnSignOut) {
    (action: BookingAction, operation) in
    if case .clear = action { return operation.updateModel { $0.quote = nil } }
    guard let country = operation.model(of: "country", as: CountryModel.self)?.country,
      let city = operation.model(of: "city", as: CityModel.self)?.city, let fare = Catalogue.fares[city]
    else { return }
    let quote = "\(city), \(country): €\(fare)"
    if operation.model.quote != quote { operation.updateModel { $0.quote = quote } }
  }
}

/// The signed-in traveller, reduced in place.
///
/// Another action type: it maps signing out to its own `.signOut`, and waits for the price store, so that the
/// booking is cleared before the traveller is forgotten.
func makeAccountStore() -> Store<AccountModel, AccountAction> {
  Store(
    identifier: "account", model: AccountModel(), waitFor: ["price"],
    also: [.on(SessionAction.self) { _ in .signOut }]
  ) { (action: AccountAction, model) in
    switch action {
    case .signIn(let name): model.traveller = name
    case .signOut: model.traveller = nil
    }
  }
}

/// Lets booking actions through only while a traveller is signed in (an interceptor: it runs before routing).
final class SignedInOnly: Interceptor {
  let account: Store<AccountModel, AccountAction>
  init(account: Store<AccountModel, AccountAction>) { self.account = account }

  func intercept(_ action: any ActionType, dispatcher: Dispatcher) -> Interception {
    guard action is BookingAction else { return .proceed }
    return account.model.traveller != nil ? .proceed : .block(reason: "sign in first")
  }
}
