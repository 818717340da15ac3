/// The stores handling each action type, looked up on every dispatch.
///
/// An open-addressing hash table keyed by the action type's metadata address. `Dictionary` hashes an
/// `ObjectIdentifier` with SipHash (see proposal 0004); a metadata address is already unique and unpredictable
/// enough that one multiplication spreads it over the table.
struct RouteTable {
  private var keys: [ObjectIdentifier?]
  private var values: [Route]
  private(set) var count = 0

  init() {
    keys = Array(repeating: nil, count: 8)
    values = Array(repeating: Route(), count: 8)
  }

  /// The stores handling actions of type `key`, in registration order; empty if none.
  subscript(key: ObjectIdentifier) -> [StoreEntry] {
    guard case .found(let slot) = find(key) else { return [] }
    return values[slot].stores
  }

  /// The stores handling actions of type `key`, with the wait graph cached for them if there are several.
  /// - Parameter generation: The registry's generation, which the caller must match to use the cached graph.
  @inline(__always)
  func lookup(_ key: ObjectIdentifier, generation: UInt64) -> StoreLookup {
    guard case .found(let slot) = find(key) else { return .none }
    let route = values[slot]
    return route.stores.count == 1
      ? .one(route.stores[0]) : .several(route.stores, waitGraph: route.waitGraph, generation: generation)
  }

  /// Keeps `graph` for the stores handling `key`; returns the graph it replaces, for the caller to release after
  /// its lock.
  mutating func cache(_ graph: CachedWaitGraph, for key: ObjectIdentifier) -> CachedWaitGraph? {
    guard case .found(let slot) = find(key) else { return nil }
    defer { values[slot].waitGraph = graph }
    return values[slot].waitGraph
  }

  /// Appends `store` to the stores handling `key`.
  mutating func append(_ store: StoreEntry, for key: ObjectIdentifier) {
    switch find(key) {
    case .found(let slot):
      values[slot].stores.append(store)  // In place: copied only while a dispatch still holds the previous array.
    case .empty(let slot):
      keys[slot] = key
      values[slot] = Route(stores: [store])
      count += 1
      if count * 4 > keys.count * 3 { grow() }
    }
  }

  /// Removes `store` from the stores handling `key`; forgets `key` once none is left.
  mutating func remove(_ store: AnyObject, for key: ObjectIdentifier) {
    guard case .found(let slot) = find(key) else { return }
    values[slot].stores.removeAll { $0.store === store }
    guard values[slot].stores.isEmpty else { return }
    // Re-inserts the rest of the probe run, so that every key stays reachable from its home slot.
    keys[slot] = nil
    count -= 1
    var next = (slot + 1) & (keys.count - 1)
    while let moved = keys[next] {
      let stores = values[next]
      keys[next] = nil
      values[next] = Route()
      guard case .empty(let target) = find(moved) else { preconditionFailure("RouteTable: duplicate key") }
      keys[target] = moved
      values[target] = stores
      next = (next + 1) & (keys.count - 1)
    }
  }

  private enum Slot {
    case found(Int)
    case empty(Int)
  }

  /// The slot holding `key`, or the empty slot where it belongs (linear probing; the table is never full).
  private func find(_ key: ObjectIdentifier) -> Slot {
    let mask = keys.count - 1
    var slot = Self.home(of: key, mask: mask)
    while let occupant = keys[slot] {
      if occupant == key { return .found(slot) }
      slot = (slot + 1) & mask
    }
    return .empty(slot)
  }

  /// Fibonacci hashing of the address: the high bits of a multiplication by 2^64 divided by the golden ratio.
  private static func home(of key: ObjectIdentifier, mask: Int) -> Int {
    let address = UInt64(UInt(bitPattern: key))
    let spread = address &* 0x9E37_79B9_7F4A_7C15
    return Int(truncatingIfNeeded: spread >> 32) & mask
  }

  private mutating func grow() {
    let oldKeys = keys
    let oldValues = values
    keys = Array(repeating: nil, count: oldKeys.count * 2)
    values = Array(repeating: Route(), count: oldKeys.count * 2)
    for (slot, key) in oldKeys.enumerated() {
      guard let key, case .empty(let target) = find(key) else { continue }
      keys[target] = key
      values[target] = oldValues[slot]
    }
  }
}

/// The stores handling one action type, and the wait graph last built for them.
struct Route {
  var stores: [StoreEntry] = []
  /// Checked against the registry's generation before use, so it need not be cleared when stores come and go.
  var waitGraph: CachedWaitGraph?
}

/// A wait graph built for a route, kept so that the next dispatch that gets the same wait lists from the same
/// stores skips building it again: most apps dispatch the same action types over and over, with fixed wait lists.
///
/// Only graphs that were built without error are kept; a dispatch whose wait lists differ builds its own. The
/// generation is the registry's when the stores were looked up: registering or removing any store changes it, so
/// an identifier that resolved to a registered store is checked again after the registry changed.
final class CachedWaitGraph: Sendable {
  let generation: UInt64
  let waitLists: [[String]]
  let graph: WaitGraph

  init(generation: UInt64, waitLists: [[String]], graph: WaitGraph) {
    self.generation = generation
    self.waitLists = waitLists
    self.graph = graph
  }
}

/// The registered stores a dispatch reaches.
enum StoreLookup {
  case none
  case one(StoreEntry)
  /// Two or more, in registration order, with the wait graph last built for them, if any (see ``CachedWaitGraph``).
  case several([StoreEntry], waitGraph: CachedWaitGraph?, generation: UInt64)

  init(_ store: StoreEntry?) {
    if let store { self = .one(store) } else { self = .none }
  }
}
