/// Where and when a store observer is called.
///
/// Observers hear each change of the model once, with the model that change produced, in the order of the changes,
/// also while other threads change the same store. A change is one ``SynchronousReducer`` reduction, or one
/// ``ActionOperation/updateModel(_:)`` call, announced in the critical section that made it.
///
/// Changes made with ``Store/updateModel(_:)`` are the exception, by choice of the caller: the store cannot tell
/// which operation made them, so they are announced when an operation of the store next finishes, with that
/// operation's action and the model as it is then. Several such changes, from operations running at the same
/// time, then share one notification; an operation that changed nothing this way is not announced.
public enum ObserverDelivery: Sendable, Hashable {
  /// On the dispatcher's main thread (see ``MainQueue``), in the order of the changes. The default.
  case mainThread
  /// On the thread that made the change, in the order of the changes, before that change's dispatch completes.
  ///
  /// Notifications of one store never overlap: a thread whose change comes while another thread is delivering
  /// waits for its turn, then delivers its own. A change made from inside a synchronous observer is delivered by
  /// the thread whose turn it is, after the notification being delivered; its dispatch may complete first.
  ///
  /// > Important: Do not block a synchronous observer waiting for another thread's dispatch to the same store:
  /// > that thread may be waiting for the observer's turn to end.
  case synchronous
}
