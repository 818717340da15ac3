/// Where and when a store observer is called.
///
/// Observers hear each change of the model once. A ``SynchronousReducer``'s reduction is one change, announced
/// with the model it produced, also while other threads change the same store. An operation's changes are
/// announced when it finishes, with the model as it is then: operations of one store that run at the same time
/// may share one notification (the first to finish carries both changes), and an operation that changed nothing
/// is not announced.
public enum ObserverDelivery: Sendable, Hashable {
  /// On the dispatcher's main thread (see ``MainQueue``), in order, after the operation finished. The default.
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
