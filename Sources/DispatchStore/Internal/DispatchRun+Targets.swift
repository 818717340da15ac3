extension DispatchRun {
  /// The stores a dispatch reaches, one per node: the first kept apart, so that one store needs no array.
  struct Targets: Sendable {
    /// The store of node 0: the only one, usually.
    ///
    /// A stored property, so that it is read without being copied.
    let first: StoreEntry
    /// Every store, in node order, when there are several; `nil` for one.
    let all: [StoreEntry]?

    static func one(_ store: StoreEntry) -> Targets { Targets(first: store, all: nil) }

    static func several(_ stores: [StoreEntry]) -> Targets {
      Targets(first: stores[0], all: stores.count > 1 ? stores : nil)
    }

    var count: Int { all?.count ?? 1 }

    /// Calls `body` with the stores, borrowed from one buffer: per store, the buffer or the store would be retained
    /// and released.
    @inline(__always)
    func withUnsafeBufferPointer<Result>(
      _ body: (UnsafeBufferPointer<StoreEntry>) throws -> Result
    ) rethrows -> Result {
      guard let all else {
        return try withUnsafePointer(to: first) { try body(UnsafeBufferPointer(start: $0, count: 1)) }
      }
      return try all.withUnsafeBufferPointer(body)
    }

    /// Calls `body` with the kind and the store of node `index`, both borrowed.
    @inline(__always)
    func withEntry<Result>(at index: Int, _ body: (StoreKind, AnyObject) throws -> Result) rethrows -> Result {
      try withUnsafeBufferPointer { try $0.withEntry(at: index, body) }
    }

    /// The stores' identifiers, in node order.
    var identifiers: [String] {
      withUnsafeBufferPointer { $0.map(\.identifier) }
    }
  }
}
