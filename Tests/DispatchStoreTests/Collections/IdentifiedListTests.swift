import Foundation
import Testing

@testable import DispatchStore

/// `IdentifiedList` against `Array`: the same operations on both, from a seeded generator, must leave the same
/// elements; every version kept along the way must stay as it was.
@Suite("IdentifiedList", .watchdog)
struct IdentifiedListTests {
  struct Item: Identifiable, Codable, Hashable, Sendable {
    let id: Int
    var value: Int
  }

  /// An id whose hash is one of three values, so that the trie's collision lists and shapes are exercised.
  struct CollidingID: Hashable, Sendable, CustomStringConvertible {
    let value: Int
    func hash(into hasher: inout Hasher) { hasher.combine(value % 3) }
    static func == (lhs: Self, rhs: Self) -> Bool { lhs.value == rhs.value }
    var description: String { "\(value)" }
  }

  struct CollidingItem: Identifiable, Equatable, Sendable {
    let id: CollidingID
    var value: Int
  }

  @Test(
    .disabled(if: isSanitized, "value code on one thread; under a sanitizer its load starved other suites"),
    .offThePool, arguments: [0, 10, 5_000])
  func randomOperationsLeaveTheSameElementsAsAnArray(initialCount: Int) {
    var random = SplitMix(seed: UInt64(initialCount) + 1)
    var nextID = initialCount
    var reference = (0..<initialCount).map { Item(id: $0, value: $0) }
    var list = IdentifiedList(reference)
    var kept: [(list: IdentifiedList<Item>, elements: [Item])] = []
    var heights: Set<Int> = []

    // Fewer steps under a sanitizer: its runtime makes each several times slower, and the suites beside this one
    // wait for Dispatch's threads with deadlines.
    for step in 0..<(isSanitized ? 1_000 : 3_000) {
      let operation = Int.random(in: 0..<12, using: &random)
      switch operation {
      case 0:
        let item = Item(id: nextID, value: step)
        nextID += 1
        reference.append(item)
        list.append(item)
      case 1:
        let position = Int.random(in: 0...reference.count, using: &random)
        let item = Item(id: nextID, value: step)
        nextID += 1
        reference.insert(item, at: position)
        list.insert(item, at: position)
      case 2 where !reference.isEmpty:
        let position = Int.random(in: 0..<reference.count, using: &random)
        #expect(list.remove(at: position) == reference.remove(at: position))
      case 3 where !reference.isEmpty:
        let position = Int.random(in: 0..<reference.count, using: &random)
        reference[position].value = step
        list[position].value = step
      case 4 where !reference.isEmpty:
        let id = reference[Int.random(in: 0..<reference.count, using: &random)].id
        reference[reference.firstIndex { $0.id == id }!].value = -step
        list[id: id]?.value = -step
      case 5 where !reference.isEmpty:
        let id = reference[Int.random(in: 0..<reference.count, using: &random)].id
        let position = reference.firstIndex { $0.id == id }!
        #expect(list.index(id: id) == position)
        #expect(list.remove(id: id) == reference.remove(at: position))
      case 6:
        let item = Item(id: nextID, value: step)
        nextID += 1
        reference.append(item)
        list[id: item.id] = item
      case 7:
        let lower = Int.random(in: 0...reference.count, using: &random)
        let upper = min(reference.count, lower + Int.random(in: 0...3, using: &random))
        let new = (0..<Int.random(in: 0...3, using: &random)).map { _ in
          defer { nextID += 1 }
          return Item(id: nextID, value: step)
        }
        reference.replaceSubrange(lower..<upper, with: new)
        list.replaceSubrange(lower..<upper, with: new)
      case 8 where reference.count > 1:
        let (first, second) = (
          Int.random(in: 0..<reference.count, using: &random), Int.random(in: 0..<reference.count, using: &random)
        )
        reference.swapAt(first, second)
        list.swapAt(first, second)
      case 10 where !reference.isEmpty:
        // Removed through an in-place change of the subscript by id.
        let id = reference[Int.random(in: 0..<reference.count, using: &random)].id
        Self.change(&list[id: id]) { $0 = nil }
        reference.remove(at: reference.firstIndex { $0.id == id }!)
      case 11:
        // Added through one.
        let item = Item(id: nextID, value: step)
        nextID += 1
        Self.change(&list[id: item.id]) { $0 = item }
        reference.append(item)
      case 9 where !reference.isEmpty:
        // A new element at a position: the old one is gone.
        let position = Int.random(in: 0..<reference.count, using: &random)
        let item = Item(id: nextID, value: step)
        nextID += 1
        reference[position] = item
        list[position] = item
      default:
        break
      }
      if step % 500 == 250 {
        reference.sort { ($0.value, $0.id) < ($1.value, $1.id) }
        list.sort { ($0.value, $0.id) < ($1.value, $1.id) }
      }
      #expect(list.count == reference.count)
      if !reference.isEmpty {
        let position = Int.random(in: 0..<reference.count, using: &random)
        #expect(list[position] == reference[position])
        #expect(list[id: reference[position].id] == reference[position])
      }
      if step % 100 == 0 {
        #expect(Array(list) == reference)
        // A list with the same elements built at once has another shape; it is still equal, and hashes the same.
        let rebuilt = IdentifiedList(reference)
        #expect(list == rebuilt)
        #expect(list.hashValue == rebuilt.hashValue)
        kept.append((list, reference))
        heights.insert(list.order.checkedHeight())
        #expect(reference.indices.allSatisfy { list.index(id: reference[$0].id) == $0 })
      }
    }
    #expect(Array(list) == reference)
    // The largest list has three levels of nodes; every change kept the tree's invariants (checked above).
    if initialCount == 5_000 { #expect(heights.contains(3)) }
    for (version, elements) in kept {
      #expect(Array(version) == elements)
    }
  }

  @Test(.disabled(if: isSanitized, "value code on one thread; under a sanitizer its load starved other suites"))
  func removingMostElementsAndAddingThemBackKeepsTheTreeBalanced() {
    var random = SplitMix(seed: 3)
    var reference = (0..<6_000).map { Item(id: $0, value: $0) }
    var list = IdentifiedList(reference)
    let full = list
    var heights: [Int] = []
    while reference.count > 50 {
      let position = Int.random(in: 0..<reference.count, using: &random)
      if Bool.random(using: &random) {
        #expect(list.remove(at: position) == reference.remove(at: position))
      } else {
        let id = reference.remove(at: position).id
        #expect(list.remove(id: id)?.id == id)
      }
      if reference.count % 250 == 0 {
        heights.append(list.order.checkedHeight())
        #expect(Array(list) == reference)
      }
    }
    // Shrinking merged nodes: the height went down as the list did (6,000 ids need three levels of up to 64
    // entries, 250 need two).
    #expect(heights.first == 3)
    #expect(heights.last == 2)
    for value in 0..<3_000 {
      let item = Item(id: 10_000 + value, value: value)
      let position = Int.random(in: 0...reference.count, using: &random)
      reference.insert(item, at: position)
      list.insert(item, at: position)
    }
    _ = list.order.checkedHeight()
    #expect(Array(list) == reference)
    #expect(full.count == 6_000 && full.last?.id == 5_999)
  }

  /// Thousands of insertions at one place, where the labels between two neighbours run out every few dozen: the
  /// labels around it are spread again, and every id's position is still found by its label; a copy kept from before
  /// keeps its own.
  @Test(arguments: [0, 1, 2_500, 4_999, 5_000])
  func insertionsCrowdedAtOnePlaceKeepPositionsByID(place: Int) {
    var reference = (0..<5_000).map { Item(id: $0, value: $0) }
    var list = IdentifiedList(reference)
    let before = list
    for step in 0..<2_000 {
      // At the place, and just after the element inserted last, so that the new labels crowd one gap.
      let position = step.isMultiple(of: 2) ? place : min(place + 1, reference.count)
      let item = Item(id: 10_000 + step, value: step)
      reference.insert(item, at: position)
      list.insert(item, at: position)
      #expect(list.index(id: item.id) == position)
    }
    _ = list.order.checkedHeight()
    #expect(Array(list) == reference)
    #expect(reference.indices.allSatisfy { list.index(id: reference[$0].id) == $0 })
    #expect(before.index(id: 4_999) == 4_999 && before.index(id: 10_000) == nil)
    _ = before.order.checkedHeight()
  }

  /// A list labels its order when it grows to 4,096 elements and drops the labels below 1,024: positions by id are
  /// right on both sides, and a copy kept from the other side keeps its own.
  @Test func labelsComeWithSizeAndGoWithIt() {
    var reference = (0..<4_000).map { Item(id: $0, value: $0) }
    var list = IdentifiedList(reference)
    #expect(list.order.labels == nil)
    let small = list
    for id in 4_000..<4_200 {
      let position = id.isMultiple(of: 3) ? id / 2 : reference.count
      reference.insert(Item(id: id, value: id), at: position)
      list.insert(Item(id: id, value: id), at: position)
    }
    #expect(list.order.labels != nil)
    _ = list.order.checkedHeight()
    #expect(reference.indices.allSatisfy { list.index(id: reference[$0].id) == $0 })
    let large = list
    while reference.count > 900 {
      let id = reference[reference.count / 3].id
      reference.remove(at: reference.count / 3)
      #expect(list.remove(id: id)?.id == id)
    }
    #expect(list.order.labels == nil)
    _ = list.order.checkedHeight()
    #expect(reference.indices.allSatisfy { list.index(id: reference[$0].id) == $0 })
    #expect(small.index(id: 3_999) == 3_999 && small.order.labels == nil)
    #expect(large.index(id: 4_199) == 4_199 && large.order.labels != nil)
    _ = large.order.checkedHeight()
  }

  /// A list where new elements go first (newest first) labels them as an appended list does: a spacing apart, with
  /// no relabelling (labels that started at 0 left the front no room, and every insertion there relabelled a window
  /// that grew to the whole list: 128 to 304 µs each at 5,000 to 100,000 elements).
  @Test func insertionsAtTheFrontAreSpacedAsAppendsAre() {
    var list = IdentifiedList((0..<5_000).map { Item(id: $0, value: $0) })
    var copies: [IdentifiedList<Item>] = []
    for id in 5_000..<15_000 {
      list.insert(Item(id: id, value: id), at: 0)
      if id.isMultiple(of: 1_000) { copies.append(list) }
    }
    let spacing = OrderTree<Int>.spacing
    #expect((0..<10_000).allSatisfy { list.order.label(at: $0 + 1) - list.order.label(at: $0) == spacing })
    _ = list.order.checkedHeight()
    #expect(list.index(id: 14_999) == 0 && list.index(id: 0) == 10_000)
    #expect(copies.allSatisfy { $0.index(id: $0.count - 1) == 0 })  // Each copy: its front is its newest.
  }

  @Test func aChangedCopyLeavesTheOriginalAsItWas() {
    let original = IdentifiedList((0..<10_000).map { Item(id: $0, value: 0) })
    var copy = original
    copy[id: 5_000]?.value = 1
    copy.append(Item(id: 10_000, value: 0))
    copy.remove(at: 0)
    #expect(original.count == 10_000)
    #expect(original[id: 5_000]?.value == 0)
    #expect(original.first?.id == 0)
    #expect(copy[id: 5_000]?.value == 1)
    #expect(copy != original)
  }

  /// Eight threads change their own copies of one shared list: a write to a node the others share would be a data
  /// race (ThreadSanitizer runs this) and would show in the shared list.
  @Test func copiesChangedOnEightThreadsLeaveTheSharedListIntact() async {
    let shared = IdentifiedList((0..<10_000).map { Item(id: $0, value: 0) })
    let counts = await withTaskGroup(of: Int.self) { group in
      for thread in 0..<8 {
        group.addTask {
          var copy = shared
          for step in 0..<500 {
            copy[id: (thread * 1_000 + step * 7) % 10_000]?.value += 1
            copy.append(Item(id: 10_000 + thread * 1_000 + step, value: thread))
            copy.remove(at: step)
          }
          return copy.count
        }
      }
      return await group.reduce(into: []) { $0.append($1) }
    }
    #expect(counts == Array(repeating: 10_000, count: 8))
    #expect(shared.count == 10_000)
    #expect(shared.allSatisfy { $0.value == 0 })
    #expect(shared == IdentifiedList((0..<10_000).map { Item(id: $0, value: 0) }))
  }

  @Test func listsDifferingInOneElementOrInOrderAreNotEqual() {
    let items = (0..<1_000).map { Item(id: $0, value: $0) }
    let list = IdentifiedList(items)
    var changed = list
    changed[id: 700]?.value = -1
    #expect(changed != list)
    var reordered = list
    reordered.swapAt(3, 4)
    #expect(reordered != list)
    var same = list
    same[id: 700]?.value = 700
    #expect(same == list)
  }

  @Test func collidingHashesKeepEveryElement() {
    var reference: [CollidingItem] = []
    var list = IdentifiedList<CollidingItem>()
    for value in 0..<300 {
      let item = CollidingItem(id: CollidingID(value: value), value: value)
      reference.append(item)
      list.append(item)
    }
    for value in stride(from: 0, to: 300, by: 7) {
      list[id: CollidingID(value: value)]?.value = -value
      reference[value].value = -value
    }
    for value in stride(from: 1, to: 300, by: 5) {
      list.remove(id: CollidingID(value: value))
      reference.removeAll { $0.id.value == value }
    }
    #expect(Array(list) == reference)
    #expect(list == IdentifiedList(reference.reversed()).reversedList())
    for item in reference { #expect(list[id: item.id] == item) }
    #expect(list[id: CollidingID(value: 1)] == nil)
    // Down to one element with each hash: collision lists shrink to one element, which moves up into its parent.
    for item in reference where item.id.value >= 3 { list.remove(id: item.id) }
    #expect(Array(list) == reference.filter { $0.id.value < 3 })
    #expect(list == IdentifiedList(reference.filter { $0.id.value < 3 }))
  }

  @Test func encodesAsTheArrayOfItsElementsAndDecodesBack() throws {
    let items = (0..<200).map { Item(id: $0, value: $0 * 2) }
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let data = try encoder.encode(IdentifiedList(items))
    #expect(data == (try encoder.encode(items)))
    #expect(try JSONDecoder().decode(IdentifiedList<Item>.self, from: data) == IdentifiedList(items))
  }

  @Test func decodingARepeatedIDThrowsDataCorrupted() {
    let json = Data(#"[{"id":1,"value":0},{"id":2,"value":0},{"id":1,"value":5}]"#.utf8)
    #expect {
      try JSONDecoder().decode(IdentifiedList<Item>.self, from: json)
    } throws: { error in
      guard case DecodingError.dataCorrupted(let context) = error else { return false }
      return context.debugDescription.contains("id 1")
    }
  }

  /// Changes `value` with `body`: an in-place change, as `list[id: id]?.value = 1` makes one.
  static func change<Value>(_ value: inout Value, _ body: (inout Value) -> Void) {
    body(&value)
  }

  struct Section: Identifiable, Equatable, Sendable {
    let id: Int
    var flag = false
    var rows: IdentifiedList<Item>
  }

  /// A list held nowhere else changes an element through its id where it holds it: the list inside the element is
  /// changed in place, not copied (it would be if the element were read out and written back).
  @Test func changingAnElementByIDChangesItInPlace() {
    var sections = IdentifiedList(
      (0..<200).map { section in Section(id: section, rows: IdentifiedList((0..<50).map { Item(id: $0, value: 0) })) })
    let root = ObjectIdentifier(sections[id: 120]!.rows.elements.root)
    sections[id: 120]?.rows[id: 7]?.value = 5
    sections[id: 120]?.flag = true
    #expect(ObjectIdentifier(sections[id: 120]!.rows.elements.root) == root)
    #expect(sections[id: 120]?.rows[id: 7]?.value == 5)
    #expect(sections[id: 120]?.flag == true)
    // A copy held elsewhere keeps its own: the change copies the path then.
    let kept = sections
    sections[id: 120]?.rows[id: 8]?.value = 6
    #expect(kept[id: 120]?.rows[id: 8]?.value == 0)
    #expect(sections[id: 120]?.rows[id: 8]?.value == 6)
    #expect(kept[id: 120]?.rows[id: 7]?.value == 5)
    // Removing and adding through an in-place change; an element with another id is refused (see below).
    Self.change(&sections[id: 3]) { $0 = nil }
    Self.change(&sections[id: 500]) { $0 = Section(id: 500, rows: []) }
    #expect(sections.count == 200)
    #expect(sections.index(id: 3) == nil)
    #expect(sections.last?.id == 500)
    #expect(sections.map(\.id) == Array(0..<3) + Array(4..<200) + [500])
  }

  struct Conversation: Identifiable, Sendable {
    let id: Int
    var messages: [String]
  }

  /// An array inside an element grows where it is: appending to it through the element's id does not copy it (as
  /// reading the element out and writing it back would, at the cost of the whole array each time).
  @Test func appendingToAnArrayInsideAnElementByIDDoesNotCopyIt() {
    var conversations = IdentifiedList((0..<100).map { Conversation(id: $0, messages: []) })
    conversations[id: 42]?.messages.reserveCapacity(2_000)
    let buffer = conversations[id: 42]!.messages.withUnsafeBufferPointer { $0.baseAddress }
    for number in 0..<1_000 { conversations[id: 42]?.messages.append("message \(number)") }
    #expect(conversations[id: 42]!.messages.withUnsafeBufferPointer { $0.baseAddress } == buffer)
    #expect(conversations[id: 42]?.messages.count == 1_000)
  }

  @Test func changingCollidingElementsByIDInPlace() {
    var list = IdentifiedList((0..<30).map { CollidingItem(id: CollidingID(value: $0), value: $0) })
    list[id: CollidingID(value: 4)]?.value = 40
    Self.change(&list[id: CollidingID(value: 5)]) { $0 = nil }
    Self.change(&list[id: CollidingID(value: 99)]) { $0 = CollidingItem(id: CollidingID(value: 99), value: 9) }
    var reference = (0..<30).map { CollidingItem(id: CollidingID(value: $0), value: $0) }
    reference[4].value = 40
    reference.remove(at: 5)
    reference.append(CollidingItem(id: CollidingID(value: 99), value: 9))
    #expect(Array(list) == reference)
  }

  @Test func subscriptByIDAppendsReplacesAndRemoves() {
    var list: IdentifiedList<Item> = [Item(id: 1, value: 1), Item(id: 2, value: 2)]
    list[id: 3] = Item(id: 3, value: 3)
    list[id: 1] = Item(id: 1, value: 10)
    list[id: 2] = nil
    #expect(Array(list) == [Item(id: 1, value: 10), Item(id: 3, value: 3)])
    #expect(list.index(id: 3) == 1)
    #expect(list.index(id: 2) == nil)
    #expect(list.remove(id: 2) == nil)
  }

  struct Ranked: Identifiable, Comparable, Sendable {
    let id: Int
    var rank: Int
    static func < (lhs: Self, rhs: Self) -> Bool { (lhs.rank, lhs.id) < (rhs.rank, rhs.id) }
  }

  /// Sorts through the standard library's generic algorithm, which assigns elements one by one.
  static func sortGenerically<C: MutableCollection & RandomAccessCollection>(_ collection: inout C)
  where C.Element: Comparable {
    collection.sort()
  }

  @Test func reorderingThroughTheStandardLibraryAndSlicesKeepsEachIDOnce() throws {
    var random = SplitMix(seed: 9)
    var reference = (0..<300).map { Ranked(id: $0, rank: Int.random(in: 0..<50, using: &random)) }
    var list = IdentifiedList(reference)
    list.sort()
    reference.sort()
    #expect(Array(list) == reference)
    reference.shuffle(using: &random)
    list = IdentifiedList(reference)
    Self.sortGenerically(&list)
    Self.sortGenerically(&reference)
    #expect(Array(list) == reference)
    list[20..<80].reverse()
    reference[20..<80].reverse()
    list[100..<150].shuffle(using: &random)
    var copy = random
    reference[100..<150].shuffle(using: &copy)
    #expect(Set(list.map(\.id)) == Set(reference.map(\.id)))
    list[100..<150].sort()
    reference[100..<150].sort()
    list[200...].sort { $0.rank > $1.rank || ($0.rank == $1.rank && $0.id < $1.id) }
    reference[200...].sort { $0.rank > $1.rank || ($0.rank == $1.rank && $0.id < $1.id) }
    #expect(Array(list) == reference)
    _ = list.partition { $0.rank % 2 == 0 }
    #expect(Set(list.map(\.id)) == Set(0..<300))
    for item in reference { #expect(list[id: item.id] == item) }
    // A sort whose comparison throws leaves the list as it was.
    struct Stop: Error {}
    let before = list
    #expect(throws: Stop.self) { try list.sort { _, _ in throw Stop() } }
    #expect(Array(list) == Array(before))
  }

  /// `move(fromOffsets:toOffset:)` leaves what removing the elements at the offsets and inserting them, in order,
  /// before the destination's element leaves.
  @Test func moveFromOffsetsMovesAsRemovingAndInsertingDoes() {
    var random = SplitMix(seed: 11)
    var reference = (0..<40).map { Item(id: $0, value: $0) }
    var list = IdentifiedList(reference)
    for round in 0..<200 {
      var source = IndexSet()
      for _ in 0..<Int.random(in: 0...4, using: &random) {
        source.insert(Int.random(in: 0..<reference.count, using: &random))
      }
      let destination = round % 10 == 0 ? reference.count : Int.random(in: 0...reference.count, using: &random)
      let moved = source.map { reference[$0] }
      for position in source.reversed() { reference.remove(at: position) }
      reference.insert(contentsOf: moved, at: destination - source.count(in: 0..<destination))
      list.move(fromOffsets: source, toOffset: destination)
      #expect(Array(list) == reference, "round \(round): \(Array(source)) to \(destination)")
    }
    for item in reference { #expect(list[id: item.id] == item) }
  }

  @Test func reverseAndShuffleKeepEveryElementOnce() {
    var random = SplitMix(seed: 7)
    let items = (0..<500).map { Item(id: $0, value: $0) }
    var list = IdentifiedList(items)
    list.reverse()
    #expect(Array(list) == items.reversed())
    list.shuffle(using: &random)
    #expect(Set(list.map(\.id)) == Set(0..<500))
    for item in items { #expect(list[id: item.id] == item) }
  }

  #if compiler(>=6.2)
    @Test func appendingAnIDAlreadyInTheListTraps() async {
      await #expect(processExitsWith: .failure) {
        var list: IdentifiedList<Item> = [Item(id: 1, value: 1)]
        list.append(Item(id: 1, value: 2))
      }
    }

    @Test func anElementChangedInPlaceToAnotherIDTraps() async {
      await #expect(processExitsWith: .failure) {
        var list: IdentifiedList<Item> = [Item(id: 1, value: 1), Item(id: 2, value: 2)]
        IdentifiedListTests.change(&list[id: 1]) { $0 = Item(id: 3, value: 3) }
      }
    }
  #endif
}

extension IdentifiedList {
  fileprivate func reversedList() -> IdentifiedList { IdentifiedList(reversed()) }
}
