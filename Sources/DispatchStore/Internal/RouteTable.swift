/// The stores handling each action type, looked up on every dispatch.
///
/// An open-addressing hash table keyed by the action type's metadata address. `Dictionary` hashes an
/// `ObjectIdentifier` with SipHash, which cost a dispatch about 250 instructions; a metadata address is already
/// unique and unpredictable enough that one multiplication spreads it over the table.
struct RouteTable {
  private var keys: [ObjectIdentifier?]
  private var values: [[any DispatchTarget]]
  private(set) var count = 0

  init() {
    keys = Array(repeating: nil, count: 8)
    values = Array(repeating: [], count: 8)
  }

  /// The stores handling actions of type `key`, in registration order; empty if none.
  subscript(key: ObjectIdentifier) -> [any DispatchTarget] {
    guard case .found(let slot) = find(key) else { return [] }
    return values[slot]
  }

  /// The stores handling actions of type `key`; the array is copied only when there are several.
  func lookup(_ key: ObjectIdentifier) -> StoreLookup {
    guard case .found(let slot) = find(key) else { return .none }
    return values[slot].count == 1 ? .one(values[slot][0]) : .several(values[slot])
  }

  /// Appends `store` to the stores handling `key`.
  mutating func append(_ store: any DispatchTarget, for key: ObjectIdentifier) {
    switch find(key) {
    case .found(let slot):
      values[slot].append(store)  // In place: copied only while a dispatch still holds the previous array.
    case .empty(let slot):
      keys[slot] = key
      values[slot] = [store]
      count += 1
      if count * 4 > keys.count * 3 { grow() }
    }
  }

  /// Removes `store` from the stores handling `key`; forgets `key` once none is left.
  mutating func remove(_ store: any DispatchTarget, for key: ObjectIdentifier) {
    guard case .found(let slot) = find(key) else { return }
    values[slot].removeAll { $0 === store }
    guard values[slot].isEmpty else { return }
    // Re-inserts the rest of the probe run, so that every key stays reachable from its home slot.
    keys[slot] = nil
    count -= 1
    var next = (slot + 1) & (keys.count - 1)
    while let moved = keys[next] {
      let stores = values[next]
      keys[next] = nil
      values[next] = []
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
    values = Array(repeating: [], count: oldKeys.count * 2)
    for (slot, key) in oldKeys.enumerated() {
      guard let key, case .empty(let target) = find(key) else { continue }
      keys[target] = key
      values[target] = oldValues[slot]
    }
  }
}

/// The registered stores a dispatch reaches.
enum StoreLookup {
  case none
  case one(any DispatchTarget)
  /// Two or more, in registration order.
  case several([any DispatchTarget])

  init(_ store: (any DispatchTarget)?) {
    if let store { self = .one(store) } else { self = .none }
  }
}
