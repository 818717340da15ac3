import Testing

@testable import DispatchStore

@Suite("RouteTable", .watchdog)
struct RouteTableTests {
  /// Distinct keys: the identities of live objects, as distinct as action metatypes.
  final class Key {}

  @Test func findsEveryKeyAfterGrowingAndRemovingInAnyOrder() {
    let keys = (0..<200).map { _ in Key() }
    let stores = (0..<200).map { makeCounterStore("s\($0)") }
    var table = RouteTable()
    for (index, key) in keys.enumerated() {
      table.append(StoreEntry(stores[index]), for: ObjectIdentifier(key))
    }
    // A second store for every third key keeps registration order.
    for index in stride(from: 0, to: 200, by: 3) {
      table.append(StoreEntry(stores[(index + 1) % 200]), for: ObjectIdentifier(keys[index]))
    }
    #expect(table.count == 200)

    var generator = SplitMix(seed: 7)
    var removed = Set<Int>()
    for index in (0..<200).shuffled(using: &generator).prefix(120) {
      removed.insert(index)
      table.remove(stores[index], for: ObjectIdentifier(keys[index]))
      if index % 3 == 0 { table.remove(stores[(index + 1) % 200], for: ObjectIdentifier(keys[index])) }
    }

    #expect(table.count == 80)
    for (index, key) in keys.enumerated() {
      let found = table[ObjectIdentifier(key)].map(\.identifier)
      if removed.contains(index) {
        #expect(found.isEmpty, "key \(index) was removed")
      } else {
        let expected = index % 3 == 0 ? ["s\(index)", "s\((index + 1) % 200)"] : ["s\(index)"]
        #expect(found == expected, "key \(index)")
      }
    }
  }

  @Test func removingOneOfSeveralStoresKeepsTheKey() {
    let key = ObjectIdentifier(Key.self)
    let first = makeCounterStore("first")
    let second = makeCounterStore("second")
    var table = RouteTable()
    table.append(StoreEntry(first), for: key)
    table.append(StoreEntry(second), for: key)
    table.remove(first, for: key)
    #expect(table[key].map(\.identifier) == ["second"])
    #expect(table.count == 1)
    #expect(table[ObjectIdentifier(Int.self)].isEmpty)
  }

  @Test func lookupSeparatesOneStoreFromSeveralAndCarriesTheKeptGraph() throws {
    let key = ObjectIdentifier(Key.self)
    var table = RouteTable()
    guard case .none = table.lookup(key, generation: 0) else { throw LookupMismatch() }
    table.append(StoreEntry(makeCounterStore("first")), for: key)
    guard case .one(let only) = table.lookup(key, generation: 0), only.identifier == "first" else {
      throw LookupMismatch()
    }
    table.append(StoreEntry(makeCounterStore("second")), for: key)
    guard case .several(let stores, nil, 4) = table.lookup(key, generation: 4) else { throw LookupMismatch() }
    #expect(stores.map(\.identifier) == ["first", "second"])

    let graph = try WaitGraph.make(identifiers: ["first", "second"], waitLists: [[], ["first"]]) { _ in false }.get()
    let kept = CachedWaitGraph(generation: 4, waitLists: [[], ["first"]], graph: graph)
    #expect(table.cache(kept, for: key) == nil)
    let replacement = CachedWaitGraph(generation: 5, waitLists: [[], ["first"]], graph: graph)
    #expect(table.cache(replacement, for: key) === kept)
    guard case .several(_, let carried, 5) = table.lookup(key, generation: 5) else { throw LookupMismatch() }
    #expect(carried === replacement)
    // Keys without a route keep nothing.
    #expect(table.cache(kept, for: ObjectIdentifier(Int.self)) == nil)
  }

  struct LookupMismatch: Error {}
}
