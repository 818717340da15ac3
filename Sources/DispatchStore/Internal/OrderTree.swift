/// The order of an ``IdentifiedList``: its identifiers in a B-tree whose nodes count what is under them.
///
/// Finding, changing, inserting and removing by position cost O(log n) node visits; a copy of the tree shares all of
/// its nodes, and a change to a copy copies only the nodes on its path (each only if it is shared). So two versions
/// of a list share every node their changes did not touch, and comparing them skips those nodes by identity.
///
/// In a tree of ``labelledFrom`` identifiers or more, each identifier has a label, increasing along the order (order
/// maintenance, proposal 0019), kept in its leaf and in `labels`, a map from identifier to label:
/// ``firstIndex(of:)`` finds an identifier's position by its label in O(log n). A smaller tree has none, and searches
/// its identifiers in order. Labels are not part of the order: `==` and the changes between two trees compare
/// identifiers only.
@usableFromInline struct OrderTree<ID: Hashable>: Sendable {
  /// The most entries (identifiers of a leaf, children of an inner node) a node holds.
  @inlinable static var capacity: Int { 64 }
  /// The distance between the labels of a tree built at once, and between an appended identifier's and the last.
  @inlinable static var spacing: UInt64 { 1 << 32 }
  /// The least distance between labels that the smallest relabelled window (32 places) leaves.
  @inlinable static var relabelSpacing: UInt64 { 1 << 10 }
  /// The size from which a tree keeps labels: below it, searching the identifiers costs about what keeping labels
  /// adds to each insertion and removal.
  @inlinable static var labelledFrom: Int { 4_096 }
  /// The size below which a labelled tree drops its labels (well below ``labelledFrom``, so that a tree whose size
  /// goes back and forth around one of them does not label and unlabel itself at each step).
  @inlinable static var unlabelledBelow: Int { 1_024 }

  @usableFromInline var root: OrderNode<ID>
  /// The label of each identifier, the one its place in the order holds; `nil` in a tree without labels.
  @usableFromInline var labels: ElementTrie<OrderLabel<ID>>?

  @inlinable var count: Int { root.count }

  @inlinable init() {
    root = OrderNode(ids: [], labels: [])
    labels = nil
  }

  /// A tree of `ids`, in their order; leaves are filled, the last ones with what remains.
  ///
  /// Read through the array's buffer, a leaf's slice at a time: in code not specialised for the identifier type,
  /// iterating the array reads each identifier through the collection's generic subscript, which allocates for each.
  @inlinable init(_ ids: [ID]) {
    var level: [OrderNode<ID>] = []
    level.reserveCapacity((ids.count + Self.capacity - 1) / Self.capacity)
    ids.withUnsafeBufferPointer { ids in
      for start in stride(from: 0, to: ids.count, by: Self.capacity) {
        let end = min(start + Self.capacity, ids.count)
        level.append(OrderNode(ids: Array(UnsafeBufferPointer(rebasing: ids[start..<end])), labels: []))
      }
    }
    if level.isEmpty { level.append(OrderNode(ids: [], labels: [])) }
    labels = nil
    while level.count > 1 {
      level = stride(from: 0, to: level.count, by: Self.capacity).map { start in
        OrderNode(children: Array(level[start..<min(start + Self.capacity, level.count)]))
      }
    }
    root = level[0]
    level = []
    if count >= Self.labelledFrom { labelAll() }
  }

  /// Gives every identifier a label, evenly spread: 2^32 apart from 2^62 on, up to 2^30 identifiers, so that the
  /// first has as much room before it as the last after it (a list where new elements go first, newest first, has
  /// 2^30 insertions at the front before any relabelling there); evenly over all labels in a larger tree.
  ///
  /// Not while an identifier is in the tree twice (changes applied splice by splice may insert an identifier before
  /// removing its old place, and which place stays is not known here): the tree then stays without labels, and
  /// ``labelIfDue()`` labels it once the changes are applied.
  @inlinable mutating func labelAll() {
    let (first, step): (UInt64, UInt64) =
      count < 1 << 30 ? (1 << 62, Self.spacing) : (0, UInt64.max / UInt64(count + 1))
    var entries: [OrderLabel<ID>] = []
    entries.reserveCapacity(count)
    root.forEachLeaf { ids in
      for index in ids.indices {
        entries.append(OrderLabel(id: ids[index], label: first + step &* UInt64(entries.count + 1)))
      }
      return true
    }
    guard let built = ElementTrie.build(entries) else { return }
    labels = built
    var next = 0
    OrderNode.makeUnique(&root)
    root.forEachLeafUniquely { leaf in
      leaf.labels = (next..<(next + leaf.ids.count)).map { entries[$0].label }
      next += leaf.ids.count
    }
  }

  /// Labels the tree if it is large enough to keep labels and has none: after changes applied splice by splice,
  /// during which ``labelAll()`` may have found an identifier twice.
  @inlinable mutating func labelIfDue() {
    if labels == nil && count >= Self.labelledFrom { labelAll() }
  }

  /// Drops every label.
  @inlinable mutating func unlabelAll() {
    labels = nil
    OrderNode.makeUnique(&root)
    root.forEachLeafUniquely { $0.labels = [] }
  }

  /// The identifier at `position`, which is in range.
  @inlinable subscript(position: Int) -> ID {
    withLeaf(holding: position) { leaf, offset in leaf.ids.withUnsafeBufferPointer { $0[offset] } }
  }

  /// The label at `position`, which is in range.
  @inlinable func label(at position: Int) -> UInt64 {
    withLeaf(holding: position) { leaf, offset in leaf.labels.withUnsafeBufferPointer { $0[offset] } }
  }

  /// Runs `body` with the leaf holding `position`, which is in range, and the position in it.
  ///
  /// Walks down without retaining or releasing a node or an array buffer on the way: the tree holds its root, and
  /// each node its children, for the whole walk (proposal 0023, step 2). `body` must not keep the leaf.
  @inlinable func withLeaf<Result>(holding position: Int, _ body: (OrderNode<ID>, Int) -> Result) -> Result {
    // The leaf is read through its buffer, unchecked in release builds: a position out of range traps here instead.
    precondition(position >= 0 && position < count, "OrderTree: position \(position) is out of range")
    var node = Unmanaged.passUnretained(root)
    var position = position
    while true {
      let next: Unmanaged<OrderNode<ID>>? = node._withUnsafeGuaranteedRef { node in
        guard !node.isLeaf else { return nil }
        return node.children.withUnsafeBufferPointer { children in
          // As `child(holding:)`: the first child whose identifiers reach past `position`, or the last.
          var child = 0
          while child < children.count - 1, position >= children[child].count {
            position -= children[child].count
            child += 1
          }
          return Unmanaged.passUnretained(children[child])
        }
      }
      guard let next else { return node._withUnsafeGuaranteedRef { body($0, position) } }
      node = next
    }
  }

  /// Counts a change of the identifiers in the root the tree has after it, which it makes its own (the root a change
  /// leaves may be a child it held, which becomes the root again when the tree shrinks).
  @inlinable mutating func counted() {
    OrderNode.makeUnique(&root)
    root.generation &+= 1
  }

  /// Replaces the identifier at `position`, which is in range; the new identifier takes its label.
  @inlinable mutating func replace(at position: Int, with id: ID) {
    OrderNode.makeUnique(&root)
    defer { counted() }
    let (old, label) = root.replace(at: position, with: id)
    guard let label else { return }
    forget(old, label: label)
    labels?.update(OrderLabel(id: id, label: label))
  }

  /// Inserts `id` at `position`, from 0 to `count`; returns how many other identifiers were given new labels to make
  /// room for its label.
  ///
  /// - Parameter mayRepeat: Whether `id` may already be in the tree (changes applied splice by splice insert an
  ///   identifier before they remove its old place); the map then keeps the label of its new place.
  @discardableResult
  @inlinable mutating func insert(_ id: ID, at position: Int, mayRepeat: Bool = false) -> Int {
    defer { counted() }
    guard labels != nil else {
      OrderNode.makeUnique(&root)
      if let right = root.insert(id, label: nil, at: position, appending: position == count) {
        root = OrderNode(children: [root, right])
      }
      // At the size, not from it: a tree left without labels by an identifier found twice is labelled once, by
      // `labelIfDue()`, not tried again at each insertion.
      if count == Self.labelledFrom { labelAll() }
      return 0
    }
    var label = newLabel(at: position)
    var relabelled = 0
    if label == nil {
      relabelled = relabel(around: position, mayRepeat: mayRepeat)
      label = newLabel(at: position)
    }
    guard let label else { preconditionFailure("OrderTree: no label left after relabelling") }
    OrderNode.makeUnique(&root)
    if let right = root.insert(id, label: label, at: position, appending: position == count) {
      root = OrderNode(children: [root, right])
    }
    labels?.update(OrderLabel(id: id, label: label))
    return relabelled
  }

  /// Removes the identifier at `position`, which is in range, and returns it.
  @inlinable mutating func remove(at position: Int) -> ID {
    defer { counted() }
    OrderNode.makeUnique(&root)
    let (id, label) = root.remove(at: position)
    while !root.isLeaf && root.children.count == 1 { root = root.children[0] }
    if let label {
      if count < Self.unlabelledBelow {
        unlabelAll()
      } else {
        forget(id, label: label)
      }
    }
    return id
  }

  /// Removes `id`'s label if it is `label`: an identifier inserted again before its old place was removed (a change
  /// of the order applied splice by splice) keeps the label of its new place.
  @inlinable mutating func forget(_ id: ID, label: UInt64) {
    if labels?[id]?.label == label { labels?.remove(id) }
  }

  /// A label between those at `position - 1` and `position` (0 and `UInt64.max` past the ends, never given), or
  /// `nil` if they are adjacent.
  @inlinable func newLabel(at position: Int) -> UInt64? {
    let low = position > 0 ? label(at: position - 1) : 0
    let high = position < count ? label(at: position) : UInt64.max
    guard high > low, high - low >= 2 else { return nil }
    let half = (high - low) / 2
    if position == count { return low + min(Self.spacing, half) }
    if position == 0 { return high - min(Self.spacing, half) }
    return low + half
  }

  /// Spreads the labels of a window of positions around `position` evenly and returns how many places it relabelled.
  ///
  /// The window doubles until spreading it leaves a distance between its labels that grows with the window:
  /// ``relabelSpacing`` for the smallest, 1.5 times more at each doubling (a whole tree of fewer than 2^35
  /// identifiers has room for it; a larger one is spread over all labels).
  ///
  /// Larger windows left sparser (after the thresholds of Bender et al., "Two simplified algorithms for maintaining
  /// order in a list") keep the places relabelled per insertion few, amortised: a window spread at one distance has
  /// room for many insertions before any window inside it is crowded again (`OrderTreeTests` measures it). With one
  /// distance for every window, insertions in one place leave a growing region at just that distance, and the window
  /// relabelled at each step grows with it.
  ///
  /// - Parameter mayRepeat: Whether an identifier may be at two places: the map holds the label of one of them, and
  ///   keeps that place's new label.
  @inlinable mutating func relabel(around position: Int, mayRepeat: Bool) -> Int {
    var width = 16
    var least = Self.relabelSpacing
    while true {
      let start = max(0, position - width)
      let end = min(count, position + width)
      let low = start > 0 ? label(at: start - 1) : 0
      let high = end < count ? label(at: end) : UInt64.max
      let step = (high - low) / UInt64(end - start + 2)
      if step >= least || (start == 0 && end == count) {
        // Only where the map holds this place's label: an identifier inserted again before its old place is removed
        // (changes applied splice by splice) keeps the label of its new place. If one may be at two places, which
        // places those are is found before any label changes: the new label of its first place could be the old
        // label of its second.
        let holdsLabel = mayRepeat ? placesTheMapHolds(in: start..<end) : nil
        OrderNode.makeUnique(&root)
        root.setLabels(in: start..<end) { offset, id, old in
          // The place at `position` is left twice as wide, for the identifier to insert there.
          let label = low + step * UInt64(offset - start + (offset >= position ? 2 : 1))
          if let holdsLabel {
            if holdsLabel[offset - start] { labels?.update(OrderLabel(id: id, label: label)) }
          } else {
            labels?.replace(OrderLabel(id: id, label: label)) { $0.label == old }
          }
          return label
        }
        return end - start
      }
      width *= 2
      least += least / 2
    }
  }

  /// Whether the map holds the label of each place in `range`.
  @inlinable func placesTheMapHolds(in range: Range<Int>) -> [Bool] {
    range.map { position in
      withLeaf(holding: position) { leaf, offset in labels?[leaf.ids[offset]]?.label == leaf.labels[offset] }
    }
  }

  /// The position of `id`: found by its label in a labelled tree, O(log n); by visiting the identifiers in order in
  /// a smaller one.
  @inlinable func firstIndex(of id: ID) -> Int? {
    guard let labels else {
      var offset = 0
      var found: Int?
      root.forEachLeaf { ids in
        if let index = ids.firstIndex(of: id) {
          found = offset + index
          return false
        }
        offset += ids.count
        return true
      }
      return found
    }
    guard let label = labels[id]?.label else { return nil }
    var node = root
    var offset = 0
    while !node.isLeaf {
      // The first child whose last label is at least `label`.
      var (low, high) = (0, node.children.count - 1)
      while low < high {
        let middle = (low + high) / 2
        if node.children[middle].lastLabel < label { low = middle + 1 } else { high = middle }
      }
      for child in 0..<low { offset += node.children[child].count }
      node = node.children[low]
    }
    var (low, high) = (0, node.labels.count)
    while low < high {
      let middle = (low + high) / 2
      if node.labels[middle] < label { low = middle + 1 } else { high = middle }
    }
    guard low < node.ids.count, node.labels[low] == label, node.ids[low] == id else {
      preconditionFailure("OrderTree: the label of \(id) is not at its place")
    }
    return offset + low
  }

  /// The identifiers in order.
  @inlinable func makeIterator() -> Iterator { Iterator(root: root) }

  /// Visits the identifiers in order, a leaf at a time, with a stack of the inner nodes above the leaf.
  @usableFromInline struct Iterator: IteratorProtocol {
    @usableFromInline var stack: [(node: OrderNode<ID>, next: Int)] = []
    @usableFromInline var leaf: [ID] = []
    @usableFromInline var position = 0

    @inlinable init(root: OrderNode<ID>) {
      descend(from: root)
    }

    @inlinable mutating func descend(from node: OrderNode<ID>) {
      var node = node
      while !node.isLeaf {
        stack.append((node, 1))
        node = node.children[0]
      }
      leaf = node.ids
      position = 0
    }

    @inlinable mutating func next() -> ID? {
      while position == leaf.count {
        guard let top = stack.popLast() else { return nil }
        if top.next < top.node.children.count {
          stack.append((top.node, top.next + 1))
          descend(from: top.node.children[top.next])
        }
      }
      defer { position += 1 }
      return leaf[position]
    }
  }

  /// The tree's height, 1 for a leaf, after checking the tree's invariants (for tests).
  ///
  /// What every change keeps true: each node's count is what is under it, no node holds more than ``capacity`` entries,
  /// all leaves are at the same depth, no inner node is empty, and of two neighbours, one is at least half full.
  func checkedHeight() -> Int {
    func check(_ node: OrderNode<ID>) -> Int {
      if node.isLeaf {
        precondition(node.ids.count <= Self.capacity && node.count == node.ids.count, "a leaf's count is wrong")
        precondition(
          node.labels.count == (labels == nil ? 0 : node.ids.count), "a leaf's labels are not its identifiers'")
        return 1
      }
      precondition(!node.children.isEmpty && node.children.count <= Self.capacity, "an inner node's size is wrong")
      precondition(node.count == node.children.reduce(0) { $0 + $1.count }, "an inner node's count is wrong")
      let heights = Set(node.children.map(check))
      precondition(heights.count == 1, "leaves at different depths")
      for (left, right) in zip(node.children, node.children.dropFirst()) {
        precondition(left.entryCount >= Self.capacity / 2 || right.entryCount >= Self.capacity / 2, "small neighbours")
      }
      return heights.first! + 1
    }
    let height = check(root)
    precondition(count < Self.labelledFrom || labels != nil, "a large tree without labels")
    precondition(count >= Self.unlabelledBelow || labels == nil, "a small tree with labels")
    guard let labels else { return height }
    var previous: UInt64?
    var mapped = 0
    root.forEachLeaf(labelled: { id, label in
      precondition(previous.map { $0 < label } ?? true, "labels do not increase along the order")
      precondition(labels[id]?.label == label, "the map's label of \(id) is not its place's")
      previous = label
      mapped += 1
      return true
    })
    var entries = 0
    labels.root.forEach { _ in entries += 1 }
    precondition(entries == mapped, "the map has \(entries) labels for \(mapped) identifiers")
    return height
  }

  /// Whether the two trees hold the same identifiers in the same order; subtrees they share are not visited.
  @inlinable static func == (lhs: Self, rhs: Self) -> Bool {
    OrderNode.equal(lhs.root, rhs.root)
  }
}

/// A node of an ``OrderTree``: a leaf of identifiers, or an inner node of children, with the number of identifiers
/// under it.
///
/// `@unchecked Sendable` as a copy-on-write buffer is: a node is changed only by the one value that holds it
/// uniquely (`makeUnique`), so a node another value or thread can reach is never written. For the same reason, no
/// two accesses to a node's fields overlap, so they are not checked for exclusivity at run time (the checks cost
/// more than the reads of an unspecialised comparison).
@usableFromInline final class OrderNode<ID: Hashable>: @unchecked Sendable {
  @usableFromInline let isLeaf: Bool
  /// A leaf's identifiers; empty in an inner node.
  @usableFromInline @exclusivity(unchecked) var ids: [ID]
  /// A leaf's labels, one for each identifier, increasing; empty in an inner node.
  @usableFromInline @exclusivity(unchecked) var labels: [UInt64]
  /// An inner node's children, never empty; empty in a leaf.
  @usableFromInline @exclusivity(unchecked) var children: [OrderNode]
  /// Whether `children` is still the buffer of the node this one copies: copied (``ownChildren()``) before a change
  /// goes down into one of them.
  @usableFromInline @exclusivity(unchecked) var sharesChildren = false
  /// How many changes of its identifiers a tree made that ended with this node as its root.
  ///
  /// Counted at the end of each (``OrderTree/counted()``); with the element tree's count and the roots' identity, it
  /// tells which state of the list this is (``ListMark``).
  @usableFromInline @exclusivity(unchecked) var generation: UInt64 = 0
  /// The number of identifiers under this node.
  @usableFromInline @exclusivity(unchecked) var count: Int

  @inlinable init(ids: [ID], labels: [UInt64]) {
    isLeaf = true
    self.ids = ids
    self.labels = labels
    children = []
    count = ids.count
  }

  @inlinable init(children: [OrderNode]) {
    isLeaf = false
    ids = []
    labels = []
    self.children = children
    var count = 0
    for index in children.indices { count += children[index].count }
    self.count = count
  }

  @inlinable init(copying node: OrderNode) {
    isLeaf = node.isLeaf
    ids = node.ids
    labels = node.labels
    children = node.children
    sharesChildren = !node.children.isEmpty
    count = node.count
  }

  /// Makes `children` this node's own before a change goes down into one of them: copied if it is the buffer of the
  /// node this one copies.
  ///
  /// Copied reference by reference (`elementwiseCopy()`), in code specialised for the identifier type where the list
  /// is changed.
  @inlinable func ownChildren() {
    guard sharesChildren else { return }
    sharesChildren = false
    children = children.elementwiseCopy()
  }

  /// Makes `node` one that only the caller holds, copying it if it is shared.
  @inlinable static func makeUnique(_ node: inout OrderNode) {
    if !isKnownUniquelyReferenced(&node) { node = OrderNode(copying: node) }
  }

  /// The number of entries: identifiers of a leaf, children of an inner node.
  @inlinable var entryCount: Int { isLeaf ? ids.count : children.count }

  /// The child holding `position`, and the position in it.
  ///
  /// An insertion at the end of one child and the start of
  /// the next (`atEnd`) goes to the end of the first.
  @inlinable func child(holding position: Int, atEnd: Bool = false) -> (index: Int, position: Int) {
    var child = 0
    var position = position
    while child < children.count - 1
      && (position > children[child].count || (!atEnd && position == children[child].count))
    {
      position -= children[child].count
      child += 1
    }
    return (child, position)
  }

  /// Replaces the identifier at `position` in this node, which the caller holds uniquely; returns the identifier
  /// replaced and its label.
  @inlinable func replace(at position: Int, with id: ID) -> (ID, UInt64?) {
    if isLeaf {
      defer { ids[position] = id }
      return (ids[position], labels.isEmpty ? nil : labels[position])
    }
    let (index, inner) = child(holding: position)
    ownChildren()
    Self.makeUnique(&children[index])
    return children[index].replace(at: inner, with: id)
  }

  /// Sets each label at the positions of `range` in this node, which the caller holds uniquely, to what `label`
  /// returns for the position, its identifier and its label; in order.
  ///
  /// - Parameter offset: The position of this node's first identifier in the tree.
  @inlinable func setLabels(
    in range: Range<Int>, offset: Int = 0, _ label: (_ position: Int, _ id: ID, _ old: UInt64) -> UInt64
  ) {
    if isLeaf {
      let (first, last) = (max(range.lowerBound - offset, 0), min(range.upperBound - offset, ids.count))
      guard first < last else { return }
      for index in first..<last { labels[index] = label(offset + index, ids[index], labels[index]) }
      return
    }
    var start = offset
    for index in children.indices {
      let end = start + children[index].count
      if end > range.lowerBound {
        ownChildren()
        Self.makeUnique(&children[index])
        children[index].setLabels(in: range, offset: start, label)
      }
      if end >= range.upperBound { return }
      start = end
    }
  }

  /// The last label under this node, which is not empty.
  @inlinable var lastLabel: UInt64 {
    var node = self
    while !node.isLeaf { node = node.children[node.children.count - 1] }
    return node.labels[node.labels.count - 1]
  }

  /// Inserts into this node, which the caller holds uniquely; returns the right half if the node split.
  ///
  /// `appending` tells an insertion at the end of the whole tree.
  @inlinable func insert(_ id: ID, label: UInt64?, at position: Int, appending: Bool) -> OrderNode? {
    count += 1
    if isLeaf {
      ids.insert(id, at: position)
      if let label { labels.insert(label, at: position) }
      return ids.count > OrderTree<ID>.capacity ? split(appending: appending) : nil
    }
    let (index, inner) = child(holding: position, atEnd: true)
    ownChildren()
    Self.makeUnique(&children[index])
    if let right = children[index].insert(id, label: label, at: inner, appending: appending) {
      children.insert(right, at: index + 1)
      if children.count > OrderTree<ID>.capacity { return split(appending: appending) }
    }
    return nil
  }

  /// Moves the second half of the entries into a new node and returns it.
  ///
  /// A node grown by an append to the tree keeps
  /// all but the last entry, so that a list built by appending fills its nodes (the new node, last in the tree, has
  /// no right neighbour).
  @inlinable func split(appending: Bool) -> OrderNode {
    let keep = appending ? entryCount - 1 : entryCount / 2
    if isLeaf {
      let right = OrderNode(ids: Array(ids[keep...]), labels: labels.isEmpty ? [] : Array(labels[keep...]))
      ids.removeSubrange(keep...)
      if !labels.isEmpty { labels.removeSubrange(keep...) }
      count = ids.count
      return right
    }
    let right = OrderNode(children: Array(children[keep...]))
    children.removeSubrange(keep...)
    count -= right.count
    return right
  }

  /// Removes from this node, which the caller holds uniquely.
  ///
  /// A child left with fewer than half the entries it may
  /// hold merges with a neighbour that fits with it in one node, until it is half full or none fits, so that of two
  /// neighbours, one is at least half full (and the tree's height stays logarithmic).
  @inlinable func remove(at position: Int) -> (ID, UInt64?) {
    count -= 1
    if isLeaf { return (ids.remove(at: position), labels.isEmpty ? nil : labels.remove(at: position)) }
    let (index, inner) = child(holding: position)
    ownChildren()
    Self.makeUnique(&children[index])
    let id = children[index].remove(at: inner)
    let child = children[index]
    if child.count == 0 {
      children.remove(at: index)
    } else {
      mergeWhileSmall(index)
    }
    return id
  }

  @inlinable func mergeWhileSmall(_ index: Int) {
    let capacity = OrderTree<ID>.capacity
    var index = index
    merging: while children[index].entryCount < capacity / 2 {
      for neighbour in [index - 1, index + 1] where children.indices.contains(neighbour) {
        let (left, right) = (min(index, neighbour), max(index, neighbour))
        guard children[left].entryCount + children[right].entryCount <= capacity else { continue }
        let merged =
          children[left].isLeaf
          ? OrderNode(
            ids: children[left].ids + children[right].ids, labels: children[left].labels + children[right].labels)
          : OrderNode(children: children[left].children + children[right].children)
        if !merged.isLeaf { merged.mergeJoin(at: children[left].children.count) }
        children.replaceSubrange(left...right, with: [merged])
        index = left
        continue merging
      }
      return
    }
  }

  /// In a node just made by joining two inner nodes' children, which the caller holds uniquely: merges the two
  /// children at the join, `index - 1` and `index`, if both are under half full, and so on down the join.
  ///
  /// Each of the two joined nodes kept the rule that of two neighbours one is at least half full; only the
  /// children meeting at the join may break it.
  @inlinable func mergeJoin(at index: Int) {
    let capacity = OrderTree<ID>.capacity
    guard index > 0, index < children.count else { return }
    let (left, right) = (children[index - 1], children[index])
    guard left.entryCount < capacity / 2 && right.entryCount < capacity / 2 else { return }
    let merged =
      left.isLeaf
      ? OrderNode(ids: left.ids + right.ids, labels: left.labels + right.labels)
      : OrderNode(children: left.children + right.children)
    if !merged.isLeaf { merged.mergeJoin(at: left.children.count) }
    children.replaceSubrange((index - 1)...index, with: [merged])
  }

  /// Calls `body` with each leaf's identifiers in order, until it returns false; returns false if it stopped.
  @discardableResult
  @inlinable func forEachLeaf(_ body: ([ID]) -> Bool) -> Bool {
    if isLeaf { return body(ids) }
    for child in children where !child.forEachLeaf(body) { return false }
    return true
  }

  /// Calls `body` with each leaf in order, each made one that only this tree holds; this node is.
  @inlinable func forEachLeafUniquely(_ body: (OrderNode) -> Void) {
    if isLeaf {
      body(self)
      return
    }
    for index in children.indices {
      ownChildren()
      Self.makeUnique(&children[index])
      children[index].forEachLeafUniquely(body)
    }
  }

  /// Calls `body` with each identifier and its label in order, until it returns false; returns false if it stopped.
  @discardableResult
  func forEachLeaf(labelled body: (ID, UInt64) -> Bool) -> Bool {
    if isLeaf {
      for index in ids.indices where !body(ids[index], labels[index]) { return false }
      return true
    }
    for child in children where !child.forEachLeaf(labelled: body) { return false }
    return true
  }

  @inlinable static func equal(_ lhs: OrderNode, _ rhs: OrderNode) -> Bool {
    if lhs === rhs { return true }
    guard lhs.count == rhs.count else { return false }
    if lhs.isLeaf && rhs.isLeaf { return lhs.ids == rhs.ids }
    if !lhs.isLeaf && !rhs.isLeaf && lhs.children.count == rhs.children.count
      && lhs.children.indices.allSatisfy({ lhs.children[$0].count == rhs.children[$0].count })
    {
      // Index loops, not `zip`: unspecialised, `zip` looks up its generic metadata at every step.
      for index in lhs.children.indices where lhs.children[index] !== rhs.children[index] {
        if !equal(lhs.children[index], rhs.children[index]) { return false }
      }
      return true
    }
    var left = OrderTree<ID>.Iterator(root: lhs)
    var right = OrderTree<ID>.Iterator(root: rhs)
    while let id = left.next() {
      guard id == right.next() else { return false }
    }
    return true
  }
}

/// An identifier's label in an ``OrderTree``: an entry of its map from identifier to label.
@usableFromInline struct OrderLabel<ID: Hashable>: Identifiable {
  @usableFromInline let id: ID
  @usableFromInline var label: UInt64

  @inlinable init(id: ID, label: UInt64) {
    self.id = id
    self.label = label
  }
}
