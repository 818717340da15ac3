// The one call into code compiled for the store's types (`Store.specialised`): what a type-erased dispatch asks of it.

extension Store {
  /// The work ``specialised`` runs: made here, inlinable, so that it is compiled in the app's module for its
  /// `Model` and `Action`.
  @inlinable
  static func specialisedWork(_ store: Store, _ action: Action, _ work: SpecialisedWork) -> SpecialisedOutcome {
    switch work {
    case .announce:
      store.announceChange(of: action)
      return .announced
    case .reduce(let hooked):
      guard store.reducesInPlace else { return .notReducedInPlace }
      return .reduced(error: store.reduceInPlace(action, hooked: hooked))
    case .fileFinished(let finished):
      store.fileFinishedOperation(action, finished)
      return .filed
    }
  }
}

/// What ``Store/specialised`` is asked to do.
@usableFromInline
enum SpecialisedWork {
  case announce
  /// Reduce in place; file the entry with the hook, if any.
  case reduce(HookedTransaction?)
  /// File the entry of an operation that finished (``Store/fileFinishedOperation(_:_:)``). By pointer, valid for
  /// the call: the payload would otherwise make every case, and every plain dispatch's work, larger.
  case fileFinished(UnsafePointer<FinishedOperation>)
}

/// What ``Store/specialised`` did.
@usableFromInline
enum SpecialisedOutcome {
  case announced
  /// A ``SynchronousReducer`` reduced the action; the error is the one it threw.
  case reduced(error: (any Error)?)
  /// The reducer returns operations.
  case notReducedInPlace
  /// The entry was filed.
  case filed
}
