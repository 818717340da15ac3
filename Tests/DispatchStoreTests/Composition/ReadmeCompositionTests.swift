import Testing

@testable import DispatchStore

/// The child-store and combined-reducer example the README carried until issue 26, run with the types of
/// `Support/Shop.swift`.
@Suite("README: child stores and combined reducers", .timeLimit(.minutes(1)), .watchdog)
struct ReadmeCompositionTests {
  @Test func theReadmeExampleRunsAsWritten() async throws {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    // README: composition
    let shop = Store(
      identifier: "shop", model: Shop(),
      reducer: Reducer<Shop, ShopAction>.combine([
        .scope(
          \.cart, action: { if case .cart(let action) = $0 { action } else { nil } }, reduce: CartReducer().reduce),
        .forEach(\.orders, action: { if case .order(let id, let action) = $0 { (id, action) } else { nil } }) {
          action, order in
          if action == .ship { order.status = "shipped" }
        },
        .reduce { action, shop in
          if case .place(let id) = action { shop.orders.append(Order(id: id)) }
        },
      ]))
    try dispatcher.register(store: shop)

    let cart = shop.scope(\.cart, action: ShopAction.cart)
    let token = cart.observe { change in print(change.model.items) }  // only when the cart changed
    try await cart.dispatch(action: .add("milk"))  // a transaction of `shop`: middleware and the recorder see it

    try dispatcher.dispatchSync(action: ShopAction.place(1))
    let order = shop.scope(\.orders, id: 1, action: ShopAction.order)
    try await order.dispatch(action: .ship)
    // README end
    await dispatcher.drain()
    #expect(shop.model.cart.items == ["milk"])
    #expect(order.model?.status == "shipped")
    withExtendedLifetime(token) {}
  }
}
