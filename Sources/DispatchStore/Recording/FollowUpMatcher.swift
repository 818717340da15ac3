// Follow-ups while verifying (proposal 0014): an operation that verify re-runs dispatches its follow-up actions again,
// and the session holds the records those follow-ups made when it was recorded. Verify replays those records in their
// turn; the follow-ups sent again are absorbed (they complete at once, successfully, without running) and matched to
// the records, so that nothing is applied twice and a follow-up the session never recorded is reported.

/// The follow-ups sent while ``Session/verify(against:mode:)`` re-runs a session: each matched to a record of the
/// session holding the same action, which no other follow-up matched.
final class FollowUpMatcher: Sendable {
  /// What verify re-runs, in the session's order: the steps not `continues`, nor rollbacks, hold the actions
  /// follow-ups are matched to.
  private let steps: [Session.VerifyStep]
  private let continues: [Bool]
  private let codecs: SessionCodecs
  /// Stores whose records hold redacted actions: a follow-up to one cannot be matched, and is absorbed unchecked.
  private let unchecked: Set<String>

  private struct State {
    /// For each store, how many records hold each action encoding that no follow-up matched yet; made on the first
    /// follow-up.
    var unmatched: [String: [[UInt8]: Int]]?
    /// The record being re-run.
    var current: (index: Int, dispatchID: TransactionID)?
    /// The first follow-up no record matched.
    var unrecorded: SessionError?
    /// The stores the session has records of; found on the first follow-up.
    var recorded: Set<String>?
  }

  private let state = LockedValue(State())

  /// Made before the re-run, on its thread, at no cost per step: most sessions have no follow-ups.
  init(steps: [Session.VerifyStep], continues: [Bool], codecs: SessionCodecs, unchecked: Set<String> = []) {
    self.steps = steps
    self.continues = continues
    self.codecs = codecs
    self.unchecked = unchecked
  }

  /// The steps follow-ups are matched to.
  private var matchable: some Sequence<Session.VerifyStep> {
    zip(steps, continues).lazy.filter { step, continues in !continues && !step.rollback }.map(\.0)
  }

  /// The stores the session has records of.
  private var recorded: Set<String> {
    if let known = state.withLock({ $0.recorded }) { return known }
    let found = Set(matchable.map(\.store))
    state.withLock { $0.recorded = found }
    return found
  }

  /// The record being re-run: follow-ups sent from now on are its operations'.
  func begin(index: Int, dispatchID: TransactionID) {
    state.withLock { $0.current = (index, dispatchID) }
  }

  /// The first follow-up that no record of the session matched.
  var unrecorded: SessionError? {
    state.withLock { $0.unrecorded }
  }

  /// Forgets the unrecorded follow-up of a transaction verify does not hold to its record (a cancelled one).
  func forgetUnrecorded() {
    state.withLock { $0.unrecorded = nil }
  }

  /// Matches a follow-up of `action`, sent to `storeIdentifier` (or every store that handles it), to the session.
  ///
  /// Its stores are those whose codec's action type is the action's; an action no store of the session records
  /// by its own type (one that stores map, or one the session does not record) cannot be checked, and is absorbed
  /// all the same. Encodes actions (the app's `Codable` code) outside the lock.
  func match(_ action: any ActionType, storeIdentifier: String?) {
    let typeName = String(reflecting: type(of: action))
    // Among the stores the session recorded: one it does not hold (left out by the recorder's privacy settings, or
    // never dispatched to) cannot be checked.
    let recorded = recorded
    let stores = codecs.codecs.filter { identifier, codec in
      codec.actionTypeName == typeName && (storeIdentifier == nil || storeIdentifier == identifier)
        && recorded.contains(identifier)
    }
    guard let codec = stores.first?.value, !stores.keys.contains(where: unchecked.contains) else { return }
    let encoder = JSONStreamEncoder()
    var bytes: [UInt8] = []
    guard (try? codec.encodeAction("", action, encoder, &bytes)) != nil else { return }
    let built = state.withLock { $0.unmatched == nil } ? countRecords(encoder: encoder) : nil
    let current = state.withLock { state -> (index: Int, dispatchID: TransactionID)?? in
      if state.unmatched == nil { state.unmatched = built ?? [:] }
      var matched = false
      for store in stores.keys {
        guard let count = state.unmatched?[store]?[bytes], count > 0 else { continue }
        state.unmatched?[store]?[bytes] = count - 1
        matched = true
      }
      guard !matched, state.unrecorded == nil else { return nil }
      return .some(state.current)
    }
    guard let current else { return }
    // The action's description is the app's code: made after the lock.
    let unrecorded = SessionError.unrecordedFollowUp(
      index: current?.index ?? -1, dispatchID: current?.dispatchID ?? TransactionID(rawValue: 0), action: "\(action)")
    state.withLock { if $0.unrecorded == nil { $0.unrecorded = unrecorded } }
  }

  /// How many records of each store hold each action encoding.
  private func countRecords(encoder: JSONStreamEncoder) -> [String: [[UInt8]: Int]] {
    var counts: [String: [[UInt8]: Int]] = [:]
    var bytes: [UInt8] = []
    for step in matchable {
      guard let codec = codecs.codecs[step.store] else { continue }
      bytes.removeAll(keepingCapacity: true)
      guard (try? codec.encodeAction(step.store, step.action, encoder, &bytes)) != nil else { continue }
      counts[step.store, default: [:]][bytes, default: 0] += 1
    }
    return counts
  }
}
