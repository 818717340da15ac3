import Observation

/// A store's model for the Observation framework: SwiftUI views and `withObservationTracking` that read a field
/// through it are told when that field changes, and not when another one does.
///
/// ```swift
/// let cart = cartStore.observable()
/// // In a SwiftUI view's body, or any observation tracking:
/// Text(cart.total.formatted())  // re-rendered when `total` changes, not when `items` alone does
/// ```
///
/// Tracking is per key path read: `cart.total` (a field, through dynamic member lookup) or `cart[\.address.city]`
/// (any key path). A read of an `Equatable` value is told only when that value changes; a read of another value is
/// told at every change of the model, as is a read of ``model``. All the fields a transaction changed are set at
/// once, so a tracker hears one change per notification of the store, however many of its fields changed.
///
/// The model here follows the store's observer notifications (``Store/observe(synchronously:_:)``): by default on
/// the main thread, which is the main actor on Apple platforms, so that SwiftUI sees mutations there. It stops
/// following the store when released.
///
/// > Important: Safe to read from any thread. Each read is a consistent snapshot of the store's model as of the
/// > last notification delivered here.
@dynamicMemberLookup
public final class ObservedModel<Model: ModelType>: Observable, Sendable {
  private struct State {
    var model: Model
    /// Whether a notification arrived, so that the model read after subscribing does not overwrite it.
    var notified = false
    /// Whether ``model`` was read: only then is every change announced for it.
    var wholeModelRead = false
    /// The key paths read so far, with what tells whether a change of the model changed each.
    var tracked: [TrackedPath: Tracked] = [:]
  }

  /// A key path read through this object.
  ///
  /// `@unchecked Sendable`: a key path is immutable once made.
  private struct TrackedPath: Hashable, @unchecked Sendable {
    let keyPath: AnyKeyPath
  }

  /// A model key path that was read: the registrar's key path for it, made once, and whether a change of the model
  /// changed its value.
  ///
  /// `@unchecked Sendable`: it holds key paths, which are immutable once made, and a closure that only captures one
  /// and calls the value type's `==`.
  private struct Tracked: @unchecked Sendable {
    let registrarKeyPath: KeyPath<ObservedModel, Void>
    let changed: (Model, Model) -> Bool
  }

  private let registrar = ObservationRegistrar()
  private let state: LockedValue<State>
  /// Ends the store observation when this object is released.
  private let token = LockedValue<ObservationToken?>(nil)

  init<Action>(store: Store<Model, Action>, synchronously: Bool) {
    state = LockedValue(State(model: store.model))
    let observation = store.observe(synchronously: synchronously) { [weak self] change in self?.apply(change.model) }
    // Changes made before the observation started are not notified: take the model as it is now, unless a
    // notification already brought a newer one.
    let current = store.model
    state.withLock { state in
      if !state.notified { state.model = current }
    }
    token.withLock { $0 = observation }
  }

  /// The whole model; a read is told about every change of it.
  public var model: Model {
    registrar.access(self, keyPath: \.model)
    return state.withLock { state in
      state.wholeModelRead = true
      return state.model
    }
  }

  /// The value at `keyPath` of the model; a read is told when that value changes, or at every change of the model
  /// if the value is not `Equatable`.
  /// - Parameter keyPath: A key path of the model, to a field or deeper.
  public subscript<Value>(keyPath: KeyPath<Model, Value>) -> Value {
    read(keyPath) { Self.changeTest(keyPath) }
  }

  /// The field `keyPath` of the model, as ``subscript(_:)`` reads it.
  public subscript<Value>(dynamicMember keyPath: KeyPath<Model, Value>) -> Value {
    self[keyPath]
  }

  /// Whether a change of the model changed the value at `keyPath`: `!=` for an `Equatable` value, found once per
  /// key path; otherwise always.
  private static func changeTest<Value>(_ keyPath: KeyPath<Model, Value>) -> (Model, Model) -> Bool {
    guard let equatable = Value.self as? any Equatable.Type else { return { _, _ in true } }
    func test<E: Equatable>(_: E.Type) -> (Model, Model) -> Bool {
      // The same key path, with its value type known to be `Equatable`.
      let typed = keyPath as! KeyPath<Model, E>
      return { old, new in old[keyPath: typed] != new[keyPath: typed] }
    }
    return test(equatable)
  }

  /// The key path the registrar knows a model key path by: one per model key path, equal for equal ones.
  private subscript(tracking keyPath: AnyKeyPath) -> Void { () }

  private func read<Value>(
    _ keyPath: KeyPath<Model, Value>, changeTest: () -> (Model, Model) -> Bool
  ) -> Value {
    let path = TrackedPath(keyPath: keyPath)
    let (model, known) = state.withLock { state in (state.model, state.tracked[path]?.registrarKeyPath) }
    if let known {
      registrar.access(self, keyPath: known)
    } else {
      // First read of this key path: made outside the lock (making a key path allocates), kept for the next reads.
      let tracked = Tracked(registrarKeyPath: \.[tracking: keyPath], changed: changeTest())
      state.withLock { state in
        if state.tracked[path] == nil { state.tracked[path] = tracked }
      }
      registrar.access(self, keyPath: tracked.registrarKeyPath)
    }
    // Outside the lock: the key path may be a computed property.
    return model[keyPath: keyPath]
  }

  /// Takes the model a notification brought; tells the trackers of what changed, outside the lock.
  private func apply(_ new: Model) {
    let (old, tracked, wholeModelRead) = state.withLock { state in
      (state.model, state.tracked, state.wholeModelRead)
    }
    var changed: [KeyPath<ObservedModel, Void>] = []
    for entry in tracked.values where entry.changed(old, new) { changed.append(entry.registrarKeyPath) }
    if wholeModelRead { registrar.willSet(self, keyPath: \.model) }
    for keyPath in changed { registrar.willSet(self, keyPath: keyPath) }
    state.withLock { state in
      state.model = new
      state.notified = true
    }
    for keyPath in changed { registrar.didSet(self, keyPath: keyPath) }
    if wholeModelRead { registrar.didSet(self, keyPath: \.model) }
  }
}

extension Store {
  /// A view of this store's model for the Observation framework, which tells SwiftUI views and
  /// `withObservationTracking` about changes of the fields they read.
  ///
  /// ```swift
  /// let counter = counterStore.observable()
  /// withObservationTracking { _ = counter.count } onChange: { print("count will change") }
  /// ```
  /// - Parameter synchronously: `false` (the default) to follow the store on the dispatcher's main queue (the main
  ///   actor on Apple platforms, where SwiftUI reads); `true` to follow it on the thread that changed the store.
  /// - Returns: An observable model that follows this store until it is released.
  public func observable(synchronously: Bool = false) -> ObservedModel<Model> {
    ObservedModel(store: self, synchronously: synchronously)
  }
}
