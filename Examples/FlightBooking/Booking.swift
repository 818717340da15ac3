// FlightBooking's actions, models, reducers and interceptor: in a file of their own, so that the example's tests
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

// MARK: - Reducers

/// Looks the country up "remotely": the operation finishes later, on another thread.
final class CountryReducer: Reducer<CountryModel, BookingAction>, @unchecked Sendable {
  override var additionalActions: [ActionMapping<BookingAction>] { clearOnSignOut }

  override func operation(
    for action: BookingAction, in store: Store<CountryModel, BookingAction>
  ) -> ActionOperation<CountryModel, BookingAction> {
    ActionOperation(action: action, store: store) { operation, action, store in
      if case .clear = action {
        operation.updateModel { $0.country = nil }
        return operation.finish()
      }
      guard case .selectCountry(let name) = action else { return operation.finish() }
      DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
        guard Catalogue.cities[name] != nil else {
          return operation.finish(throwing: UnknownCountry(name: name))
        }
        operation.updateModel { $0.country = name }
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

  override var additionalActions: [ActionMapping<BookingAction>] { clearOnSignOut }

  override func waitList(for action: BookingAction) -> [String] { ["country"] }

  override func operation(
    for action: BookingAction, in store: Store<CityModel, BookingAction>
  ) -> ActionOperation<CityModel, BookingAction> {
    ActionOperation(action: action, store: store) { [countries] operation, action, store in
      switch action {
      case .selectCountry:
        let available = countries.model.country.flatMap { Catalogue.cities[$0] } ?? []
        guard available != store.model.available else { return operation.finish() }
        operation.updateModel {
          $0.available = available
          $0.city = available.first
        }
      case .selectCity(let city):
        operation.updateModel { if $0.available.contains(city) { $0.city = city } }
      case .clear:
        operation.updateModel { $0 = CityModel() }
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

  override var additionalActions: [ActionMapping<BookingAction>] { clearOnSignOut }

  override func waitList(for action: BookingAction) -> [String] { ["country", "city"] }

  override func operation(
    for action: BookingAction, in store: Store<PriceModel, BookingAction>
  ) -> ActionOperation<PriceModel, BookingAction> {
    ActionOperation(action: action, store: store) { [countries, cities] operation, action, store in
      if case .clear = action {
        operation.updateModel { $0.quote = nil }
      } else if let country = countries.model.country, let city = cities.model.city, let fare = Catalogue.fares[city] {
        let quote = "\(city), \(country): €\(fare)"
        if store.model.quote != quote { operation.updateModel { $0.quote = quote } }
      }
      operation.finish()
    }
  }
}

/// The signed-in traveller, reduced in place.
///
/// Another action type: it maps signing out to its own `.signOut`, and waits for the price store, so that the
/// booking is cleared before the traveller is forgotten.
final class AccountReducer: SynchronousReducer<AccountModel, AccountAction>, @unchecked Sendable {
  override var additionalActions: [ActionMapping<AccountAction>] { [.on(SessionAction.self) { _ in .signOut }] }

  override func waitList(for action: AccountAction) -> [String] { ["price"] }

  override func reduce(_ action: AccountAction, into model: inout AccountModel) throws {
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
