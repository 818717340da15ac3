/// The type-erased view of a ``Store`` that middleware and registry look-ups see.
///
/// Only ``Store`` conforms; cast to `Store<Model, Action>` to reach the typed model.
public protocol AnyStore: AnyObject, Sendable {
  /// The identifier the store is registered under.
  var identifier: String { get }
  /// A snapshot of the store's model, type-erased.
  var anyModel: any ModelType { get }
}

/// A store's model and action types, for the registry's and the recorder's type checks.
protocol TypedStore: AnyStore {
  /// The type of the actions the store handles.
  var actionType: any ActionType.Type { get }
  /// The type of the store's model.
  var modelType: any ModelType.Type { get }
  /// A snapshot of the store's model, type-erased; `note` runs in the same critical section, so that what it notes
  /// about the store (a hook's record of the read, ``TransactionHook/noteRead(of:by:reader:)``) holds the model read.
  func anyModel(noting note: () -> Void) -> any ModelType
}
