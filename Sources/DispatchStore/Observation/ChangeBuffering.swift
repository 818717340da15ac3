/// How many elements an async sequence of changes or transactions keeps for a consumer that is slower than the
/// store: never without bound.
public enum ChangeBuffering: Sendable, Hashable {
  /// Keeps only the latest element: a slow consumer skips to the newest state. The default.
  case latest
  /// Keeps the newest `count` elements (at least one), dropping the oldest when a newer one arrives.
  case newest(Int)

  /// The equivalent `AsyncStream` policy.
  func policy<Element>(for _: Element.Type) -> AsyncStream<Element>.Continuation.BufferingPolicy {
    switch self {
    case .latest: .bufferingNewest(1)
    case .newest(let count): .bufferingNewest(max(1, count))
    }
  }
}

/// Ends an async sequence when the object that feeds it is released: the store's observer entry, or the
/// dispatcher's middleware list, holds it.
final class SequenceFinisher<Element: Sendable>: Sendable {
  let continuation: AsyncStream<Element>.Continuation

  init(_ continuation: AsyncStream<Element>.Continuation) {
    self.continuation = continuation
  }

  deinit {
    continuation.finish()
  }
}
