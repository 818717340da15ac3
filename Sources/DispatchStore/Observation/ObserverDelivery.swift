/// Where a store's observer is called (``Store/observe(synchronously:_:)``).
@usableFromInline
enum ObserverDelivery: Sendable, Hashable {
  /// On the dispatcher's main queue (see ``MainQueue``), in the order of the changes.
  case mainThread
  /// On the thread that made the change, in the order of the changes, before that change's dispatch completes.
  case synchronous
}
