import Testing

@testable import DispatchStore

/// An id whose hash takes one of `buckets` values: elements whose ids differ share hashes, so the trie keeps them
/// in collision lists below its last level.
private struct CrowdedID: Hashable, Sendable {
  let value: Int
  let buckets: Int

  static func == (lhs: Self, rhs: Self) -> Bool { lhs.value == rhs.value }
  func hash(into hasher: inout Hasher) { hasher.combine(value % buckets) }
}

private struct Entry: Identifiable, Equatable, Sendable {
  let id: CrowdedID
  var payload: Int
}

/// The shape of a node and of every node below it: maps, elements' ids in order, collision flags.
private func shape<Element>(_ node: ElementNode<Element>) -> String where Element.ID: CustomStringConvertible {
  let items = node.items.map(\.id.description).joined(separator: ",")
  let children = node.children.map(shape).joined(separator: ";")
  return "\(node.isCollision ? "C" : "")\(node.itemMap),\(node.childMap)[\(items)]{\(children)}"
}

extension CrowdedID: CustomStringConvertible {
  var description: String { "\(value)" }
}

@Suite("ElementTrie", .watchdog)
struct ElementTrieTests {
  /// The key a trie built at once sorts by orders hashes by their five-bit digits, the root's (the lowest) first, on
  /// 64-bit words and on 32-bit ones (arm64_32), whose last digit has two bits: digits worked out here one by one.
  @Test(arguments: Set([UInt.bitWidth, 32]).sorted())
  func theBuildKeyOrdersHashesByTheirDigitsRootFirst(bitWidth: Int) {
    // Each digit five bits, the last the bits left over (four of 64, two of 32).
    func digits(_ hash: UInt) -> [UInt] {
      stride(from: 0, to: bitWidth, by: 5).map { shift in
        (hash >> UInt(shift)) & ((1 << UInt(min(5, bitWidth - shift))) - 1)
      }
    }
    var generator = SystemRandomNumberGenerator()
    let mask: UInt = bitWidth == UInt.bitWidth ? .max : (1 << UInt(bitWidth)) - 1
    // Random hashes, and hashes that differ only in their last digit or in their first.
    var hashes = (0..<2_000).map { _ in UInt.random(in: 0...mask, using: &generator) }
    hashes += [0, 1, 31, 32, mask, mask >> 1, mask ^ 1, UInt(1) << UInt(bitWidth - 1), UInt(1) << UInt(bitWidth - 2)]
    let byKey = hashes.sorted {
      ElementTrie<Entry>.sortKey($0, bitWidth: bitWidth) < ElementTrie<Entry>.sortKey($1, bitWidth: bitWidth)
    }
    let byDigits = hashes.sorted { digits($0).lexicographicallyPrecedes(digits($1)) }
    #expect(byKey.map(digits) == byDigits.map(digits))
    // Different hashes, different keys.
    #expect(Set(hashes.map { ElementTrie<Entry>.sortKey($0, bitWidth: bitWidth) }).count == Set(hashes).count)
  }

  /// Built at once, a trie has the nodes the same elements added one by one make: the same maps, the same elements
  /// in the same slots, collisions in the order added.
  @Test(arguments: [0, 1, 2, 3, 33, 1_000, 10_000])
  func aTrieBuiltAtOnceHasTheNodesOfOneBuiltElementByElement(count: Int) async {
    // Off the cooperative pool (see `onOwnThread`); what differs comes back as text.
    let mismatches = await onOwnThread { () -> [String] in
      var mismatches: [String] = []
      for buckets in [Int.max, 7] {
        var random = SplitMix(seed: UInt64(count))
        let entries = (0..<count).shuffled(using: &random).map {
          Entry(id: CrowdedID(value: $0, buckets: buckets), payload: $0 * 3)
        }
        var byUpdate = ElementTrie<Entry>()
        for entry in entries { byUpdate.update(entry) }
        guard let built = ElementTrie.build(entries) else { return ["\(count) elements, \(buckets) hashes: nil"] }
        if shape(built.root) != shape(byUpdate.root) { mismatches.append("\(count) elements, \(buckets) hashes") }
        for entry in entries.prefix(100) where built[entry.id] != entry { mismatches.append("\(entry.id)") }
      }
      return mismatches
    }
    #expect(mismatches == [])
  }

  @Test func twoElementsWithOneIDBuildNothing() {
    for buckets in [Int.max, 3] {
      let ids = [5, 9, 2, 9, 11]
      let entries = ids.map { Entry(id: CrowdedID(value: $0, buckets: buckets), payload: 0) }
      #expect(ElementTrie.build(entries) == nil)
      #expect(ElementTrie.build(Array(entries.prefix(3))) != nil)
    }
  }

  @Test func aListMadeOrDecodedAtOnceEqualsOneMadeElementByElement() throws {
    let values = (0..<5_000).map { Entry(id: CrowdedID(value: $0, buckets: 1_000), payload: $0) }
    var byElement = IdentifiedList<Entry>()
    for value in values { byElement.append(value) }
    let atOnce = IdentifiedList(values)
    #expect(atOnce == byElement)
    #expect(Array(atOnce) == values)
    #expect(shape(atOnce.elements.root) == shape(byElement.elements.root))
  }
}
