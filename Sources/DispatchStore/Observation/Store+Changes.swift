extension Store {
  /// One change of a store's model, as ``Store/changes(buffering:)`` delivers it.
  public struct Change: Sendable {
    /// The model right after the change.
    public let model: Model
    /// The action that made the change (for a restore, the action of the record restored or undone).
    public let action: Action
    /// Whether a dispatch made the change or the recorder restored it.
    public let origin: ChangeOrigin
  }

  /// The changes of the model from now on, as an async sequence.
  ///
  /// ```swift
  /// for await change in counter.changes() {
  ///   print(change.model.count, "after", change.action)
  /// }
  /// ```
  ///
  /// Changes are taken in the order they happen, on the thread that made them (as a `.synchronous` observer), and
  /// kept for the consumer as `buffering` says: by default only the latest, so a slow consumer skips to the newest
  /// model and memory never grows. The sequence ends when the store is released; the observation ends when the
  /// sequence ends, when the task iterating it is cancelled, or when it is released.
  /// - Parameter buffering: How many changes wait for a consumer slower than the store.
  /// - Returns: An async sequence of the store's changes.
  public func changes(buffering: ChangeBuffering = .latest) -> AsyncStream<Change> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: Change.self, bufferingPolicy: buffering.policy(for: Change.self))
    // The store's observer entry holds the finisher: releasing the store ends the sequence.
    let finisher = SequenceFinisher(continuation)
    let token = observe(delivery: .synchronous) { model, action, origin in
      finisher.continuation.yield(Change(model: model, action: action, origin: origin))
    }
    continuation.onTermination = { _ in token.cancel() }
    return stream
  }
}
