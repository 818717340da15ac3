/// The stores a closure store waits for before it handles an action (Flux `waitFor`): the same for every action,
/// or chosen per action.
///
/// ```swift
/// let price = Store(identifier: "price", model: Price(), waitFor: ["country"]) { (action: TripAction, model) in
///   ...
/// }
/// let booking = Store(
///   identifier: "booking", model: Booking(),
///   waitFor: .perAction { action in action == .confirm ? ["price", "account"] : [] }
/// ) { (action: TripAction, model) in
///   ...
/// }
/// ```
///
/// It is the closure stores' counterpart of ``Reducer/waitList(for:)``.
public struct WaitList<Action: ActionType>: Sendable, ExpressibleByArrayLiteral {
  /// The identifiers to wait for, per action.
  let identifiers: @Sendable (Action) -> [String]

  private init(_ identifiers: @escaping @Sendable (Action) -> [String]) {
    self.identifiers = identifiers
  }

  /// Waits for the same stores before every action.
  /// - Parameter identifiers: The identifiers of the stores to wait for.
  public init(arrayLiteral identifiers: String...) {
    self.init { _ in identifiers }
  }

  /// Waits, before each action, for the stores `identifiers` returns for it.
  /// - Parameter identifiers: Returns the identifiers of the stores to wait for before `action`; called once per
  ///   dispatch, on the dispatching thread, outside the library's locks.
  /// - Returns: The wait list.
  public static func perAction(_ identifiers: @escaping @Sendable (Action) -> [String]) -> WaitList {
    WaitList(identifiers)
  }
}
