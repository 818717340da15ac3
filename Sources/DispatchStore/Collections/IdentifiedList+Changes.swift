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
    // Most changes leave the order as it was: then not even the order's node type is looked up (unspecialised, each
    // generic type named costs a lookup).
    if old.order.root !== order.root { changes.splices = OrderNode.splices(from: old.order.root, to: order.root) }
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
        result.order.insert(id, at: splice.position + offset, mayRepeat: true)
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
    var changed = Set<Element.ID>()
    changed.reserveCapacity(changes.updated.count)
    for element in changes.updated {
      // Each id once: a second value for one would silently replace the first.
      guard changed.insert(element.id).inserted else {
        throw ListChangesMismatch(description: "the id \(element.id) is changed twice")
      }
      if result.elements.update(element) == nil { added.insert(element.id) }
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
  /// The splices that turn the order under `old` into the order under `new`, found by walking both trees from the
  /// top, only into the nodes they do not share: for two versions of one order, the cost of the changed paths.
  static func splices(from old: OrderNode, to new: OrderNode) -> [OrderSplice<ID>] {
    if old === new { return [] }
    // Both sides' nodes of one height: the taller tree's nodes below its root (a root split or merged).
    var (before, after) = ([old], [new])
    var (oldHeight, newHeight) = (old.height, new.height)
    while oldHeight > newHeight {
      before = children(of: before, in: 0..<before.count)
      oldHeight -= 1
    }
    while newHeight > oldHeight {
      after = children(of: after, in: 0..<after.count)
      newHeight -= 1
    }
    var splices: [OrderSplice<ID>] = []
    var position = 0
    regionSplices(
      from: before, in: 0..<before.count, to: after, in: 0..<after.count, height: oldHeight, at: &position,
      into: &splices)
    return splices
  }

  /// Appends the splices that turn the nodes `old[oldRange]` into `new[newRange]`, all of `height`, consecutive in
  /// their orders, from `position` on; advances `position` past the new nodes.
  ///
  /// The nodes both sides share at their ends are skipped; the nodes both still share, in the same order, split what
  /// remains into gaps. A gap of nodes on one side only is spliced whole, a gap of leaves is compared by their
  /// identifiers, and any other gap's children are compared one level down. For one change, a gap at each level is a
  /// node or two, and the nodes visited are the changed paths and their siblings.
  private static func regionSplices(
    from old: [OrderNode], in oldRange: Range<Int>, to new: [OrderNode], in newRange: Range<Int>, height: Int,
    at position: inout Int, into splices: inout [OrderSplice<ID>]
  ) {
    var (oldRange, newRange) = (oldRange, newRange)
    var sharedAfter = 0
    defer { position += sharedAfter }
    // Through the buffers: unspecialised, each subscript of the arrays would look up their type and retain a node.
    old.withUnsafeBufferPointer { old in
      new.withUnsafeBufferPointer { new in
        while !oldRange.isEmpty, !newRange.isEmpty, old[oldRange.lowerBound] === new[newRange.lowerBound] {
          position += new[newRange.lowerBound].count
          oldRange = oldRange.dropFirst()
          newRange = newRange.dropFirst()
        }
        while !oldRange.isEmpty, !newRange.isEmpty, old[oldRange.upperBound - 1] === new[newRange.upperBound - 1] {
          sharedAfter += new[newRange.upperBound - 1].count
          oldRange = oldRange.dropLast()
          newRange = newRange.dropLast()
        }
      }
    }
    if oldRange.isEmpty && newRange.isEmpty { return }
    // The nodes both runs still hold, matched in order: each is kept. In the gaps between them, leaves are compared
    // by their identifiers, and other nodes' children a level down.
    var (oldGap, newGap) = (oldRange.lowerBound, newRange.lowerBound)
    func gap(to oldEnd: Int, _ newEnd: Int) {
      let (oldGapRange, newGapRange) = (oldGap..<oldEnd, newGap..<newEnd)
      // Nothing between two kept nodes: `idSplices` appends nothing.
      if oldGapRange.isEmpty || newGapRange.isEmpty {
        idSplices(from: old, in: oldGapRange, to: new, in: newGapRange, at: &position, into: &splices)
      } else if height == 0 {
        leafGapSplices(from: old, in: oldGapRange, to: new, in: newGapRange, at: &position, into: &splices)
      } else {
        let (before, after) = (children(of: old, in: oldGapRange), children(of: new, in: newGapRange))
        regionSplices(
          from: before, in: 0..<before.count, to: after, in: 0..<after.count, height: height - 1, at: &position,
          into: &splices)
      }
    }
    if oldRange.count > 1 && newRange.count > 1 {
      var inNew: [ObjectIdentifier: Int] = [:]
      // Matched greedily, in order: the nodes two versions of one tree share keep their order, as each change copies
      // only its path.
      for index in newRange where inNew[ObjectIdentifier(new[index])] == nil {
        inNew[ObjectIdentifier(new[index])] = index
      }
      for index in oldRange {
        guard let match = inNew[ObjectIdentifier(old[index])], match >= newGap else { continue }
        gap(to: index, match)
        position += new[match].count
        (oldGap, newGap) = (index + 1, match + 1)
      }
    }
    gap(to: oldRange.upperBound, newRange.upperBound)
  }

  /// Appends the splices that turn the leaves `old[oldRange]` into `new[newRange]`, none shared, from `position` on;
  /// advances `position` past the new leaves.
  ///
  /// Leaves that hold the same identifiers on both sides, in the same order, are kept: a leaf copied without a change
  /// of its identifiers (its labels rewritten, as when a list reaches the size that keeps labels) is not a change.
  private static func leafGapSplices(
    from old: [OrderNode], in oldRange: Range<Int>, to new: [OrderNode], in newRange: Range<Int>,
    at position: inout Int, into splices: inout [OrderSplice<ID>]
  ) {
    guard oldRange.count > 1 && newRange.count > 1 else {
      idSplices(from: old, in: oldRange, to: new, in: newRange, at: &position, into: &splices)
      return
    }
    // The new leaves by their first identifier.
    var byFirst: [ID: Int] = [:]
    for index in newRange {
      guard let first = new[index].ids.first, byFirst[first] == nil else { continue }
      byFirst[first] = index
    }
    var (oldStart, newStart) = (oldRange.lowerBound, newRange.lowerBound)
    for index in oldRange {
      guard let first = old[index].ids.first, let match = byFirst[first], match >= newStart,
        sameIDs(old[index].ids, new[match].ids)
      else { continue }
      idSplices(from: old, in: oldStart..<index, to: new, in: newStart..<match, at: &position, into: &splices)
      position += new[match].count
      (oldStart, newStart) = (index + 1, match + 1)
    }
    idSplices(
      from: old, in: oldStart..<oldRange.upperBound, to: new, in: newStart..<newRange.upperBound, at: &position,
      into: &splices)
  }

  /// Appends the splices that turn the identifiers under `old[oldRange]` into those under `new[newRange]`, from
  /// `position` on; advances `position` past the new identifiers.
  private static func idSplices(
    from old: [OrderNode], in oldRange: Range<Int>, to new: [OrderNode], in newRange: Range<Int>,
    at position: inout Int, into splices: inout [OrderSplice<ID>]
  ) {
    if oldRange.isEmpty && newRange.isEmpty { return }
    let inserted = ids(under: new, in: newRange)
    leafSplices(from: whole(ids(under: old, in: oldRange)), to: whole(inserted), at: position, into: &splices)
    position += inserted.count
  }

  /// Whether two leaves hold the same identifiers in the same order.
  private static func sameIDs(_ lhs: [ID], _ rhs: [ID]) -> Bool {
    let count = lhs.count
    guard rhs.count == count else { return false }
    return lhs.withUnsafeBufferPointer { lhs in
      rhs.withUnsafeBufferPointer { rhs in
        guard let lhs = lhs.baseAddress, let rhs = rhs.baseAddress else { return true }
        for offset in 0..<count where !same(lhs + offset, rhs + offset) { return false }
        return true
      }
    }
  }

  /// The children of `nodes[range]`, in order.
  private static func children(of nodes: [OrderNode], in range: Range<Int>) -> [OrderNode] {
    nodes.withUnsafeBufferPointer { nodes in
      var children: [OrderNode] = []
      for index in range { children.append(contentsOf: nodes[index].children) }
      return children
    }
  }

  /// The identifiers under `nodes[range]`, in order.
  private static func ids(under nodes: [OrderNode], in range: Range<Int>) -> [ID] {
    if range.count == 1 && nodes[range.lowerBound].isLeaf { return nodes[range.lowerBound].ids }
    var ids: [ID] = []
    for index in range { ids.append(contentsOf: nodes[index].allIDs()) }
    return ids
  }

  /// Appends the splices that turn `removed` into `inserted`, the identifiers of a region of the order at `position`:
  /// none if they are the same; for one identifier moved across the region (a drag), two splices of that identifier;
  /// otherwise those of a shortest edit script between the first and the last that differ, or one splice of the
  /// identifiers between them where that is smaller or the script is past the work allowed
  /// (``shortestSplices(from:to:)``).
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
    // The script only where it writes less: each splice costs about two ids more than its own (its position and
    // count), so dense changes (every pair of a leaf swapped) are smaller as the one splice.
    if !old.isEmpty && !new.isEmpty && old.count + new.count > 2, let script = shortestSplices(from: old, to: new),
      script.reduce(0, { $0 + $1.ids.count + 2 }) < new.count + 2
    {
      for splice in script {
        let at = position + prefix + splice.position
        splices.append(OrderSplice(position: at, removing: splice.removing, ids: splice.ids))
      }
      return
    }
    splices.append(OrderSplice(position: position + prefix, removing: old.count, ids: Array(new)))
  }

  /// The splices of a shortest edit script that turns `old` into `new` (Myers, "An O(ND) difference algorithm"), each
  /// run of removals and insertions with no identifier kept between them one splice, positions from the regions'
  /// start; `nil` if it takes more than 64 removals and insertions, or fewer in a region of more than 1,562 ids (about
  /// 100,000 comparisons at most: a region of a few leaves with a few changes has one; a list reversed has none).
  ///
  /// The same identifiers always give the same splices: a session's writer and its verify find the same bytes.
  private static func shortestSplices(from old: ArraySlice<ID>, to new: ArraySlice<ID>) -> [OrderSplice<ID>]? {
    let (oldCount, newCount) = (old.count, new.count)
    let limit = min(oldCount + newCount, 64, max(2, 100_000 / (oldCount + newCount)))
    // Every script has at least the difference of the counts in insertions or removals.
    guard abs(oldCount - newCount) <= limit else { return nil }
    // `furthest[offset + k]`: the furthest position in `old` that the edits so far reach on diagonal k (positions in
    // `old` minus positions in `new`), -1 where they reach none; `trace[d]` keeps it as it was before the dth edit.
    let offset = limit + 1
    var furthest = [Int](repeating: -1, count: 2 * limit + 3)
    var trace: [[Int]] = []
    let edits: Int? = old.withUnsafeBufferPointer { old in
      new.withUnsafeBufferPointer { new in
        let (before, after) = (old.baseAddress!, new.baseAddress!)
        for edit in 0...limit {
          trace.append(furthest)
          for diagonal in stride(from: -edit, through: edit, by: 2) {
            guard
              var x = editStart(
                on: diagonal, after: edit, furthest: furthest, offset: offset, counts: (oldCount, newCount))?.x
            else {
              furthest[offset + diagonal] = -1
              continue
            }
            var y = x - diagonal
            while x < oldCount && y < newCount && same(before + x, after + y) {
              x += 1
              y += 1
            }
            furthest[offset + diagonal] = x
            if x == oldCount && y == newCount { return edit }
          }
        }
        return nil
      }
    }
    guard let edits else { return nil }
    // The path back from the end: each edit's start, and whether it inserts an identifier of `new` (or removes one of
    // `old`), found as the forward pass chose it.
    var path: [(x: Int, y: Int, inserts: Bool)] = []
    var (x, y) = (oldCount, newCount)
    for edit in stride(from: edits, to: 0, by: -1) {
      let diagonal = x - y
      guard
        let start = editStart(
          on: diagonal, after: edit, furthest: trace[edit], offset: offset, counts: (oldCount, newCount))
      else { return nil }
      // The point the edit leaves from: the furthest on the diagonal above (an insertion) or below (a removal).
      (x, y) = start.inserts ? (start.x, start.x - diagonal - 1) : (start.x - 1, start.x - 1 - diagonal + 1)
      path.append((x, y, start.inserts))
    }
    // Edits that follow each other, with no identifier kept between them, are one splice.
    var splices: [OrderSplice<ID>] = []
    var run: (x: Int, y: Int, endX: Int, endY: Int)?
    func close() {
      guard let run else { return }
      let ids = Array(new[(new.startIndex + run.y)..<(new.startIndex + run.endY)])
      splices.append(OrderSplice(position: run.y, removing: run.endX - run.x, ids: ids))
    }
    for step in path.reversed() {
      let end = step.inserts ? (x: step.x, y: step.y + 1) : (x: step.x + 1, y: step.y)
      if let current = run, current.endX == step.x && current.endY == step.y {
        run = (current.x, current.y, end.x, end.y)
      } else {
        close()
        run = (step.x, step.y, end.x, end.y)
      }
    }
    close()
    // Checked before it is written: the splices applied to `old` give `new`.
    var applied = Array(old)
    for splice in splices {
      guard splice.position >= 0, splice.removing <= applied.count - splice.position else { return nil }
      applied.replaceSubrange(splice.position..<(splice.position + splice.removing), with: splice.ids)
    }
    let made = applied.withUnsafeBufferPointer { applied in
      new.withUnsafeBufferPointer { new in
        applied.count == new.count
          && (0..<new.count).allSatisfy { same(applied.baseAddress! + $0, new.baseAddress! + $0) }
      }
    }
    return made ? splices : nil
  }

  /// Where the path of a shortest edit script reaches diagonal `diagonal` with its `edit`th edit, before the
  /// identifiers kept after it; `nil` if it cannot.
  ///
  /// From the furthest point of the diagonal above by an insertion, or of the one below by a removal, whichever
  /// reaches further within both regions (the insertion if they reach as far). The start, before any edit, is 0.
  private static func editStart(
    on diagonal: Int, after edit: Int, furthest: [Int], offset: Int, counts: (old: Int, new: Int)
  ) -> (x: Int, inserts: Bool)? {
    if edit == 0 { return (0, false) }
    var insertion: Int?
    if diagonal < edit, furthest[offset + diagonal + 1] >= 0, furthest[offset + diagonal + 1] - diagonal <= counts.new {
      insertion = furthest[offset + diagonal + 1]
    }
    var removal: Int?
    if diagonal > -edit, furthest[offset + diagonal - 1] >= 0, furthest[offset + diagonal - 1] + 1 <= counts.old {
      removal = furthest[offset + diagonal - 1] + 1
    }
    switch (insertion, removal) {
    case (let insertion?, let removal?): return insertion >= removal ? (insertion, true) : (removal, false)
    case (let insertion?, nil): return (insertion, true)
    case (nil, let removal?): return (removal, false)
    case (nil, nil): return nil
    }
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
