import Testing

@testable import DispatchStore

/// Child stores and combined reducers over an `IdentifiedList`: the same behaviour as over an array, found by id.
@Suite("IdentifiedList composition", .watchdog)
struct IdentifiedListCompositionTests {
  struct Desk: ModelType, Equatable {
    var orders: IdentifiedList<Order> = []
  }

  func makeDesk() -> Store<Desk, ShopAction> {
    Store(
      identifier: "desk", model: Desk(),
      reducer: .combine([
        .forEach(\.orders, action: { if case .order(let id, let action) = $0 { (id, action) } else { nil } }) {
          action, order in
          switch action {
          case .ship: order.status = "shipped"
          case .fail:
            order.status = "failing"
            throw TestFailure(reason: "order \(order.id)")
          }
        },
        .reduce { action, desk in
          switch action {
          case .place(let id): desk.orders.append(Order(id: id))
          case .remove(let id): desk.orders.remove(id: id)
          default: break
          }
        },
      ]))
  }

  @Test(arguments: Dispatcher.Mode.allCases)
  func anElementsChildChangesItsElementInEveryMode(mode: Dispatcher.Mode) async throws {
    let dispatcher = Dispatcher(mainQueue: .libraryThread)
    let desk = makeDesk()
    try dispatcher.register(store: desk)
    for id in 1...300 { try dispatcher.dispatchSync(action: ShopAction.place(id)) }
    let order = desk.scope(\.orders, id: 200, action: ShopAction.order)

    try await order.dispatch(action: .ship, mode: mode)

    #expect(order.model == Order(id: 200, status: "shipped"))
    #expect(desk.model.orders.filter { $0.status == "shipped" }.map(\.id) == [200])
    #expect(desk.model.orders.count == 300)
  }

  @Test func aChildWhoseElementWasRemovedFailsWithATypedErrorAndChangesNothing() throws {
    let dispatcher = Dispatcher()
    let desk = makeDesk()
    try dispatcher.register(store: desk)
    try dispatcher.dispatchSync(action: ShopAction.place(1))
    let order = desk.scope(\.orders, id: 1, action: ShopAction.order)
    try dispatcher.dispatchSync(action: ShopAction.remove(1))
    let before = desk.model

    #expect(order.model == nil)
    #expect(throws: DispatchError.scopeUnavailable(storeIdentifier: "desk", scope: "\\Desk.orders[id: 1]")) {
      try order.dispatchSync(.ship)
    }
    // The combined reducer's part names the element too, when the action reaches it another way.
    let error = #expect(throws: DispatchError.self) {
      try dispatcher.dispatchSync(action: ShopAction.order(id: 1, .ship))
    }
    guard case .operationsFailed(let failures) = error else {
      Issue.record("expected operationsFailed, got \(String(describing: error))")
      return
    }
    #expect(
      failures.first?.error as? DispatchError
        == .scopeUnavailable(storeIdentifier: "desk", scope: "\\Desk.orders[id: 1]"))
    #expect(desk.model == before)
  }

  @Test func aThrowingElementPartKeepsItsChangeAsOverAnArray() throws {
    let dispatcher = Dispatcher()
    let desk = makeDesk()
    try dispatcher.register(store: desk)
    try dispatcher.dispatchSync(action: ShopAction.place(1))

    #expect(throws: DispatchError.self) { try dispatcher.dispatchSync(action: ShopAction.order(id: 1, .fail)) }

    #expect(Array(desk.model.orders) == [Order(id: 1, status: "failing")])
  }
}
