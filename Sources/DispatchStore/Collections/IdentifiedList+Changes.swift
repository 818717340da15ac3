import Foundation

/// What changed from one version of an ``IdentifiedList`` to another.
///
/// The elements added or replaced, the ids removed, and the splices of the order: what a session record will write
/// for a list instead of the whole list (proposal 0017).
struct ListChanges<Element: Identifiable> {
  /// The elements added or replaced, in no particular order.
  var updated: [Element] = []
  /// The ids of the elements removed.
  var removed: [Element.ID] = []
  /// The changes of the order, left to right: each applies to the order as the splices before it left it.
  var splices: [OrderSplice<Element.ID>] = []

  var isEmpty: Bool { updated.isEmpty && removed.isEmpty && splices.isEmpty }
}

/// At `position`, `removing` ids go and `ids` come in their place.
struct OrderSplice<ID: Hashable>: Equatable {
  var position: Int
  var removing: Int
  var ids: [ID]
}

/// Changes that do not apply to the list they are applied to: a session whose lines do not follow each other.
struct ListChangesMismatch: Error, CustomStringConvertible {
  let description: String
}

extension IdentifiedList {
  /// What changed from `old` to this list, found by walking both lists' trees together and skipping the nodes they
  /// share: for two versions of one list, the cost of the changed paths.
  ///
  /// - Parameters:
  ///   - old: An earlier version of this list (any list works; one that shares no node costs a walk of both).
  ///   - same: Whether two elements, where the lists store them, are equal, their ids included; an element for which
  ///     it returns `false` is listed as updated (or, under another id, as removed and added).
  /// - Returns: The changes that turn `old` into this list.
  func changes(
    since old: IdentifiedList, same: (UnsafePointer<Element>, UnsafePointer<Element>) -> Bool
  ) -> ListChanges<Element> {
    var changes = ListChanges<Element>()
    ElementNode.differences(from: old.elements.root, to: elements.root, shift: 0, same: same, into: &changes)
    changes.splices = OrderNode.splices(from: old.order.root, to: order.root)
    return changes
  }

  /// Applies changes made by ``changes(since:same:)`` to a list equal to the one they were made from.
  ///
  /// - Parameter changes: The changes.
  /// - Throws: ``ListChangesMismatch`` if they do not fit this list (an id removed that is not there, a splice past
  ///   its end, an id the order gains or loses that the elements do not); the list is then left as it was.
  mutating func apply(_ changes: ListChanges<Element>) throws {
    var result = self
    // What the order loses and gains must be what the elements lose and gain: checked without visiting the list.
    var leftOrder: [Element.ID: Int] = [:]
    for splice in changes.splices {
      // Without adding the two: a position and a count read from a file may be as large as an `Int` holds.
      guard splice.position >= 0, splice.removing >= 0, splice.position <= result.order.count,
        splice.removing <= result.order.count - splice.position
      else {
        throw ListChangesMismatch(
          description:
            "a change of the order removing \(splice.removing) at \(splice.position) does not fit a list of \(result.order.count)"
        )
      }
      for _ in 0..<splice.removing { leftOrder[result.order.remove(at: splice.position), default: 0] -= 1 }
      for (offset, id) in splice.ids.enumerated() {
        result.order.insert(id, at: splice.position + offset)
        leftOrder[id, default: 0] += 1
      }
    }
    result.order.labelIfDue()
    var gone = Set<Element.ID>()
    for id in changes.removed {
      guard result.elements.remove(id) != nil, gone.insert(id).inserted else {
        throw ListChangesMismatch(description: "the removed id \(id) is not in the list")
      }
    }
    var added = Set<Element.ID>()
    for element in changes.updated where result.elements.update(element) == nil {
      guard added.insert(element.id).inserted else {
        throw ListChangesMismatch(description: "the id \(element.id) is added twice")
      }
    }
    for (id, net) in leftOrder where net != 0 {
      let fits = net == -1 ? gone.remove(id) != nil : net == 1 ? added.remove(id) != nil : false
      guard fits else {
        throw ListChangesMismatch(description: "the order and the elements disagree about the id \(id)")
      }
    }
    guard gone.isEmpty, added.isEmpty else {
      throw ListChangesMismatch(description: "the order and the elements disagree about the ids \(gone.union(added))")
    }
    self = result
  }
}

extension ElementNode {
  /// Adds to `changes` the elements of `new` that are not in `old` or differ from it (`updated`) and the ids of
  /// `old` that are not in `new` (`removed`), skipping the subtrees the two share.
  static func differences(
    from old: ElementNode, to new: ElementNode, shift: Int,
    same: (UnsafePointer<Element>, UnsafePointer<Element>) -> Bool,
    into changes: inout ListChanges<Element>
  ) {
    if old === new { return }
    if old.isCollision || new.isCollision {
      differences(from: old.allItems(), to: new.allItems(), same: same, into: &changes)
      return
    }
    if old.itemMap == new.itemMap && old.childMap == new.childMap {
      sameShapeDifferences(from: old, to: new, shift: shift, same: same, into: &changes)
      return
    }
    let bits = old.itemMap | old.childMap | new.itemMap | new.childMap
    var remaining = bits
    // No optionals of elements here: in code not specialised for the element type, each one looks up its type.
    while remaining != 0 {
      let bit = remaining & (~remaining &+ 1)
      remaining &= remaining &- 1
      let (oldHasChild, newHasChild) = (old.childMap & bit != 0, new.childMap & bit != 0)
      let (oldHasItem, newHasItem) = (old.itemMap & bit != 0, new.itemMap & bit != 0)
      if oldHasChild && newHasChild {
        differences(
          from: old.children[slot(old.childMap, bit)], to: new.children[slot(new.childMap, bit)],
          shift: shift + bitsPerLevel, same: same, into: &changes)
      } else if oldHasChild || newHasChild {
        // An element on one side, a subtree (or nothing) on the other: compare their elements by id.
        let before =
          oldHasChild
          ? old.children[slot(old.childMap, bit)].allItems() : oldHasItem ? [old.items[slot(old.itemMap, bit)]] : []
        let after =
          newHasChild
          ? new.children[slot(new.childMap, bit)].allItems() : newHasItem ? [new.items[slot(new.itemMap, bit)]] : []
        differences(from: before, to: after, same: same, into: &changes)
      } else if oldHasItem && newHasItem {
        let (oldSlot, newSlot) = (slot(old.itemMap, bit), slot(new.itemMap, bit))
        if old.items[oldSlot].id == new.items[newSlot].id {
          // Compared where the nodes store them: a copy of an element outside its node need not keep the bytes of
          // the padding between its fields.
          let unchanged = old.items.withUnsafeBufferPointer { before in
            new.items.withUnsafeBufferPointer { after in
              same(before.baseAddress! + oldSlot, after.baseAddress! + newSlot)
            }
          }
          if !unchanged { changes.updated.append(new.items[newSlot]) }
        } else {
          changes.removed.append(old.items[oldSlot].id)
          changes.updated.append(new.items[newSlot])
        }
      } else if oldHasItem {
        changes.removed.append(old.items[slot(old.itemMap, bit)].id)
      } else {
        changes.updated.append(new.items[slot(new.itemMap, bit)])
      }
    }
  }

  /// ``differences(from:to:shift:same:into:)`` for two nodes with the same maps, compared where they are stored.
  ///
  /// The common case: a node copied for a change below it, or of one of its elements. Nothing is copied to compare:
  /// unspecialised, each copy of an element or a node is a call through its type's witnesses.
  private static func sameShapeDifferences(
    from old: ElementNode, to new: ElementNode, shift: Int,
    same: (UnsafePointer<Element>, UnsafePointer<Element>) -> Bool,
    into changes: inout ListChanges<Element>
  ) {
    // Items: none to compare if the two nodes share their buffer (a node copied for a change below it).
    old.items.withUnsafeBufferPointer { before in
      new.items.withUnsafeBufferPointer { after in
        guard let before = before.baseAddress, let after = after.baseAddress, before != after else { return }
        for slot in 0..<new.items.count {
          // `same` first: an element it finds unchanged has its id too, and comparing ids unspecialised is a call
          // through the id type's witnesses, for each of the node's elements.
          if same(before + slot, after + slot) { continue }
          if (before + slot).pointee.id == (after + slot).pointee.id {
            changes.updated.append((after + slot).pointee)
          } else {
            changes.removed.append((before + slot).pointee.id)
            changes.updated.append((after + slot).pointee)
          }
        }
      }
    }
    // Children: the slots whose nodes differ, found without retaining one, then visited.
    let differing = old.children.withUnsafeBufferPointer { before in
      new.children.withUnsafeBufferPointer { after in
        var mask: UInt32 = 0
        for slot in 0..<after.count where before[slot] !== after[slot] { mask |= 1 << UInt32(slot) }
        return mask
      }
    }
    var remaining = differing
    while remaining != 0 {
      let slot = remaining.trailingZeroBitCount
      remaining &= remaining &- 1
      differences(
        from: old.children[slot], to: new.children[slot], shift: shift + bitsPerLevel, same: same, into: &changes)
    }
  }

  /// The differences between two small lists of elements, by id.
  private static func differences(
    from old: [Element], to new: [Element], same: (UnsafePointer<Element>, UnsafePointer<Element>) -> Bool,
    into changes: inout ListChanges<Element>
  ) {
    var before: [Element.ID: Element] = [:]
    for item in old { before[item.id] = item }
    for item in new {
      if let previous = before.removeValue(forKey: item.id) {
        if !withUnsafePointer(to: previous, { before in withUnsafePointer(to: item) { same(before, $0) } }) {
          changes.updated.append(item)
        }
      } else {
        changes.updated.append(item)
      }
    }
    // In the order of `old`, so that the result does not depend on the dictionary's.
    for item in old where before[item.id] != nil { changes.removed.append(item.id) }
  }

  /// Every element in this node and below it.
  func allItems() -> [Element] {
    var items: [Element] = []
    forEach { items.append($0) }
    return items
  }
}

extension OrderNode {
  /// The splices that turn the order under `old` into the order under `new`, found by expanding both trees, from
  /// the top, only where their nodes differ, then comparing the identifiers of the leaves that differ.
  static func splices(from old: OrderNode, to new: OrderNode) -> [OrderSplice<ID>] {
    if old === new { return [] }
    var aligned: [OrderSplice<ID>] = []
    if alignedSplices(from: old, to: new, at: 0, into: &aligned) { return aligned }
    var before = [Frontier(node: old, height: old.height)]
    var after = [Frontier(node: new, height: new.height)]
    // Expand the highest nodes the other side does not hold, until the nodes that differ are leaves.
    // Loops over the frontiers' buffers rather than `map` and `filter`: unspecialised, each element through those
    // is a call through a closure and a generic array's witnesses.
    while true {
      let shared = Set(identities(before)).intersection(identities(after))
      let tallest = max(tallest(before, besides: shared), tallest(after, besides: shared))
      guard tallest > 0 else { break }
      before = expand(before, height: tallest, keeping: shared)
      after = expand(after, height: tallest, keeping: shared)
    }
    // Walk both: a node both hold, in the same order, is kept; what lies between two kept nodes is a region whose
    // identifiers changed.
    var inAfter: [ObjectIdentifier: Int] = [:]
    for (offset, identity) in identities(after).enumerated() where inAfter[identity] == nil {
      inAfter[identity] = offset
    }
    var splices: [OrderSplice<ID>] = []
    var position = 0
    var removed: [ID] = []
    var inserted: [ID] = []
    var lastMatched = -1
    var next = 0
    func flush() {
      defer {
        position += inserted.count
        removed.removeAll()
        inserted.removeAll()
      }
      leafSplices(from: whole(removed), to: whole(inserted), at: position, into: &splices)
    }
    for entry in before {
      if let match = inAfter[ObjectIdentifier(entry.node)], match > lastMatched {
        // The new side's nodes before the match are new here.
        while next < match {
          inserted.append(contentsOf: after[next].node.allIDs())
          next += 1
        }
        flush()
        position += entry.node.count
        lastMatched = match
        next = match + 1
      } else {
        removed.append(contentsOf: entry.node.allIDs())
      }
    }
    while next < after.count {
      inserted.append(contentsOf: after[next].node.allIDs())
      next += 1
    }
    flush()
    return splices
  }

  /// Appends the splices that turn `old` into `new`, two nodes of one height whose children line up one for one.
  ///
  /// The common case: no node split or merged, and the inner nodes that changed kept their counts. The children that
  /// differ are compared, the others skipped, and no set or dictionary of nodes is made. Two adjacent leaves that
  /// differ are compared as one region (an identifier moved from one to the other). Returns `false` otherwise, what
  /// it appended then to be dropped: a longer run of leaves that differ is a merge in one place and a split in
  /// another, which shift every leaf between them, and the general walk finds the leaves they still share.
  private static func alignedSplices(
    from old: OrderNode, to new: OrderNode, at position: Int, into splices: inout [OrderSplice<ID>]
  ) -> Bool {
    if old === new { return true }
    guard old.isLeaf == new.isLeaf else { return false }
    if old.isLeaf {
      leafSplices(from: whole(old.ids), to: whole(new.ids), at: position, into: &splices)
      return true
    }
    let count = new.children.count
    guard old.children.count == count else { return false }
    // Through the buffers: unspecialised, each subscript of the arrays would look up their type and retain a node.
    return old.children.withUnsafeBufferPointer { oldChildren in
      new.children.withUnsafeBufferPointer { newChildren in
        var position = position
        var index = 0
        while index < count {
          let (before, after) = (oldChildren[index], newChildren[index])
          if before === after {
            position += after.count
            index += 1
          } else if !after.isLeaf {
            // Paired only if it kept its count: one that lost or gained identifiers shifted its neighbours'
            // boundaries.
            guard before.count == after.count, alignedSplices(from: before, to: after, at: position, into: &splices)
            else { return false }
            position += after.count
            index += 1
          } else {
            // A run of leaves that differ (siblings are all leaves, or none is), of at most two.
            let start = index
            while index < count, oldChildren[index] !== newChildren[index] {
              guard oldChildren[index].isLeaf, index - start < 2 else { return false }
              index += 1
            }
            if index - start == 1 {
              leafSplices(from: whole(before.ids), to: whole(after.ids), at: position, into: &splices)
            } else {
              let removed = before.ids + oldChildren[start + 1].ids
              let inserted = after.ids + newChildren[start + 1].ids
              leafSplices(from: whole(removed), to: whole(inserted), at: position, into: &splices)
            }
            for leaf in start..<index { position += newChildren[leaf].count }
          }
        }
        return true
      }
    }
  }

  /// Appends the splices that turn `removed` into `inserted`, the identifiers of a region of the order at `position`:
  /// none if they are the same; the identifiers between the first and the last that differ; or, for one identifier
  /// moved across the region (a drag), two splices of that identifier.
  private static func leafSplices(
    from removed: ArraySlice<ID>, to inserted: ArraySlice<ID>, at position: Int, into splices: inout [OrderSplice<ID>]
  ) {
    // The common ends, found through the buffers, by stored bytes first: unspecialised, each `==` is a call through
    // the identifier type's witnesses, and each subscript of a slice looks up its type.
    let (prefix, suffix) = removed.withUnsafeBufferPointer { before in
      inserted.withUnsafeBufferPointer { after in
        let (old, new) = (before.baseAddress, after.baseAddress)
        let (oldCount, newCount) = (before.count, after.count)
        var prefix = 0
        while prefix < oldCount && prefix < newCount && same(old! + prefix, new! + prefix) { prefix += 1 }
        var suffix = 0
        while suffix < oldCount - prefix && suffix < newCount - prefix
          && same(old! + (oldCount - 1 - suffix), new! + (newCount - 1 - suffix))
        {
          suffix += 1
        }
        return (prefix, suffix)
      }
    }
    let old = removed[(removed.startIndex + prefix)..<(removed.endIndex - suffix)]
    let new = inserted[(inserted.startIndex + prefix)..<(inserted.endIndex - suffix)]
    guard !old.isEmpty || !new.isEmpty else { return }
    if old.count >= 2 && new.count == old.count {
      if old.first == new.last && old.dropFirst().elementsEqual(new.dropLast()) {
        splices.append(OrderSplice(position: position + prefix, removing: 1, ids: []))
        splices.append(OrderSplice(position: position + prefix + old.count - 1, removing: 0, ids: [old.first!]))
        return
      }
      if old.last == new.first && old.dropLast().elementsEqual(new.dropFirst()) {
        splices.append(OrderSplice(position: position + prefix, removing: 0, ids: [new.first!]))
        splices.append(OrderSplice(position: position + prefix + old.count, removing: 1, ids: []))
        return
      }
    }
    splices.append(OrderSplice(position: position + prefix, removing: old.count, ids: Array(new)))
  }

  /// All of `ids` as a slice: through `Array`'s own subscript (unspecialised, `ids[...]` goes through a generic
  /// collection's, which looks up types and witnesses).
  private static func whole(_ ids: [ID]) -> ArraySlice<ID> {
    ids[0..<ids.count]
  }

  /// Whether two identifiers are equal: the same stored bytes (the same value), or else `==`.
  ///
  /// An identifier equals itself here even where its `==` says otherwise (a floating-point NaN), as the list's
  /// dictionaries and sets of identifiers already require.
  private static func same(_ lhs: UnsafePointer<ID>, _ rhs: UnsafePointer<ID>) -> Bool {
    memcmp(lhs, rhs, MemoryLayout<ID>.size) == 0 || lhs.pointee == rhs.pointee
  }

  struct Frontier {
    let node: OrderNode
    /// 0 for a leaf.
    let height: Int
  }

  /// The identities of the nodes of `frontier`, in order.
  private static func identities(_ frontier: [Frontier]) -> [ObjectIdentifier] {
    frontier.withUnsafeBufferPointer { entries in
      var identities: [ObjectIdentifier] = []
      identities.reserveCapacity(entries.count)
      for entry in entries { identities.append(ObjectIdentifier(entry.node)) }
      return identities
    }
  }

  /// The height of the tallest node of `frontier` not in `shared`; 0 if there is none.
  private static func tallest(_ frontier: [Frontier], besides shared: Set<ObjectIdentifier>) -> Int {
    frontier.withUnsafeBufferPointer { entries in
      var tallest = 0
      for entry in entries where entry.height > tallest && !shared.contains(ObjectIdentifier(entry.node)) {
        tallest = entry.height
      }
      return tallest
    }
  }

  private static func expand(_ frontier: [Frontier], height: Int, keeping shared: Set<ObjectIdentifier>) -> [Frontier] {
    var expanded: [Frontier] = []
    for entry in frontier {
      if entry.height == height && !shared.contains(ObjectIdentifier(entry.node)) {
        for child in entry.node.children { expanded.append(Frontier(node: child, height: height - 1)) }
      } else {
        expanded.append(entry)
      }
    }
    return expanded
  }

  /// The number of levels below this node: 0 for a leaf.
  var height: Int {
    var node = self
    var height = 0
    while !node.isLeaf {
      node = node.children[0]
      height += 1
    }
    return height
  }

  /// The identifiers under this node, in order.
  func allIDs() -> [ID] {
    var ids: [ID] = []
    ids.reserveCapacity(count)
    forEachLeaf { leaf in
      ids.append(contentsOf: leaf)
      return true
    }
    return ids
  }
}
