import Testing

@testable import DispatchStore

/// The changes between two versions of a list: applied to the older one, or to a list equal to it built another way,
/// they make the newer one; a one-element change is one entry.
@Suite(
  "IdentifiedList changes", .watchdog, .offThePool,
  .disabled(if: isThreadSanitized, "value code on one thread: no race to find; runs plain and under AddressSanitizer"))
struct IdentifiedListChangesTests {
  typealias Item = IdentifiedListTests.Item

  /// One random change of `list`, as `Array` would make it to `reference`; returns the positions it changed.
  @discardableResult
  static func change(
    _ list: inout IdentifiedList<Item>, _ reference: inout [Item], nextID: inout Int, using random: inout SplitMix
  ) -> [Int] {
    switch Int.random(in: 0..<6, using: &random) {
    case 0:
      let item = Item(id: nextID, value: 0)
      nextID += 1
      let position = Int.random(in: 0...reference.count, using: &random)
      reference.insert(item, at: position)
      list.insert(item, at: position)
      return [position]
    case 1 where !reference.isEmpty:
      let position = Int.random(in: 0..<reference.count, using: &random)
      reference.remove(at: position)
      list.remove(at: position)
      return [position]
    case 2 where reference.count > 1:
      let (first, second) = (
        Int.random(in: 0..<reference.count, using: &random), Int.random(in: 0..<reference.count, using: &random)
      )
      reference.swapAt(first, second)
      list.swapAt(first, second)
      return [first, second]
    case 3:
      let item = Item(id: nextID, value: 0)
      nextID += 1
      reference.append(item)
      list.append(item)
      return [reference.count - 1]
    default:
      guard !reference.isEmpty else { return [] }
      let position = Int.random(in: 0..<reference.count, using: &random)
      reference[position].value += 1
      list[position].value += 1
      return [position]
    }
  }

  @Test(
    .disabled(if: isSanitized, "value code on one thread; under a sanitizer its load starved other suites"),
    arguments: [0, 40, 5_000])
  func changesAppliedToAnEqualListMakeTheNewerVersion(initialCount: Int) throws {
    var random = SplitMix(seed: UInt64(initialCount) + 3)
    var sampler = SplitMix(seed: UInt64(initialCount) + 4)  // apart, so that the changes are the same as before
    var reference = (0..<initialCount).map { Item(id: $0, value: $0) }
    var list = IdentifiedList(reference)
    var nextID = initialCount
    // Fewer rounds under a sanitizer: its runtime makes each several times slower, and the suites beside this one
    // wait for Dispatch's threads with deadlines.
    for round in 0..<(isSanitized ? 60 : 300) {
      let (old, oldReference) = (list, reference)
      var changed: [Int] = []
      for _ in 0..<(round % 5 + 1) { changed += Self.change(&list, &reference, nextID: &nextID, using: &random) }
      let changes = list.changes(since: old, same: { $0.pointee == $1.pointee })

      var same = old
      try same.apply(changes)
      #expect(Array(same) == reference)
      // Every id's position by its label, after splices that may insert an id before removing its old place: every
      // id every tenth round; in the others, those within 16 places of a change (in the leaves a splice rewrote)
      // and a hundred at random (all of them took half of this test's time).
      _ = same.order.checkedHeight()
      let positions =
        round % 10 == 0 || reference.count <= 100
        ? Array(reference.indices)
        : changed.flatMap { max(0, $0 - 16)..<min(reference.count, $0 + 17) }
          + (0..<100).map { _ in Int.random(in: reference.indices, using: &sampler) }
      #expect(positions.allSatisfy { same.index(id: reference[$0].id) == $0 })
      // The reader's base is decoded, not the writer's nodes: a list of the same elements built at once (every
      // tenth round: building it is most of the cost).
      if round % 10 == 0 {
        var rebuilt = IdentifiedList(oldReference)
        try rebuilt.apply(changes)
        #expect(Array(rebuilt) == reference)
        #expect(rebuilt == list)
        // And the changes from a list that shares no node with this one, built at once (trees of other shapes).
        var fromRebuilt = IdentifiedList(oldReference)
        try fromRebuilt.apply(list.changes(since: IdentifiedList(oldReference), same: { $0.pointee == $1.pointee }))
        #expect(Array(fromRebuilt) == reference)
      }
    }
  }

  @Test func aOneElementChangeIsOneEntry() {
    let list = IdentifiedList((0..<10_000).map { Item(id: $0, value: 0) })

    var changed = list
    changed[id: 6_000]?.value = 1
    var changes = changed.changes(since: list, same: { $0.pointee == $1.pointee })
    #expect(changes.updated == [Item(id: 6_000, value: 1)])
    #expect(changes.removed.isEmpty && changes.splices.isEmpty)

    var appended = list
    appended.append(Item(id: 10_000, value: 0))
    changes = appended.changes(since: list, same: { $0.pointee == $1.pointee })
    #expect(changes.updated == [Item(id: 10_000, value: 0)])
    #expect(changes.splices == [OrderSplice(position: 10_000, removing: 0, ids: [10_000])])

    var removed = list
    removed.remove(at: 3_000)
    changes = removed.changes(since: list, same: { $0.pointee == $1.pointee })
    #expect(changes.removed == [3_000])
    #expect(changes.splices == [OrderSplice(position: 3_000, removing: 1, ids: [])])
    #expect(changes.updated.isEmpty)

    #expect(list.changes(since: list, same: { $0.pointee == $1.pointee }).isEmpty)
  }

  /// An element with padding between its fields (after `done`).
  struct Padded: Identifiable {
    let id: Int
    var done: Bool
    var title: String
  }

  /// A move changes the order only: no element is listed as updated, though copying one would not copy its padding.
  @Test func aMoveChangesOnlyTheOrder() {
    let old = IdentifiedList((0..<100).map { Padded(id: $0, done: $0 % 2 == 0, title: "a title of row \($0)") })
    var new = old
    new.move(fromOffsets: [3, 50, 51], toOffset: 90)
    let changes = new.changes(since: old) { ListEncoding.sameBytes($0, $1) }
    #expect(changes.updated.isEmpty)
    #expect(changes.removed.isEmpty)
    #expect(!changes.splices.isEmpty)
  }

  /// Two elements whose bytes differ in their padding alone (as a copy leaves it) have the same bytes.
  ///
  /// A changed field is a change. The padding is written here, so that the test does not rest on what an allocator
  /// left there.
  @Test func elementsThatDifferInTheirPaddingAloneHaveTheSameBytes() throws {
    let gap = (MemoryLayout<Padded>.offset(of: \.done)! + 1)..<MemoryLayout<Padded>.offset(of: \.title)!
    try #require(!gap.isEmpty)
    var zeros = Padded(id: 1, done: true, title: String(repeating: "a title stored apart ", count: 3))
    var ones = zeros
    withUnsafeMutableBytes(of: &zeros) { bytes in for offset in gap { bytes[offset] = 0 } }
    withUnsafeMutableBytes(of: &ones) { bytes in for offset in gap { bytes[offset] = 0xA5 } }
    func same(_ lhs: inout Padded, _ rhs: inout Padded) -> Bool {
      withUnsafePointer(to: &lhs) { lhs in withUnsafePointer(to: &rhs) { rhs in ListEncoding.sameBytes(lhs, rhs) } }
    }
    #expect(withUnsafeBytes(of: &zeros) { Array($0) } != withUnsafeBytes(of: &ones) { Array($0) })
    #expect(same(&zeros, &ones))
    var toggled = ones
    toggled.done.toggle()
    #expect(!same(&zeros, &toggled))
    var renamed = ones
    renamed.title = "another title"
    #expect(!same(&zeros, &renamed))

    // In a list: an element removed and inserted again unchanged is not listed as updated.
    let old = IdentifiedList((0..<100).map { Padded(id: $0, done: $0 % 2 == 0, title: "a title of row \($0)") })
    var new = old
    let removed = new.remove(id: 7)
    let seven = try #require(removed)
    new.insert(seven, at: 7)
    new[id: 8]?.done.toggle()
    #expect(new.changes(since: old) { ListEncoding.sameBytes($0, $1) }.updated.map(\.id) == [8])
  }

  /// An insertion or a removal that splits or merges nodes, or changes the tree's height, is one splice of one id.
  ///
  /// Insertions at one place split its leaf every 32 or so, and removals there merge it with a neighbour; lists of 64
  /// and 4,096 ids grow a level with their first insertion, and lose it again as removals bring them back. Then one
  /// change at three places far apart.
  @Test(arguments: [64, 4_096, 10_000])
  func insertionsAndRemovalsThatSplitOrMergeNodesAreOneSpliceEach(count: Int) throws {
    var reference = (0..<count).map { Item(id: $0, value: $0) }
    var list = IdentifiedList(reference)
    var nextID = count
    let height = list.order.root.height
    var heights: Set<Int> = []
    defer {
      if count < 10_000 { #expect(heights == [height, height + 1]) }
    }
    for place in [0, count / 2, count] {
      for round in 0..<70 {
        let (old, position) = (list, min(place, list.count))
        let inserting = round < 35
        if inserting {
          list.insert(Item(id: nextID, value: 0), at: position)
          reference.insert(Item(id: nextID, value: 0), at: position)
          nextID += 1
        } else {
          list.remove(at: min(position, list.count - 1))
          reference.remove(at: min(position, reference.count - 1))
        }
        let changes = list.changes(since: old) { ListEncoding.sameBytes($0, $1) }
        let splices = changes.splices
        #expect(splices.count == 1, "at \(place), round \(round): \(splices)")
        #expect(splices.allSatisfy { $0.removing + $0.ids.count == 1 }, "at \(place), round \(round): \(splices)")
        heights.insert(list.order.root.height)
        var applied = old
        try applied.apply(changes)
        // Against the array made the same way: iterating the list is most of this test's time.
        #expect(Array(applied) == reference, "at \(place), round \(round)")
      }
    }
    // Three places in one change, in different leaves (and, from 4,096 ids, under different children of the root,
    // with an unchanged child between them at 10,000): each splice at its place in the order the splices before it
    // left.
    let old = list
    list.insert(Item(id: nextID, value: 0), at: 10)
    list.remove(at: list.count / 4)
    list.insert(Item(id: nextID + 1, value: 0), at: list.count - 10)
    let changes = list.changes(since: old) { ListEncoding.sameBytes($0, $1) }
    #expect(count < 4_096 || changes.splices.count == 3, "\(changes.splices)")
    #expect(count < 4_096 || changes.splices.allSatisfy { $0.removing + $0.ids.count == 1 }, "\(changes.splices)")
    var applied = old
    try applied.apply(changes)
    #expect(Array(applied) == Array(list))
  }

  /// Two changes far apart that take a list across a labelling size are two splices of one id each.
  ///
  /// Reaching the size that keeps order labels, or going below the size that drops them, rewrites every leaf's
  /// labels: the leaves are copies, their ids unchanged. Not one splice of every id between the two changes (a
  /// review's finding).
  @Test(arguments: [(4_095, true), (1_024, false)])
  func aChangeAcrossTheLabellingSizesWritesOnlyTheIDsChanged(count: Int, growing: Bool) throws {
    // Shrinking: labelled at 4,096 and kept down to 1,024.
    var old = IdentifiedList((0..<(growing ? count : 4_096)).map { Item(id: $0, value: $0) })
    old.removeLast(old.count - count)
    var new = old
    if growing {
      new.insert(Item(id: count, value: 0), at: 0)
      new.append(Item(id: count + 1, value: 0))
    } else {
      new.remove(at: 0)
      new.removeLast()
    }
    #expect((old.order.labels == nil) == growing && (new.order.labels == nil) != growing)
    let changes = new.changes(since: old) { ListEncoding.sameBytes($0, $1) }
    #expect(changes.splices.count == 2, "\(changes.splices.map { ($0.position, $0.removing, $0.ids.count) })")
    #expect(changes.splices.allSatisfy { $0.removing + $0.ids.count == 1 })
    var applied = old
    try applied.apply(changes)
    #expect(Array(applied) == Array(new))
  }

  /// One element moved, forward or back, any distance: the order's change is two splices of one id, and applying
  /// them to the old list makes the new one.
  @Test(arguments: [1, 10, 30, 63, 64, 100, 1_000])
  func aMoveIsTwoSplicesOfOneID(distance: Int) throws {
    let old = IdentifiedList((0..<10_000).map { Item(id: $0, value: $0) })
    for (from, to) in [(5_000, 5_000 + distance + 1), (5_000, 5_000 - distance)] {
      var new = old
      new.move(fromOffsets: [from], toOffset: to)
      let changes = new.changes(since: old) { ListEncoding.sameBytes($0, $1) }
      #expect(changes.splices.count == 2, "\(from) to \(to): \(changes.splices.count) splices")
      #expect(changes.splices.allSatisfy { $0.removing + $0.ids.count == 1 }, "\(from) to \(to)")
      var applied = old
      try applied.apply(changes)
      #expect(Array(applied) == Array(new), "\(from) to \(to)")
      _ = applied.order.checkedHeight()
      for id in [5_000, 4_999, 5_001, 0, 9_999] {
        #expect(applied.index(id: id) == new.firstIndex { $0.id == id }, "\(from) to \(to): id \(id)")
      }
    }
  }

  /// A change applied across the size that keeps labels, with an id in the list twice on the way.
  ///
  /// An element moved back in a list one short of that size, and a new one after it, as a writer splits the change:
  /// one splice inserts the id at its new place (the list reaches the size with the id in it twice) and the new one,
  /// a second removes the old place. The list has labels once the change is applied, and every id keeps its place (a
  /// review found the old place's label kept, and the id lost when that place was removed).
  @Test func aChangeAppliedAcrossTheLabellingSizeKeepsEveryPosition() throws {
    let old = IdentifiedList((0..<4_095).map { Item(id: $0, value: $0) })
    let added = Item(id: 4_095, value: 0)
    var new = old
    new.move(fromOffsets: [3_000], toOffset: 1_000)
    new.insert(added, at: 1_001)
    var changes = ListChanges<Item>()
    changes.updated = [added]
    changes.splices = [
      OrderSplice(position: 1_000, removing: 0, ids: [3_000, added.id]),
      OrderSplice(position: 3_002, removing: 1, ids: []),
    ]
    var applied = old
    try applied.apply(changes)
    #expect(Array(applied) == Array(new))
    _ = applied.order.checkedHeight()
    #expect(applied.order.labels != nil)
    #expect(new.indices.allSatisfy { applied.index(id: new[$0].id) == $0 })
  }

  /// A relabelling while an applied change has an id in the list twice.
  ///
  /// An element moved back in a labelled list, with 40 new elements after it, as a writer may split the change: one
  /// splice inserts the id and the new ones at the new place, a second removes the old place. Applying the first
  /// fills the gap of labels after the moved id, which runs out and is relabelled while the id is still at its old
  /// place too, in the window relabelled. Every id keeps its place (a review found the old place's new label written
  /// to the map, and the id lost when that place was removed).
  @Test func aRelabellingWhileAnIDIsInTheOrderTwiceKeepsEveryPosition() throws {
    let old = IdentifiedList((0..<5_000).map { Item(id: $0, value: $0) })
    let added = (5_001...5_040).map { Item(id: $0, value: 0) }
    var new = old
    new.move(fromOffsets: [110], toOffset: 100)
    new.insert(contentsOf: added, at: 101)
    var changes = ListChanges<Item>()
    changes.updated = added
    changes.splices = [
      OrderSplice(position: 100, removing: 0, ids: [110] + added.map(\.id)),
      OrderSplice(position: 110 + 41, removing: 1, ids: []),
    ]
    var applied = old
    try applied.apply(changes)
    #expect(Array(applied) == Array(new))
    _ = applied.order.checkedHeight()
    #expect(new.indices.allSatisfy { applied.index(id: new[$0].id) == $0 })
  }

  /// The same while the new label of the id's new place is the old label of its old place, which comes after it in
  /// the window (a review's construction): the map keeps the new place's label, so the id is still found, and
  /// changed, once its old place goes.
  @Test func aRelabellingWhereTheNewPlacesNewLabelIsTheOldPlacesOldLabelKeepsTheID() throws {
    var list = IdentifiedList((0..<5_000).map { Item(id: $0, value: $0) })
    let x = 50_000
    // The window the change below relabels is 1,016..<1,048, `low` its crowd's 16th label, `high` the label of 1,015.
    let low = list.order.label(at: 1_000) - (1 << 16)
    let target = low + (list.order.label(at: 1_015) - low) / 34
    // x between 1,000 and 1,001, labelled exactly `target`: fillers narrow the gap, then go.
    var position = 1_001
    var filler = 20_000
    while true {
      let (left, right) = (list.order.label(at: position - 1), list.order.label(at: position))
      let middle = left + (right - left) / 2
      if middle == target { break }
      list.insert(Item(id: filler, value: 0), at: position)
      filler += 1
      if middle < target { position += 1 }
    }
    list.insert(Item(id: x, value: 0), at: position)
    for id in 20_000..<filler { list.remove(id: id) }
    #expect(list.index(id: x) == 1_001 && list.order.label(at: 1_001) == target)
    // x moved to after 999 with 32 new elements around it, the 17th of 33: one splice inserts them, the 33rd finds
    // no label; a second removes x's old place.
    let added = ((10_001...10_016).map { $0 } + (10_018...10_033).map { $0 }).map { Item(id: $0, value: 0) }
    var changes = ListChanges<Item>()
    changes.updated = added
    let ids = added.prefix(16).map(\.id) + [x] + added.suffix(16).map(\.id)
    changes.splices = [
      OrderSplice(position: 1_000, removing: 0, ids: ids), OrderSplice(position: 1_034, removing: 1, ids: []),
    ]
    var applied = list
    try applied.apply(changes)
    #expect(applied.index(id: x) == 1_016)
    applied[id: x]?.value = 1
    #expect(applied[1_016] == Item(id: x, value: 1))
    _ = applied.order.checkedHeight()
  }

  /// Several changes close together (in one leaf of 64 ids, or in leaves side by side) write the ids they change.
  ///
  /// A shortest edit script of the region, not one splice of every id between the first change and the last: a
  /// hostile-input hunt found 2 elements moved 6 places and 42 appended to a list of 128 written as all 128 ids. Where
  /// the changes are dense (every pair of neighbours swapped), the one splice is smaller, and is written.
  @Test(arguments: [64, 128, 1_000, 5_000])
  func changesCloseTogetherWriteOnlyTheIDsTheyChange(count: Int) throws {
    var random = SplitMix(seed: UInt64(count))
    var nextID = count
    for round in 0..<50 {
      let old = IdentifiedList((0..<count).map { Item(id: $0, value: 0) })
      var reference = Array(old)
      // Up to 8 insertions, removals and moves within 128 places.
      let start = Int.random(in: 0...max(0, count - 128), using: &random)
      var (inserted, removed, moved) = (0, 0, 0)
      for _ in 0..<(round % 8 + 1) {
        let window = start..<min(reference.count, start + 128)
        switch Int.random(in: 0..<3, using: &random) {
        case 0:
          reference.insert(Item(id: nextID, value: 0), at: Int.random(in: start...window.upperBound, using: &random))
          nextID += 1
          inserted += 1
        case 1 where window.count > 1:
          reference.remove(at: Int.random(in: window, using: &random))
          removed += 1
        default:
          guard window.count > 1 else { continue }
          let item = reference.remove(at: Int.random(in: window, using: &random))
          reference.insert(item, at: Int.random(in: start..<min(reference.count, start + 127), using: &random))
          moved += 1
        }
      }
      let new = IdentifiedList(reference)
      let changes = new.changes(since: old) { ListEncoding.sameBytes($0, $1) }
      // What is written: the ids inserted, and about two more for each splice (its position and count). A shortest
      // script inserts at most the ids inserted and moved, in at most one splice per insertion, removal and move's
      // two edits; one splice is written instead where that is smaller.
      let written = changes.splices.reduce(0) { $0 + $1.ids.count + 2 }
      #expect(written <= inserted + moved + 2 * (inserted + removed + 2 * moved), "round \(round): \(changes.splices)")
      var applied = old
      try applied.apply(changes)
      #expect(Array(applied) == reference)
    }
    // The hunt's case.
    if count == 128 {
      let old = IdentifiedList((0..<128).map { Item(id: $0, value: 0) })
      var new = old
      new.move(fromOffsets: [10], toOffset: 17)
      new.move(fromOffsets: [90], toOffset: 97)
      new.append(contentsOf: (1_000..<1_042).map { Item(id: $0, value: 0) })
      let changes = new.changes(since: old) { ListEncoding.sameBytes($0, $1) }
      #expect(changes.splices.reduce(0) { $0 + $1.ids.count } == 44, "\(changes.splices)")
      var applied = old
      try applied.apply(changes)
      #expect(Array(applied) == Array(new))
      // Every pair of neighbours in the first 64 swapped: one splice of them, not 64 of one id each.
      var swapped = old
      for index in stride(from: 0, to: 64, by: 2) { swapped.swapAt(index, index + 1) }
      let dense = swapped.changes(since: old) { ListEncoding.sameBytes($0, $1) }
      #expect(dense.splices.count == 1 && dense.splices.first?.ids.count == 64, "\(dense.splices)")
      var appliedDense = old
      try appliedDense.apply(dense)
      #expect(Array(appliedDense) == Array(swapped))
    }
  }

  /// A merge of two leaves in one place and a split in another, in one change, shift every leaf between them: the
  /// order's change is still the few ids moved, not the ids between (a review's counterexample).
  @Test func aMergeAndASplitInOneChangeWriteOnlyTheIDsMoved() throws {
    var old = IdentifiedList((0..<2_048).map { Item(id: $0, value: $0) })
    old.insert(Item(id: 5_000, value: 0), at: 100)
    var new = old
    new.move(fromOffsets: [64, 65], toOffset: 1_000)
    let changes = new.changes(since: old) { ListEncoding.sameBytes($0, $1) }
    let written = changes.splices.reduce(0) { $0 + $1.ids.count + 1 }
    #expect(written <= 10, "\(changes.splices.count) splices, \(written) ids and counts")
    var applied = old
    try applied.apply(changes)
    #expect(Array(applied) == Array(new))
  }

  @Test func changesThatDoNotFitThrowAndLeaveTheListAsItWas() {
    let list = IdentifiedList((0..<100).map { Item(id: $0, value: 0) })
    var other = list
    other.remove(at: 10)
    let changes = other.changes(since: list, same: { $0.pointee == $1.pointee })
    // Applied to a list that no longer holds the id they remove.
    var target = other
    #expect(throws: ListChangesMismatch.self) { try target.apply(changes) }
    #expect(target == other)
    // A splice past the end.
    var short = IdentifiedList([Item(id: 1, value: 0)])
    let far = ListChanges<Item>(splices: [OrderSplice(position: 5, removing: 1, ids: [])])
    #expect(throws: ListChangesMismatch.self) { try short.apply(far) }
    // An element added without a place in the order.
    let orphan = ListChanges<Item>(updated: [Item(id: 99, value: 0)])
    #expect(throws: ListChangesMismatch.self) { try short.apply(orphan) }
    // Two values for one id already in the list: the second would silently replace the first.
    let twice = ListChanges<Item>(updated: [Item(id: 1, value: 1), Item(id: 1, value: 2)])
    #expect(throws: ListChangesMismatch.self) { try short.apply(twice) }
    #expect(Array(short) == [Item(id: 1, value: 0)])
  }
}
