/// The reads of other stores' models a session recorded (`ActionOperation.model(of:as:)`), as its verify gives them
/// to the re-run: each transaction's reads of a store in the order they were made (proposal 0022).
final class ReadPlayback: Sendable {
  private struct State {
    var reads: [TransactionID: [RecordedRead]]
    /// The transaction being re-run.
    var current: TransactionID?
  }

  private let state: LockedValue<State>
  /// The model a read names, from the session; `nil` where it holds none to give (a store whose models it redacts).
  private let model: @Sendable (RecordedRead) -> (any ModelType)?

  init(reads: [TransactionID: [RecordedRead]], model: @escaping @Sendable (RecordedRead) -> (any ModelType)?) {
    state = LockedValue(State(reads: reads))
    self.model = model
  }

  /// The transaction being re-run: reads are taken from its recording.
  func begin(_ transactionID: TransactionID) {
    state.withLock { $0.current = transactionID }
  }

  /// The model the recorded run read next of `store` in the current transaction, or `nil` if it has no more reads of
  /// it: a read the session has no line for (a session of an earlier release, a read of a record compaction folded
  /// away) reads the store's own model.
  func recordedModel(of store: String) -> (any ModelType)? {
    let read = state.withLock { state -> RecordedRead? in
      guard let current = state.current, let position = state.reads[current]?.firstIndex(where: { $0.store == store })
      else { return nil }
      return state.reads[current]?.remove(at: position)
    }
    // Decoded after the lock: the model's `Codable` conformance is the app's code.
    return read.flatMap(model)
  }
}
