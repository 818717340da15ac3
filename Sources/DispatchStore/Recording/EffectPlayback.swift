import Foundation

/// What an effect's body gave while it was recorded: the value it returned, or the description of the error it threw.
enum EffectOutcome: Sendable {
  case value(JSONValue)
  case failure(String)
}

/// An effect a dispatch's operation fetched: its key, what the fetch gave, and the operation's transaction (`nil`
/// in a line written before effect lines named it), whose records keep it (proposal 0027).
struct RecordedEffect: Sendable {
  let key: String
  let outcome: EffectOutcome
  let transactionID: TransactionID?
}

/// The effects of a session being verified: each read once, in order, by the dispatch and key they were recorded
/// under, and by the transaction that fetched them where the line names it: two stores of one dispatch may fetch the
/// same key, in either order.
final class EffectPlayback: Sendable {
  private struct State {
    var effects: [TransactionID: [RecordedEffect]]
    /// The dispatch and the transaction being re-run.
    var current: (dispatchID: TransactionID, transactionID: TransactionID)?
    var missing: SessionError?
  }

  private let state: LockedValue<State>

  init(effects: [TransactionID: [RecordedEffect]]) {
    state = LockedValue(State(effects: effects))
  }

  /// The transaction being re-run, and its dispatch: effects are read from what they recorded.
  func begin(_ dispatchID: TransactionID, transactionID: TransactionID) {
    state.withLock { $0.current = (dispatchID, transactionID) }
  }

  /// Takes the next value recorded under `key` in the current dispatch, by the current transaction or by a line that
  /// names none.
  func take(_ key: String) -> Result<EffectOutcome, SessionError> {
    state.withLock { state in
      guard let current = state.current,
        let position = state.effects[current.dispatchID]?.firstIndex(where: {
          $0.key == key && ($0.transactionID == nil || $0.transactionID == current.transactionID)
        }),
        let outcome = state.effects[current.dispatchID]?.remove(at: position).outcome
      else {
        let error = SessionError.missingEffect(
          dispatchID: state.current?.dispatchID ?? TransactionID(rawValue: 0), key: key)
        if state.missing == nil { state.missing = error }
        return .failure(error)
      }
      return .success(outcome)
    }
  }

  /// The first effect an operation asked for that the session does not have.
  var missing: SessionError? {
    state.withLock { $0.missing }
  }

  /// Forgets the missing effect of a transaction verify does not hold to its record (a cancelled one).
  func forgetMissing() {
    state.withLock { $0.missing = nil }
  }

  /// A value recorded in `dispatchID` that no operation read.
  func unused(in dispatchID: TransactionID) -> SessionError? {
    state.withLock { state in
      guard let first = state.effects[dispatchID]?.first else { return nil }
      return .unusedEffect(dispatchID: dispatchID, key: first.key)
    }
  }
}
