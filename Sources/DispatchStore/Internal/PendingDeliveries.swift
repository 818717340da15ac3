/// The notifications that putting models back leaves for observers (a rollback's, a restore's), delivered once every
/// lock is released.
final class PendingDeliveries {
  /// Each store's delivery, whose synchronous turn this thread holds from when it was left.
  private var pending: [(store: any DeliveringStore, deliver: () -> Void)] = []

  /// Leaves `delivery` of `store`'s notification, whose synchronous turn the calling thread took.
  func add(for store: any DeliveringStore, _ delivery: @escaping () -> Void) {
    pending.append((store, delivery))
  }

  /// Delivers them, in the order they were left.
  ///
  /// While one is delivered, the thread holds the turns of those after it too: if an observer blocks in a `.sync`
  /// dispatch, the threads waiting for any of those turns go on (``ThreadContext/blocking(_:)``).
  func deliver() {
    let stores = pending.map(\.store)
    for index in pending.indices {
      ThreadContext.holdingTurns(of: stores[(index + 1)...]) { pending[index].deliver() }
    }
    pending = []
  }
}
