/// The elements of an ``IdentifiedList`` by identifier: a hash trie (a hash array mapped trie, compacted as a CHAMP
/// trie is), 32 ways per node, five bits of the identifier's hash per level.
///
/// Finding, changing, adding and removing cost O(log32 n) node visits. As in ``OrderTree``, a copy shares all of the
/// nodes, a change copies only the shared nodes on its path, and a comparison skips the nodes two versions share.
@usableFromInline struct ElementTrie<Element: Identifiable>: Sendable {
  @usableFromInline var root = ElementNode<Element>()

  @inlinable init() {}

  /// The element with identifier `id`, if there is one.
  @inlinable subscript(id: Element.ID) -> Element? {
    root.find(id, hash: Self.hash(id), shift: 0)
  }

  /// Adds `element`, or replaces the element with its identifier; returns the element replaced.
  @discardableResult
  @inlinable mutating func update(_ element: Element) -> Element? {
    ElementNode.makeUnique(&root)
    return root.update(element, hash: Self.hash(element.id), shift: 0)
  }

  /// Replaces the element with `element`'s identifier by `element`, if there is one and `shouldReplace` accepts it.
  @inlinable mutating func replace(_ element: Element, if shouldReplace: (Element) -> Bool) {
    ElementNode.makeUnique(&root)
    root.replace(element, hash: Self.hash(element.id), shift: 0, if: shouldReplace)
  }

  /// Removes the element with identifier `id` and returns it, if there is one.
  @discardableResult
  @inlinable mutating func remove(_ id: Element.ID) -> Element? {
    let hash = Self.hash(id)
    guard root.find(id, hash: hash, shift: 0) != nil else { return nil }
    ElementNode.makeUnique(&root)
    return root.remove(id, hash: hash, shift: 0)
  }

  @inlinable static func hash(_ id: Element.ID) -> UInt { UInt(bitPattern: id.hashValue) }

  // MARK: Changing an element in place

  /// Whether the element with `id` is an item of a node that is not a collision list: then ``takeItem(_:)`` can move
  /// it out of its node, and putting it back or ``dropTaken(_:)`` ends the change.
  @inlinable func containsItem(_ id: Element.ID) -> Bool {
    let hash = Self.hash(id)
    var node = root
    var shift = 0
    while !node.isCollision {
      let bit = ElementNode<Element>.bit(hash, shift)
      if node.itemMap & bit != 0 { return node.items[ElementNode<Element>.slot(node.itemMap, bit)].id == id }
      guard node.childMap & bit != 0 else { return false }
      node = node.children[ElementNode<Element>.slot(node.childMap, bit)]
      shift += ElementNode<Element>.bitsPerLevel
    }
    return false
  }

  /// Moves the element with `id` (``containsItem(_:)``) out of its node into `element`; returns the node and the
  /// element's slot among its items.
  ///
  /// The trie then holds that node uniquely, as the nodes above it: a change to the element copies nothing it holds.
  /// Its slot stays in its node's map until the element is put back at it (`items.insert(_:at:)`) or
  /// ``dropTaken(_:)``; nothing else may use the trie in between.
  @inlinable mutating func takeItem(_ id: Element.ID, into element: inout Element?) -> (
    node: ElementNode<Element>, slot: Int
  ) {
    ElementNode.makeUnique(&root)
    let hash = Self.hash(id)
    var node = root
    var shift = 0
    while true {
      let bit = ElementNode<Element>.bit(hash, shift)
      if node.itemMap & bit != 0 {
        node.ownItems()
        let slot = ElementNode<Element>.slot(node.itemMap, bit)
        element = node.items.remove(at: slot)
        return (node, slot)
      }
      let index = ElementNode<Element>.slot(node.childMap, bit)
      node.ownChildren()
      ElementNode.makeUnique(&node.children[index])
      node = node.children[index]
      shift += ElementNode<Element>.bitsPerLevel
    }
  }

  /// Ends the change of the element taken with `id` by removing it: its slot leaves its node's map, as ``remove(_:)``
  /// would leave the trie.
  @inlinable mutating func dropTaken(_ id: Element.ID) {
    root.dropTaken(hash: Self.hash(id), shift: 0)
  }

  /// The trie of `elements`, built node by node instead of element by element; `nil` if two have the same
  /// identifier.
  ///
  /// The elements are sorted by their hashes' five-bit digits, first digit first: the elements under one node are
  /// then a run, and each node is made once, with the nodes a trie of the same elements made by `update` has.
  @inlinable static func build(_ elements: [Element]) -> ElementTrie? {
    var order: [(hash: UInt, key: UInt, index: Int)] = []
    order.reserveCapacity(elements.count)
    for index in elements.indices {
      let hash = Self.hash(elements[index].id)
      order.append((hash, sortKey(hash), index))
    }
    // By key, then by position: elements with one hash keep their order, as `update` appends them.
    order.sort { ($0.key, $0.index) < ($1.key, $1.index) }
    guard let root = ElementNode.build(elements, order, 0..<order.count, shift: 0) else { return nil }
    var trie = ElementTrie()
    trie.root = root
    return trie
  }

  /// A key that sorts hashes by their five-bit digits, the root's first.
  ///
  /// The digits reversed, the first in the highest bits. The last digit holds the bits left over: four of a 64-bit
  /// hash, two of a 32-bit one (arm64_32).
  @inlinable static func sortKey(_ hash: UInt, bitWidth: Int = UInt.bitWidth) -> UInt {
    let bitsPerLevel = ElementNode<Element>.bitsPerLevel
    let leftOver = bitWidth % bitsPerLevel
    var key: UInt = 0
    var rest = hash
    for _ in 0..<(bitWidth / bitsPerLevel) {
      key = key << bitsPerLevel | (rest & 31)
      rest >>= bitsPerLevel
    }
    return key << leftOver | (rest & ((1 << leftOver) - 1))
  }
}

extension ElementTrie where Element: Equatable {
  /// Whether the two tries hold equal elements for the same identifiers; subtrees they share are not visited.
  @inlinable static func == (lhs: Self, rhs: Self) -> Bool {
    ElementNode.equal(lhs.root, rhs.root)
  }
}

/// A node of an ``ElementTrie``: the elements whose hashes end here, by bit of `itemMap`, and the children whose
/// hashes continue below, by bit of `childMap`; or, past the hash's last bits, a list of elements whose hashes are
/// the same (`isCollision`).
///
/// `@unchecked Sendable` as a copy-on-write buffer is: a node is changed only by the one value that holds it
/// uniquely (`makeUnique`), so a node another value or thread can reach is never written. For the same reason, no
/// two accesses to a node's fields overlap, so they are not checked for exclusivity at run time (the checks cost
/// more than the reads of an unspecialised comparison).
@usableFromInline final class ElementNode<Element: Identifiable>: @unchecked Sendable {
  @inlinable static var bitsPerLevel: Int { 5 }
  /// The shift past which a hash has no bits left: nodes below it are collision lists.
  @inlinable static var lastShift: Int { UInt.bitWidth - 1 }

  @usableFromInline @exclusivity(unchecked) var itemMap: UInt32 = 0
  @usableFromInline @exclusivity(unchecked) var childMap: UInt32 = 0
  @usableFromInline @exclusivity(unchecked) var items: [Element] = []
  @usableFromInline @exclusivity(unchecked) var children: [ElementNode] = []
  /// Whether `items` is still the buffer of the node this one copies: copied exactly before it changes.
  @usableFromInline @exclusivity(unchecked) var sharesItems = false
  /// Whether `children` is still the buffer of the node this one copies: copied (``ownChildren()``) before a change
  /// goes down into one of them.
  @usableFromInline @exclusivity(unchecked) var sharesChildren = false
  @usableFromInline let isCollision: Bool
  /// How many changes a list made to its elements while it held this node as its element tree's root.
  ///
  /// Counted by ``IdentifiedList/elements``; with the order tree's count and the roots' identity, it tells which state
  /// of the list this is (``ListMark``). Every node has it: 8 bytes, which take a node from 43 bytes to 56
  /// (glibc's malloc gives both a 64-byte block; Apple's rounds to 16 bytes, 48 then 64).
  @usableFromInline @exclusivity(unchecked) var generation: UInt64 = 0

  @inlinable init(isCollision: Bool = false) {
    self.isCollision = isCollision
  }

  @inlinable init(copying node: ElementNode) {
    itemMap = node.itemMap
    childMap = node.childMap
    items = node.items
    sharesItems = !node.items.isEmpty
    children = node.children
    sharesChildren = !node.children.isEmpty
    isCollision = node.isCollision
  }

  /// Makes `items` this node's own before it changes: copied exactly (``exactCopy(of:)``) if it is the buffer of the
  /// node this one copies.
  @inlinable func ownItems() {
    guard sharesItems else { return }
    items = Self.exactCopy(of: items)
    sharesItems = false
  }

  /// A copy of `items` that holds their bytes exactly, the padding between their fields included.
  ///
  /// A session's writer compares elements by their stored bytes (``IdentifiedList/changes(since:same:)``), and an
  /// element copied with its node must compare the same as the one it copies. Copying a value copies its fields, not
  /// its padding.
  @inlinable static func exactCopy(of items: [Element]) -> [Element] {
    let count = items.count
    // A type that is not bitwise-takable (an Objective-C weak reference, a C++ type that points into itself) may
    // depend on its address: its copies are left to `Array`.
    guard count > 0, _isBitwiseTakable(Element.self) else { return items }
    var copy = items.elementwiseCopy()
    // The fields hold the same values (their references retained by the copy): this writes only the padding.
    items.withUnsafeBytes { source in copy.withUnsafeMutableBytes { $0.copyMemory(from: source) } }
    return copy
  }

  /// Makes `children` this node's own before a change goes down into one of them: copied if it is the buffer of the
  /// node this one copies.
  ///
  /// Copied reference by reference (`elementwiseCopy()`), in code specialised for the element type where the list is
  /// changed. A change at 10,000 elements copies the children of two nodes of 32.
  @inlinable func ownChildren() {
    guard sharesChildren else { return }
    sharesChildren = false
    children = children.elementwiseCopy()
  }

  /// Makes `node` one that only the caller holds, copying it if it is shared.
  @inlinable static func makeUnique(_ node: inout ElementNode) {
    if !isKnownUniquelyReferenced(&node) { node = ElementNode(copying: node) }
  }

  @inlinable static func bit(_ hash: UInt, _ shift: Int) -> UInt32 {
    1 << UInt32(truncatingIfNeeded: (hash >> UInt(shift)) & 31)
  }

  /// The position among the entries of `map` of the entry for `bit`.
  @inlinable static func slot(_ map: UInt32, _ bit: UInt32) -> Int {
    (map & (bit &- 1)).nonzeroBitCount
  }

  /// The node at `shift` of the elements at `range` of `order`, which ``ElementTrie/build(_:)`` sorted; `nil` if two
  /// have the same identifier.
  @inlinable static func build(
    _ elements: [Element], _ order: [(hash: UInt, key: UInt, index: Int)], _ range: Range<Int>, shift: Int
  ) -> ElementNode? {
    if shift > lastShift {
      let node = ElementNode(isCollision: true)
      for position in range {
        let element = elements[order[position].index]
        guard !node.items.contains(where: { $0.id == element.id }) else { return nil }
        node.items.append(element)
      }
      return node
    }
    // The runs of one digit: a run of one element stays in this node, a longer one is a child. Counted first, so
    // that each array is made once at its size: appending, in code not specialised for the element type, looks up
    // the array's type for each element, and grows the array several times.
    let node = ElementNode()
    var (itemCount, childCount) = (0, 0)
    var start = range.lowerBound
    while start < range.upperBound {
      let end = runEnd(order, from: start, in: range, shift: shift)
      if end - start == 1 { itemCount += 1 } else { childCount += 1 }
      start = end
    }
    // Not made for none: an array made with no capacity is the shared empty one, whose count the initialiser
    // writes (a data race under ThreadSanitizer).
    if itemCount > 0 {
      node.items = Array(unsafeUninitializedCapacity: itemCount) { items, initialized in
        var start = range.lowerBound
        while start < range.upperBound {
          let end = runEnd(order, from: start, in: range, shift: shift)
          if end - start == 1 {
            node.itemMap |= bit(order[start].hash, shift)
            (items.baseAddress! + initialized).initialize(to: elements[order[start].index])
            initialized += 1
          }
          start = end
        }
      }
    }
    var failed = false
    if childCount > 0 {
      node.children = Array(unsafeUninitializedCapacity: childCount) { children, initialized in
        var start = range.lowerBound
        while start < range.upperBound {
          let end = runEnd(order, from: start, in: range, shift: shift)
          if end - start > 1 {
            guard let child = build(elements, order, start..<end, shift: shift + bitsPerLevel) else {
              failed = true
              return
            }
            node.childMap |= bit(order[start].hash, shift)
            (children.baseAddress! + initialized).initialize(to: child)
            initialized += 1
          }
          start = end
        }
      }
    }
    return failed ? nil : node
  }

  /// The end of the run of `order` from `start` whose hashes have the same digit at `shift`.
  @inlinable static func runEnd(
    _ order: [(hash: UInt, key: UInt, index: Int)], from start: Int, in range: Range<Int>, shift: Int
  ) -> Int {
    let digit = bit(order[start].hash, shift)
    var end = start + 1
    while end < range.upperBound, bit(order[end].hash, shift) == digit { end += 1 }
    return end
  }

  /// Whether the node holds one element and nothing else: its parent takes the element in its place.
  @inlinable var isSingleItem: Bool { items.count == 1 && children.isEmpty }

  /// The element with `id`, if this node or one under it holds it.
  ///
  /// Walks down without retaining or releasing a node or an array buffer on the way: the caller holds this node, and
  /// each node its children, for the whole walk (proposal 0023: the counts were two thirds of an iteration's time).
  @inlinable func find(_ id: Element.ID, hash: UInt, shift: Int) -> Element? {
    guard let (node, slot) = location(of: id, hash: hash, shift: shift) else { return nil }
    return Unmanaged<ElementNode>.fromOpaque(node)._withUnsafeGuaranteedRef { node in
      node.items.withUnsafeBufferPointer { $0[slot] }
    }
  }

  /// The node (unretained) and the slot in its items of the element with `id`, if this node or one under it holds
  /// it.
  ///
  /// Each step returns a raw pointer and an integer: in code not specialised for the element type, an optional of
  /// the element's type, or of its node's, would look its type up at every level.
  @inlinable func location(of id: Element.ID, hash: UInt, shift: Int) -> (node: UnsafeRawPointer, slot: Int)? {
    var node = Unmanaged.passUnretained(self)
    var shift = shift
    while true {
      let (next, slot): (UnsafeRawPointer?, Int) = node._withUnsafeGuaranteedRef { node in
        if node.isCollision { return (nil, node.items.firstIndex { $0.id == id } ?? -1) }
        let bit = Self.bit(hash, shift)
        if node.itemMap & bit != 0 {
          let slot = Self.slot(node.itemMap, bit)
          return (nil, node.items.withUnsafeBufferPointer { $0[slot].id == id } ? slot : -1)
        }
        guard node.childMap & bit != 0 else { return (nil, -1) }
        let slot = Self.slot(node.childMap, bit)
        return (
          node.children.withUnsafeBufferPointer { UnsafeRawPointer(Unmanaged.passUnretained($0[slot]).toOpaque()) }, -1
        )
      }
      guard let next else { return slot >= 0 ? (UnsafeRawPointer(node.toOpaque()), slot) : nil }
      node = Unmanaged.fromOpaque(next)
      shift += Self.bitsPerLevel
    }
  }

  /// Adds or replaces in this node, which the caller holds uniquely; returns the element replaced.
  @inlinable func update(_ element: Element, hash: UInt, shift: Int) -> Element? {
    if isCollision {
      ownItems()
      if let index = items.firstIndex(where: { $0.id == element.id }) {
        defer { items[index] = element }
        return items[index]
      }
      items.append(element)
      return nil
    }
    let bit = Self.bit(hash, shift)
    if itemMap & bit != 0 {
      ownItems()
      let index = Self.slot(itemMap, bit)
      if items[index].id == element.id {
        defer { items[index] = element }
        return items[index]
      }
      // Two elements in one slot: they go down a level, into a node of their own.
      let other = items.remove(at: index)
      itemMap ^= bit
      let child = Self.pair(
        other, hash: ElementTrie<Element>.hash(other.id), element, hash: hash, shift: shift + Self.bitsPerLevel)
      childMap |= bit
      ownChildren()
      children.insert(child, at: Self.slot(childMap, bit))
      return nil
    }
    if childMap & bit != 0 {
      let index = Self.slot(childMap, bit)
      ownChildren()
      Self.makeUnique(&children[index])
      return children[index].update(element, hash: hash, shift: shift + Self.bitsPerLevel)
    }
    ownItems()
    itemMap |= bit
    items.insert(element, at: Self.slot(itemMap, bit))
    return nil
  }

  /// Replaces in this node, which the caller holds uniquely, the element with `element`'s identifier, if there is one
  /// and `shouldReplace` accepts it.
  @inlinable func replace(_ element: Element, hash: UInt, shift: Int, if shouldReplace: (Element) -> Bool) {
    if isCollision {
      guard let index = items.firstIndex(where: { $0.id == element.id }), shouldReplace(items[index]) else { return }
      ownItems()
      items[index] = element
      return
    }
    let bit = Self.bit(hash, shift)
    if itemMap & bit != 0 {
      let index = Self.slot(itemMap, bit)
      guard items[index].id == element.id, shouldReplace(items[index]) else { return }
      ownItems()
      items[index] = element
      return
    }
    guard childMap & bit != 0 else { return }
    let index = Self.slot(childMap, bit)
    ownChildren()
    Self.makeUnique(&children[index])
    children[index].replace(element, hash: hash, shift: shift + Self.bitsPerLevel, if: shouldReplace)
  }

  /// A node at `shift` holding two elements with different identifiers.
  @inlinable static func pair(
    _ first: Element, hash firstHash: UInt, _ second: Element, hash secondHash: UInt, shift: Int
  ) -> ElementNode {
    if shift > lastShift {
      let node = ElementNode(isCollision: true)
      node.items = [first, second]
      return node
    }
    let node = ElementNode()
    let (firstBit, secondBit) = (bit(firstHash, shift), bit(secondHash, shift))
    if firstBit == secondBit {
      node.childMap = firstBit
      node.children = [pair(first, hash: firstHash, second, hash: secondHash, shift: shift + bitsPerLevel)]
    } else {
      node.itemMap = firstBit | secondBit
      node.items = firstBit < secondBit ? [first, second] : [second, first]
    }
    return node
  }

  /// Removes from this node, which the caller holds uniquely and which holds `id`.
  ///
  /// A child left with one element
  /// and nothing else gives the element to this node, so that a trie's shape depends only on what it holds.
  @inlinable func remove(_ id: Element.ID, hash: UInt, shift: Int) -> Element? {
    if isCollision {
      guard let index = items.firstIndex(where: { $0.id == id }) else { return nil }
      ownItems()
      return items.remove(at: index)
    }
    let bit = Self.bit(hash, shift)
    if itemMap & bit != 0 {
      let index = Self.slot(itemMap, bit)
      guard items[index].id == id else { return nil }
      ownItems()
      itemMap ^= bit
      return items.remove(at: index)
    }
    guard childMap & bit != 0 else { return nil }
    let index = Self.slot(childMap, bit)
    ownChildren()
    Self.makeUnique(&children[index])
    let removed = children[index].remove(id, hash: hash, shift: shift + Self.bitsPerLevel)
    pullUpSingleItemChild(at: index, bit: bit)
    return removed
  }

  /// Makes the element of the child at `index` (under `bit`) an item of this node if the child holds nothing else,
  /// so that a trie's shape depends only on what it holds.
  @inlinable func pullUpSingleItemChild(at index: Int, bit: UInt32) {
    guard children[index].isSingleItem else { return }
    let item = children[index].items[0]
    children.remove(at: index)
    childMap ^= bit
    ownItems()
    itemMap |= bit
    items.insert(item, at: Self.slot(itemMap, bit))
  }

  /// Removes the slot of the element ``ElementTrie/takeItem(_:)`` took, below this node, which the caller holds
  /// uniquely; a child left with one element gives it to this node, as ``remove(_:hash:shift:)`` does.
  @inlinable func dropTaken(hash: UInt, shift: Int) {
    let bit = Self.bit(hash, shift)
    if itemMap & bit != 0 {
      itemMap ^= bit
      return
    }
    let index = Self.slot(childMap, bit)
    children[index].dropTaken(hash: hash, shift: shift + Self.bitsPerLevel)
    pullUpSingleItemChild(at: index, bit: bit)
  }

  /// Calls `body` with every element, in no particular order.
  @inlinable func forEach(_ body: (Element) throws -> Void) rethrows {
    for item in items { try body(item) }
    for child in children { try child.forEach(body) }
  }
}

extension ElementNode where Element: Equatable {
  /// Whether two nodes at `shift` hold equal elements for the same identifiers.
  @inlinable static func equal(_ lhs: ElementNode, _ rhs: ElementNode, shift: Int = 0) -> Bool {
    if lhs === rhs { return true }
    if !lhs.isCollision && !rhs.isCollision && lhs.itemMap == rhs.itemMap && lhs.childMap == rhs.childMap {
      // Index loops, not `zip`: unspecialised, `zip` looks up its generic metadata at every step.
      for index in lhs.items.indices where lhs.items[index] != rhs.items[index] { return false }
      // The identity check here, not only in the call: a call of this generic function costs more than the check.
      for index in lhs.children.indices where lhs.children[index] !== rhs.children[index] {
        if !equal(lhs.children[index], rhs.children[index], shift: shift + bitsPerLevel) { return false }
      }
      return true
    }
    // Different shapes (or collision lists, kept in the order of insertion): compare by lookup.
    var lhsCount = 0
    var rhsCount = 0
    lhs.forEach { _ in lhsCount += 1 }
    rhs.forEach { _ in rhsCount += 1 }
    guard lhsCount == rhsCount else { return false }
    var same = true
    lhs.forEach { item in
      if same && rhs.find(item.id, hash: ElementTrie<Element>.hash(item.id), shift: shift) != item { same = false }
    }
    return same
  }
}
