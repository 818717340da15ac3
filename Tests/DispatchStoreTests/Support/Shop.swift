@testable import DispatchStore

/// A parent model with a part (the cart) and a collection of identified elements (the orders), for child stores and
/// combined reducers.
struct Cart: ModelType, Equatable {
  var items: [String] = []
}

struct Order: Identifiable, Equatable, Sendable {
  let id: Int
  var status = "new"
}

struct Shop: ModelType, Equatable {
  var cart = Cart()
  var orders: [Order] = []
  var visits = 0
  /// The parts that ran, in order.
  var log: [String] = []
}

enum CartAction: ActionType, Equatable {
  case add(String)
  case clear
}

enum OrderAction: Sendable, Equatable {
  case ship
  /// Marks the order, then throws.
  case fail
}

enum ShopAction: ActionType, Equatable {
  case cart(CartAction)
  case order(id: Int, OrderAction)
  case place(Int)
  case remove(Int)
  case visit
}

final class CartReducer: SynchronousReducer<Cart, CartAction>, @unchecked Sendable {
  override func reduce(_ action: CartAction, into model: inout Cart) throws {
    switch action {
    case .add(let item): model.items.append(item)
    case .clear: model.items = []
    }
  }
}

func makeShop() -> Store<Shop, ShopAction> {
  Store(
    identifier: "shop", model: Shop(),
    reducer: .combine([
      .scope(\.cart, action: { if case .cart(let action) = $0 { action } else { nil } }, reduce: CartReducer().reduce),
      .reduce { action, shop in
        if case .cart = action { shop.log.append("cart") }
      },
      .forEach(\.orders, action: { if case .order(let id, let action) = $0 { (id, action) } else { nil } }) {
        action, order in
        switch action {
        case .ship: order.status = "shipped"
        case .fail:
          order.status = "failing"
          throw TestFailure(reason: "order \(order.id)")
        }
      },
      .reduce { action, shop in
        switch action {
        case .place(let id): shop.orders.append(Order(id: id))
        case .remove(let id): shop.orders.removeAll { $0.id == id }
        case .visit: shop.visits += 1
        case .cart, .order: break
        }
        shop.log.append("last")
      },
    ]))
}
