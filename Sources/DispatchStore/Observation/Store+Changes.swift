extension Store {
  /// One change of a store's model, as observers (``Store/observe(synchronously:_:)``) and
  /// ``Store/changes(bufferingNewest:)`` receive it.
  public struct Change: Sendable {
    /// The model right after the change.
    public let model: Model
    /// The action that made the change (for a restore, the action of the record restored or undone).
    public let action: Action
    /// Whether the recorder restored the model instead of a dispatch changing it; no reducer ran.
    ///
    /// Restores are ``RecorderMiddleware/undo(byRecord:)``, ``RecorderMiddleware/redo(byRecord:)``,
    /// ``RecorderMiddleware/jump(to:byRecord:)`` and ``Session/restore(into:)``. An observer that starts side effects
    /// skips them, so scrubbing through history repeats none.
    public let isRestore: Bool

    @usableFromInline
    init(model: Model, action: Action, isRestore: Bool) {
      self.model = model
      self.action = action
      self.isRestore = isRestore
    }
  }

  /// The changes of the model from now on, as an async sequence.
  ///
  /// ```swift
  /// for await change in counter.changes() {
  ///   print(change.model.count, "after", change.action)
  /// }
  /// ```
  ///
  /// Changes are taken in the order they happen, on the thread that made them (as a synchronous observer), and the
  /// newest `bufferingNewest` wait for the consumer: by default only the latest, so a slow consumer skips to the
  /// newest model and memory never grows. The sequence ends when the store is released; the observation ends when the
  /// sequence ends, when the task iterating it is cancelled, or when it is released.
  /// - Parameter bufferingNewest: How many changes wait for a consumer slower than the store (at least one); older
  ///   ones are dropped when a newer one arrives.
  /// - Returns: An async sequence of the store's changes.
  public func changes(bufferingNewest: Int = 1) -> AsyncStream<Change> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: Change.self, bufferingPolicy: .bufferingNewest(max(1, bufferingNewest)))
    // The store's observer entry holds the finisher: releasing the store ends the sequence.
    let finisher = SequenceFinisher(continuation)
    let token = observe(synchronously: true) { change in finisher.continuation.yield(change) }
    continuation.onTermination = { _ in token.cancel() }
    return stream
  }
}
