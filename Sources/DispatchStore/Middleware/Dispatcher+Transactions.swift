extension Dispatcher {
  /// The transactions this dispatcher finishes from now on, as an async sequence: what middleware sees in
  /// `didDispatch`.
  ///
  /// ```swift
  /// for await transaction in dispatcher.transactions(bufferingNewest: 100) {
  ///   print(transaction)  // [0187…] counter <- increase(by: 1)
  /// }
  /// ```
  ///
  /// The newest `bufferingNewest` transactions wait for the consumer: by default only the latest. The sequence ends
  /// when the dispatcher is released; it stops being fed when it ends, when the task iterating it is cancelled, or when
  /// it is released.
  /// - Parameter bufferingNewest: How many transactions wait for a consumer slower than the dispatcher (at least
  ///   one); older ones are dropped when a newer one arrives.
  /// - Returns: An async sequence of finished transactions.
  public func transactions(bufferingNewest: Int = 1) -> AsyncStream<Transaction> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: Transaction.self, bufferingPolicy: .bufferingNewest(max(1, bufferingNewest)))
    let feed = TransactionFeed(SequenceFinisher(continuation))
    register(middleware: feed)
    // Weakly: the feed holds the continuation, which holds this closure.
    continuation.onTermination = { [weak self, weak feed] _ in
      if let feed { self?.unregister(middleware: feed) }
    }
    return stream
  }
}

/// The middleware behind ``Dispatcher/transactions(bufferingNewest:)``; the dispatcher holds it, so releasing the
/// dispatcher releases it and ends the sequence.
final class TransactionFeed: Middleware {
  let finisher: SequenceFinisher<Transaction>

  init(_ finisher: SequenceFinisher<Transaction>) {
    self.finisher = finisher
  }

  func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

  func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
    finisher.continuation.yield(transaction)
  }
}
