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
