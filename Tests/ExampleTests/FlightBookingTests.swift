import DispatchStore
import DispatchStoreTesting
import Testing

@testable import FlightBooking

/// FlightBooking's four stores, registered with a test dispatcher as the example wires them.
struct Booking {
  let test = TestDispatcher()
  let country: Store<CountryModel, BookingAction>
  let city: Store<CityModel, BookingAction>
  let price: Store<PriceModel, BookingAction>
  let account: Store<AccountModel, AccountAction>

  init() throws {
    country = try test.register(makeCountryStore())
    city = try test.register(makeCityStore())
    price = try test.register(makePriceStore())
    account = try test.register(makeAccountStore())
    test.dispatcher.register(interceptor: SignedInOnly(account: account))
  }
}

@Suite("FlightBooking, with DispatchStoreTesting", .timeLimit(.minutes(1)))
struct FlightBookingTests {
  @Test func choosingACountryOffersItsCitiesAndQuotesTheFirst() async throws {
    let booking = try Booking()
    let test = booking.test
    await test.send(AccountAction.signIn("Ada"), .store(booking.account) { $0.traveller = "Ada" })
    await test.send(
      BookingAction.selectCountry("Norway"),
      .store(booking.country) { $0.country = "Norway" },
      .store(booking.city) {
        $0.available = ["Oslo", "Bergen", "Tromsø"]
        $0.city = "Oslo"
      },
      .store(booking.price) { $0.quote = "Oslo, Norway: €240" })
    await test.send(
      BookingAction.selectCity("Bergen"), .store(booking.city) { $0.city = "Bergen" },
      .store(booking.price) { $0.quote = "Bergen, Norway: €260" })
    await test.finish()
  }

  @Test func signingOutClearsEveryStoreOfBothActionTypes() async throws {
    let booking = try Booking()
    let test = booking.test
    await test.send(AccountAction.signIn("Ada"), .store(booking.account) { $0.traveller = "Ada" })
    await test.send(
      BookingAction.selectCountry("Italy"), .store(booking.country) { $0.country = "Italy" },
      .store(booking.city) {
        $0.available = ["Rome", "Milan", "Venice"]
        $0.city = "Rome"
      },
      .store(booking.price) { $0.quote = "Rome, Italy: €180" })

    await test.send(
      SessionAction.signOut, .store(booking.country) { $0.country = nil },
      .store(booking.city) { $0 = CityModel() }, .store(booking.price) { $0.quote = nil },
      .store(booking.account) { $0.traveller = nil })
    await test.finish()
  }

  @Test func anUnknownCountryFailsAndChangesNothing() async throws {
    let booking = try Booking()
    let test = booking.test
    await test.send(AccountAction.signIn("Ada"), .store(booking.account) { $0.traveller = "Ada" })
    // The dispatch fails with the country store's error, and no store changes.
    await test.send(BookingAction.selectCountry("Atlantis"), fails: UnknownCountry(name: "Atlantis"))
    await test.finish()
  }
}
