extension Store {
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
  public func changes(bufferingNewest: Int = 1) -> AsyncStream<ModelChange<Model, Action>> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: ModelChange<Model, Action>.self, bufferingPolicy: .bufferingNewest(max(1, bufferingNewest)))
    // The store's observer entry holds the finisher: releasing the store ends the sequence.
    let finisher = SequenceFinisher(continuation)
    let token = observe(synchronously: true) { change in finisher.continuation.yield(change) }
    continuation.onTermination = { _ in token.cancel() }
    return stream
  }
}
