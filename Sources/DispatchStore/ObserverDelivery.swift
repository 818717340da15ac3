/// Where and when a store observer is called.
public enum ObserverDelivery: Sendable, Hashable {
  /// On the dispatcher's main thread (see ``MainQueue``), in order, after the operation finished. The default.
  case mainThread
  /// On the thread that finished the operation, before the dispatch's completion runs, in order.
  ///
  /// If another thread is already delivering this store's synchronous notifications, that thread delivers this
  /// one right after its own, so notifications never overlap and never reorder.
  case synchronous
}
