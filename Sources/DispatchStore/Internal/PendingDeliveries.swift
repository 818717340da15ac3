/// The notifications that putting models back leaves for observers (a rollback's, a restore's), delivered once every
/// lock is released.
final class PendingDeliveries {
  var pending: [() -> Void] = []

  /// Delivers them, in the order they were left.
  func deliver() {
    for delivery in pending { delivery() }
    pending = []
  }
}
