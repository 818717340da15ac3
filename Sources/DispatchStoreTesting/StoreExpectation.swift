import DispatchStore

/// How one store's model must change for an action: the change a test states, applied to the model the store had
/// before.
///
/// ```swift
/// await test.send(CounterAction.increase(by: 1), .store(counter) { $0.count = 1 })
/// ```
public struct StoreExpectation: Sendable {
  let storeIdentifier: String
  let apply: @Sendable (any ModelType) -> (any ModelType)?

  /// The change `store`'s model must have gone through.
  /// - Parameters:
  ///   - store: A store registered with the ``TestDispatcher``.
  ///   - change: Mutates the model as it was before into the model expected after.
  /// - Returns: The expectation.
  public static func store<Model: ModelType & Equatable, Action>(
    _ store: Store<Model, Action>, _ change: @escaping @Sendable (inout Model) -> Void
  ) -> StoreExpectation {
    StoreExpectation(storeIdentifier: store.identifier) { before in
      guard var model = before as? Model else { return nil }
      change(&model)
      return model
    }
  }
}
