// FlightBooking: four stores on one dispatcher, ordered with waitFor.
//
// Selecting a country updates the country store; the city store waits for it and picks that country's main
// airport city; the price store waits for both and quotes a fare. Each store's change is printed as it happens.
// Signing out is an app-wide action: the booking stores (booking actions) and the traveller store (account
// actions) each map it to an action of their own, and the traveller is forgotten after the booking was cleared.
import DispatchStore
import Foundation

// The actions, models, stores and interceptor are in Booking.swift.

// MARK: - Wiring

let dispatcher = Dispatcher()
let countryStore = makeCountryStore()
let cityStore = makeCityStore()
let priceStore = makePriceStore()
let accountStore = makeAccountStore()

// Registered in reverse on purpose: waitFor, not registration order, decides who runs first.
try dispatcher.register(store: accountStore)
try dispatcher.register(store: priceStore)
try dispatcher.register(store: cityStore)
try dispatcher.register(store: countryStore)
dispatcher.register(interceptor: SignedInOnly(account: accountStore))

/// Observers run on the dispatcher's main queue (the library's run-loop thread on Linux, the main thread on Apple
/// platforms), in the order the changes happened.
let screen = [
  countryStore.observe { change in print("  country  -> \(change.model.country ?? "none")") },
  cityStore.observe { change in
    let city = change.model
    print("  city     -> \(city.city ?? "none")   (flights to \(city.available.joined(separator: ", ")))")
  },
  priceStore.observe { change in print("  price    -> \(change.model.quote ?? "no quote")") },
  accountStore.observe { change in print("  account  -> \(change.model.traveller ?? "signed out")") },
]

/// Dispatches each step, waits for all three stores, then for the screen to show their changes.
func book() async {
  print("Flight booking: four stores on one dispatcher.")
  print("city waits for country; price waits for country and city; account waits for price.\n")
  let steps: [(String, any ActionType)] = [
    ("Select Italy before signing in", BookingAction.selectCountry("Italy")),
    ("Sign in as Ada", AccountAction.signIn("Ada")),
    ("Select Italy", BookingAction.selectCountry("Italy")),
    ("Choose Venice", BookingAction.selectCity("Venice")),
    ("Select Japan", BookingAction.selectCountry("Japan")),
    (
      "Select Atlantis (unknown: the country store fails; city and price, which wait for it, do not start)",
      BookingAction.selectCountry("Atlantis")
    ),
    ("Select Norway", BookingAction.selectCountry("Norway")),
  ]
  for (title, action) in steps {
    await run(title, action)
  }
  print("\nFinal booking: \(priceStore.model.quote ?? "none")\n")
  // One action, four stores of two action types, in waitFor order: country, city, price, then account.
  await run("Sign out (app-wide: every store maps it to an action of its own)", SessionAction.signOut)
  let cleared = [
    countryStore.model.country, cityStore.model.city, priceStore.model.quote, accountStore.model.traveller,
  ]
  print("\nAfter sign-out: \(cleared.allSatisfy { $0 == nil } ? "no traveller, no booking" : "something was kept")")
  await run(
    "Select Italy again (the interceptor blocks booking actions until someone signs in)",
    BookingAction.selectCountry("Italy"))
}

/// Dispatches one step, waits for every store that handles it, then for the screen to show their changes.
func run(_ title: String, _ action: any ActionType) async {
  print("> \(title)")
  do {
    try await dispatcher.dispatch(action: action, mode: .async)
  } catch {
    print("  ! dispatch failed: \(error)")
  }
  // Every notification scheduled on the main queue so far is printed before the next step.
  await dispatcher.drain()
}

await book()
