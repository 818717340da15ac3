import Testing

@testable import DispatchStore

@Suite("Combined reducers", .timeLimit(.minutes(1)), .watchdog)
struct CombinedReducerTests {
  @Test func partsRunInOrderInOneTransaction() throws {
    let dispatcher = Dispatcher()
    let shop = makeShop()
    try dispatcher.register(store: shop)
    let heard = Locked<[Shop]>([])
    let token = shop.observe(synchronously: true) { change in heard.withLock { $0.append(change.model) } }

    try dispatcher.dispatchSync(action: ShopAction.cart(.add("milk")))

    // The cart's scope, then the part that logs cart actions, then the last part: one change, heard once.
    #expect(shop.model.log == ["cart", "last"])
    #expect(heard.withLock { $0 } == [shop.model])
    withExtendedLifetime(token) {}
  }

  @Test func anActionForAMissingElementFailsAsUnavailableAndKeepsEarlierParts() throws {
    let dispatcher = Dispatcher()
    let shop = makeShop()
    try dispatcher.register(store: shop)

    let error = #expect(throws: DispatchError.self) {
      try dispatcher.dispatchSync(action: ShopAction.order(id: 7, .ship))
    }
    guard case .operationsFailed(let failures) = error else {
      Issue.record("expected operationsFailed, got \(String(describing: error))")
      return
    }
    #expect(
      failures.first?.error as? DispatchError
        == .scopeUnavailable(storeIdentifier: "shop", scope: "\\Shop.orders[id: 7]"))
    // The part after the failing one did not run.
    #expect(shop.model.log.isEmpty)
  }

  @Test func aThrowingPartKeepsItsChangesStopsTheLaterPartsAndNotifiesNobody() throws {
    let dispatcher = Dispatcher()
    let shop = makeShop()
    try dispatcher.register(store: shop)
    try dispatcher.dispatchSync(action: ShopAction.place(1))
    let heard = Locked<[Shop]>([])
    let token = shop.observe(synchronously: true) { change in heard.withLock { $0.append(change.model) } }

    #expect(throws: DispatchError.self) { try dispatcher.dispatchSync(action: ShopAction.order(id: 1, .fail)) }

    #expect(shop.model.orders == [Order(id: 1, status: "failing")])
    #expect(shop.model.log == ["last"])  // from `place`, not from the failed order action
    #expect(heard.withLock { $0 }.isEmpty)
    // Heard with the next change.
    try dispatcher.dispatchSync(action: ShopAction.visit)
    #expect(heard.withLock { $0.map(\.orders) } == [[Order(id: 1, status: "failing")]])
    withExtendedLifetime(token) {}
  }
}
