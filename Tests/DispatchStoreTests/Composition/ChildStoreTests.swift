import Testing

@testable import DispatchStore

@Suite("Child stores", .timeLimit(.minutes(1)), .watchdog)
struct ChildStoreTests {
  @Test func aChildsDispatchIsATransactionOfItsParentThatMiddlewareAndTheRecorderSee() throws {
    let dispatcher = Dispatcher()
    let shop = makeShop()
    try dispatcher.register(store: shop)
    let middleware = RecordingMiddleware()
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: middleware)
    dispatcher.register(middleware: recorder)
    let cart = shop.scope(\.cart, action: ShopAction.cart)

    try cart.dispatchSync(.add("milk"))

    #expect(cart.model == Cart(items: ["milk"]))
    #expect(shop.model.cart.items == ["milk"])
    let seen = middleware.transactions.withLock { $0 }
    #expect(seen.map(\.storeIdentifier) == ["shop"])
    #expect(seen.first?.action as? ShopAction == .cart(.add("milk")))
    #expect(recorder.records.map(\.storeIdentifier) == ["shop"])
  }

  @Test func aChildsObserversHearOnlyChangesToItsPart() throws {
    let dispatcher = Dispatcher()
    let shop = makeShop()
    try dispatcher.register(store: shop)
    let cart = shop.scope(\.cart, action: ShopAction.cart)
    let heard = Locked<[[String]]>([])
    let token = cart.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.items) } }

    try dispatcher.dispatchSync(action: ShopAction.visit)  // another part
    try cart.dispatchSync(.add("milk"))
    try dispatcher.dispatchSync(action: ShopAction.place(1))  // another part
    try cart.dispatchSync(.add("eggs"))

    #expect(heard.withLock { $0 } == [["milk"], ["milk", "eggs"]])
    withExtendedLifetime(token) {}
  }

  @Test func aChildsObserversHearTheParentsActionAndWhetherTheRecorderRestoredThePart() throws {
    let dispatcher = Dispatcher()
    let shop = makeShop()
    try dispatcher.register(store: shop)
    let recorder = RecorderMiddleware()
    dispatcher.register(middleware: recorder)
    let cart = shop.scope(\.cart, action: ShopAction.cart)
    let heard = Locked<[(items: [String], action: ShopAction, isRestore: Bool)]>([])
    let token = cart.observe(synchronously: true) { change in
      heard.withLock { $0.append((change.model.items, change.action, change.isRestore)) }
    }

    try cart.dispatchSync(.add("milk"))
    try cart.dispatchSync(.add("eggs"))
    try recorder.undo(byRecord: true)

    let changes = heard.withLock { $0 }
    #expect(changes.map(\.items) == [["milk"], ["milk", "eggs"], ["milk"]])
    #expect(changes.map(\.isRestore) == [false, false, true])
    #expect(changes.first?.action == .cart(.add("milk")))
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func anElementsChildChangesItsElementInEveryMode(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    let shop = makeShop()
    try dispatcher.register(store: shop)
    try dispatcher.dispatchSync(action: ShopAction.place(1))
    try dispatcher.dispatchSync(action: ShopAction.place(2))
    let second = shop.scope(\.orders, id: 2, action: ShopAction.order)

    try await second.dispatch(action: .ship, mode: mode)

    #expect(second.model == Order(id: 2, status: "shipped"))
    #expect(shop.model.orders.map(\.status) == ["new", "shipped"])
  }

  @Test func aChildWhoseElementWasRemovedFailsWithATypedErrorAndChangesNothing() throws {
    let dispatcher = Dispatcher()
    let shop = makeShop()
    try dispatcher.register(store: shop)
    try dispatcher.dispatchSync(action: ShopAction.place(1))
    let order = shop.scope(\.orders, id: 1, action: ShopAction.order)
    try dispatcher.dispatchSync(action: ShopAction.remove(1))
    let before = shop.model

    #expect(order.model == nil)
    let error = #expect(throws: DispatchError.self) { try order.dispatchSync(.ship) }
    guard case .scopeUnavailable(let store, let scope) = error else {
      Issue.record("expected scopeUnavailable, got \(String(describing: error))")
      return
    }
    #expect(store == "shop")
    #expect(scope.contains("[id: 1]"))
    #expect(shop.model == before)
  }

  /// Eight threads dispatch through the child while others change another part: the child's observer hears each of
  /// its part's changes once, in order, and none of the others.
  @Test func eightThreadsThroughAChildLoseNothingAndItsObserverHearsOnlyItsPart() async throws {
    let dispatcher = Dispatcher()
    let shop = makeShop()
    try dispatcher.register(store: shop)
    let cart = shop.scope(\.cart, action: ShopAction.cart)
    let heard = Locked<[Int]>([])
    let token = cart.observe(synchronously: true) { change in heard.withLock { $0.append(change.model.items.count) } }

    await onThreads(8) { thread in
      for index in 0..<100 {
        if thread.isMultiple(of: 2) {
          _ = try? cart.dispatchSync(.add("\(thread)-\(index)"))
        } else {
          _ = dispatchSync(dispatcher, ShopAction.visit)
        }
      }
    }

    #expect(shop.model.cart.items.count == 400)
    #expect(shop.model.visits == 400)
    #expect(heard.withLock { $0 } == Array(1...400))
    withExtendedLifetime(token) {}
  }

  @Test func aChildOfAnUnregisteredParentFailsWithUnknownStore() {
    let cart = makeShop().scope(\.cart, action: ShopAction.cart)
    let error = #expect(throws: DispatchError.self) { try cart.dispatchSync(.clear) }
    guard case .unknownStore(let identifier) = error else {
      Issue.record("expected unknownStore, got \(String(describing: error))")
      return
    }
    #expect(identifier == "shop")
  }
}
