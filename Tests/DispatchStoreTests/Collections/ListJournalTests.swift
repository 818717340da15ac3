import Foundation
import Testing

@testable import DispatchStore

/// A journal's changes of a list since an earlier state, found without that state being kept (proposal 0028): applied
/// to a list equal to the earlier one, they make the list as it is; and where a change was made that the journal did
/// not note, it vouches for nothing.
@Suite(
  "List journal", .watchdog, .offThePool,
  .disabled(if: isThreadSanitized, "value code on one thread: no race to find; runs plain and under AddressSanitizer"))
struct ListJournalTests {
  typealias Item = IdentifiedListTests.Item

  static func same(_ lhs: UnsafePointer<Item>, _ rhs: UnsafePointer<Item>) -> Bool { lhs.pointee == rhs.pointee }

  /// One random change of `list` through one of its mutating methods, as `Array` would make it to `reference`.
  static func change(
    _ list: inout IdentifiedList<Item>, _ reference: inout [Item], nextID: inout Int, using random: inout SplitMix
  ) {
    func position() -> Int { Int.random(in: 0..<reference.count, using: &random) }
    func newItem() -> Item {
      defer { nextID += 1 }
      return Item(id: nextID, value: 0)
    }
    let choice = Int.random(in: 0..<15, using: &random)
    guard !reference.isEmpty || choice < 3 else {
      let item = newItem()
      reference.append(item)
      list.append(item)
      return
    }
    switch choice {
    case 0:
      let (item, at) = (newItem(), Int.random(in: 0...reference.count, using: &random))
      reference.insert(item, at: at)
      list.insert(item, at: at)
    case 1:
      let item = newItem()
      reference.append(item)
      list[id: item.id] = item
    case 2:
      let items = [newItem(), newItem()]
      reference.append(contentsOf: items)
      list.append(contentsOf: items)
    case 3:
      let at = position()
      reference[at].value += 1
      list[id: reference[at].id]?.value += 1
    case 4:
      let at = position()
      list[id: reference[at].id] = nil
      reference.remove(at: at)
    case 5:
      let at = position()
      list.remove(id: reference[at].id)
      reference.remove(at: at)
    case 6:
      let at = position()
      reference[at].value += 2
      list[at] = reference[at]
    case 7:
      // A new id at a position: the id there leaves the list.
      let (at, item) = (position(), newItem())
      reference[at] = item
      list[at] = item
    case 8:
      // An id from elsewhere: the two positions are exchanged, then the element replaced.
      let (at, other) = (position(), position())
      var item = reference[other]
      item.value += 3
      reference.swapAt(at, other)
      reference[at] = item
      list[at] = item
    case 9:
      let (first, second) = (position(), position())
      reference.swapAt(first, second)
      list.swapAt(first, second)
    case 10:
      let source = IndexSet([position(), position()])
      let destination = Int.random(in: 0...reference.count, using: &random)
      // As SwiftUI's `Array.move(fromOffsets:toOffset:)`, which this platform may not have.
      let moved = source.map { reference[$0] }
      for at in source.reversed() { reference.remove(at: at) }
      reference.insert(contentsOf: moved, at: destination - source.count(in: 0..<destination))
      list.move(fromOffsets: source, toOffset: destination)
    case 11:
      let lower = position()
      let range = lower..<min(reference.count, lower + Int.random(in: 0...3, using: &random))
      let items = (0..<Int.random(in: 0...2, using: &random)).map { _ in newItem() }
      reference.replaceSubrange(range, with: items)
      list.replaceSubrange(range, with: items)
    case 12:
      let at = position()
      reference.remove(at: at)
      list.remove(at: at)
    case 13:
      reference.sort { $0.value > $1.value || ($0.value == $1.value && $0.id < $1.id) }
      list.sort { $0.value > $1.value || ($0.value == $1.value && $0.id < $1.id) }
    default:
      // Now and then, all of them.
      guard Int.random(in: 0..<8, using: &random) == 0 else { return }
      reference.removeAll()
      list.removeAll()
    }
  }

  @Test(
    .disabled(if: isSanitized, "value code on one thread; under a sanitizer its load starved other suites"),
    arguments: [0, 40, 5_000], [false, true])
  func theJournalsChangesMakeTheListAsItIs(initialCount: Int, keepingTheStateBefore: Bool) throws {
    var random = SplitMix(seed: UInt64(initialCount) + (keepingTheStateBefore ? 7 : 11))
    var reference = (0..<initialCount).map { Item(id: $0, value: $0) }
    var list = IdentifiedList(reference)
    var nextID = initialCount
    let journal = ListJournal()
    for round in 0..<300 {
      let mark = ListMark(list)
      let referenceBefore = reference
      // Kept: the changes copy the paths it shares, and the journal's note moves with the list's root.
      let before = keepingTheStateBefore ? list : nil
      var copy: IdentifiedList<Item>?
      journal.recording {
        for step in 0..<(round % 6 + 1) {
          // A copy taken, and dropped, between two changes: the next change moves the list's root.
          if step == 1 { copy = list }
          if step == 3 { copy = nil }
          Self.change(&list, &reference, nextID: &nextID, using: &random)
        }
      }
      _ = copy
      guard let changes = journal.changes(of: list, since: mark, same: Self.same) else {
        Issue.record("round \(round): the changes are not vouched for")
        return
      }
      var rebuilt = IdentifiedList(referenceBefore)
      try rebuilt.apply(changes)
      #expect(Array(rebuilt) == reference, "round \(round)")
      #expect(Array(list) == reference, "round \(round)")
      if let before {
        // The same changes as the walk of the two versions' trees finds.
        let walked = list.changes(since: before, same: Self.same)
        #expect(Set(changes.updated) == Set(walked.updated), "round \(round)")
        #expect(Set(changes.removed) == Set(walked.removed), "round \(round)")
        #expect(changes.splices == walked.splices, "round \(round)")
      }
      journal.reset()
    }
  }

  @Test func aListNotChangedSinceItsStateHasNoChanges() throws {
    let list = IdentifiedList((0..<100).map { Item(id: $0, value: $0) })
    let mark = ListMark(list)
    let changes = try #require(ListJournal().changes(of: list, since: mark, same: Self.same))
    #expect(changes.isEmpty)
  }

  @Test func aChangeMadeWhereNoJournalWasIsNotVouchedFor() {
    let journal = ListJournal()
    var list = IdentifiedList((0..<100).map { Item(id: $0, value: $0) })
    // Changed in place, its roots kept: only the generation tells.
    var mark = ListMark(list)
    list[id: 5]?.value += 1
    #expect(journal.changes(of: list, since: mark, same: Self.same) == nil)
    // A change outside, then one noted.
    mark = ListMark(list)
    list[id: 6]?.value += 1
    journal.recording { list[id: 7]?.value += 1 }
    #expect(journal.changes(of: list, since: mark, same: Self.same) == nil)
    journal.reset()
    // A change noted, then one outside.
    mark = ListMark(list)
    journal.recording { list[id: 8]?.value += 1 }
    list.swapAt(0, 1)
    #expect(journal.changes(of: list, since: mark, same: Self.same) == nil)
  }

  /// How a list is changed where the journal is not installed, between two changes it noted.
  enum ChangeElsewhere: String, CaseIterable, Sendable {
    case inPlace, setByID, removeByID, setAtPosition, swap, sort, otherJournal

    func apply(to list: inout IdentifiedList<Item>) {
      switch self {
      case .inPlace: list[id: 2]?.value += 1
      case .setByID: list[id: 2] = Item(id: 2, value: -2)
      case .removeByID: list.remove(id: 2)
      case .setAtPosition: list[2] = Item(id: 2, value: -2)
      case .swap: list.swapAt(0, 1)
      case .sort: list.sort { $0.id > $1.id }
      case .otherJournal: ListJournal().recording { list[id: 2]?.value += 1 }
      }
    }
  }

  /// A change the journal did not note, between two it did, leaves the list where the first left it: the journal's
  /// note of it is not the list's any more, and vouches for nothing (helper-66).
  @Test(arguments: ChangeElsewhere.allCases)
  func aChangeElsewhereBetweenTwoNotedOnesIsNotVouchedFor(change: ChangeElsewhere) {
    let journal = ListJournal()
    var list = IdentifiedList((0..<100).map { Item(id: $0, value: $0) })
    let mark = ListMark(list)
    journal.recording { list[id: 1]?.value += 1 }
    change.apply(to: &list)
    journal.recording { list[id: 3]?.value += 1 }
    #expect(journal.changes(of: list, since: mark, same: Self.same) == nil)
    // Alone, each is seen too.
    var fresh = IdentifiedList((0..<100).map { Item(id: $0, value: $0) })
    let again = ListMark(fresh)
    change.apply(to: &fresh)
    #expect(journal.changes(of: fresh, since: again, same: Self.same) == nil)
  }

  /// Elements whose ids have one hash are in a list of their own in the trie, where a change in place goes through
  /// the subscript's setter: the journal notes them as it notes the others.
  @Test func elementsWithOneHashAreNotedAsTheOthers() throws {
    struct SameHash: Hashable {
      let value: Int
      func hash(into hasher: inout Hasher) { hasher.combine(0) }
    }
    struct Colliding: Identifiable, Equatable {
      let id: SameHash
      var value: Int
    }
    func same(_ lhs: UnsafePointer<Colliding>, _ rhs: UnsafePointer<Colliding>) -> Bool { lhs.pointee == rhs.pointee }
    let journal = ListJournal()
    let items = (0..<20).map { Colliding(id: SameHash(value: $0), value: $0) }
    var list = IdentifiedList(items)
    let steps: [(inout IdentifiedList<Colliding>) -> Void] = [
      { $0[id: SameHash(value: 3)]?.value += 10 },
      { $0[id: SameHash(value: 4)] = nil },
      { $0.insert(Colliding(id: SameHash(value: 40), value: 0), at: 2) },
      { $0.remove(id: SameHash(value: 7)) },
      { $0.swapAt(0, 5) },
      { $0[id: SameHash(value: 41)] = Colliding(id: SameHash(value: 41), value: 1) },
      { $0[3] = Colliding(id: SameHash(value: 42), value: 2) },
    ]
    for (number, step) in steps.enumerated() {
      let (mark, before) = (ListMark(list), Array(list))
      journal.recording { step(&list) }
      let changes = try #require(journal.changes(of: list, since: mark, same: same), "step \(number)")
      var rebuilt = IdentifiedList(before)
      try rebuilt.apply(changes)
      #expect(Array(rebuilt) == Array(list), "step \(number)")
      journal.reset()
    }
  }

  /// A list emptied, held by nothing else: the journal keeps the root its state had, so the state stays comparable.
  @Test func aListEmptiedAfterAChangeIsVouchedFor() throws {
    let journal = ListJournal()
    let items = (0..<100).map { Item(id: $0, value: $0) }
    var list = IdentifiedList(items)
    let mark = ListMark(list)
    journal.recording {
      list[id: 1]?.value += 1
      list.removeAll()
      list.append(Item(id: 500, value: 0))
    }
    let changes = try #require(journal.changes(of: list, since: mark, same: Self.same))
    var rebuilt = IdentifiedList(items)
    try rebuilt.apply(changes)
    #expect(Array(rebuilt) == [Item(id: 500, value: 0)])
  }

  /// A state taken after changes the journal noted, before it was reset: nothing changed since.
  @Test func aStateTakenAfterNotedChangesHasNoChangesSince() throws {
    let journal = ListJournal()
    var list = IdentifiedList((0..<100).map { Item(id: $0, value: $0) })
    journal.recording { list[id: 1]?.value += 1 }
    let mark = ListMark(list)
    #expect(try #require(journal.changes(of: list, since: mark, same: Self.same)).isEmpty)
  }

  @Test func aChangeOnAnotherThreadIsNotVouchedFor() {
    let journal = ListJournal()
    let list = Locked(IdentifiedList((0..<100).map { Item(id: $0, value: $0) }))
    let mark = list.withLock { ListMark($0) }
    let changed = DispatchSemaphore(value: 0)
    journal.recording {
      // The journal is installed on this thread only.
      Thread {
        list.withLock { $0[id: 3]?.value += 1 }
        changed.signal()
      }.start()
      changed.wait()
    }
    #expect(list.withLock { journal.changes(of: $0, since: mark, same: Self.same) } == nil)
  }

  @Test func aListReplacedByAnEqualOneIsNotVouchedFor() {
    let journal = ListJournal()
    let items = (0..<100).map { Item(id: $0, value: $0) }
    var list = IdentifiedList(items)
    let mark = ListMark(list)
    journal.recording { list = IdentifiedList(items) }
    #expect(journal.changes(of: list, since: mark, same: Self.same) == nil)
  }

  @Test func aCopyChangedOtherwiseFromTheSameStateIsNotTheMarkedOne() {
    var first = IdentifiedList((0..<100).map { Item(id: $0, value: $0) })
    var second = first
    // Changes of the order alone, made where no journal was.
    first.swapAt(0, 1)
    second.swapAt(2, 3)
    let mark = ListMark(first)
    #expect(mark.isState(of: first))
    #expect(!mark.isState(of: second))
    #expect(ListJournal().changes(of: second, since: mark, same: Self.same) == nil)
  }

  @Test func aStateWhoseTreesAreGoneIsNoListsState() {
    var list = IdentifiedList((0..<100).map { Item(id: $0, value: $0) })
    let mark = ListMark(list)
    list = IdentifiedList((0..<100).map { Item(id: $0, value: $0) })
    // The old roots are freed: a new list at their addresses must not pass for the state.
    let again = IdentifiedList((0..<100).map { Item(id: $0, value: $0) })
    #expect(!mark.isState(of: list))
    #expect(!mark.isState(of: again))
  }

  @Test func anEarlierVersionPutBackIsVouchedForOnlyAsTheStateItIs() throws {
    let journal = ListJournal()
    var list = IdentifiedList((0..<100).map { Item(id: $0, value: $0) })
    let mark = ListMark(list)
    let original = list
    journal.recording {
      list[id: 1]?.value += 1
      list = original
    }
    // The marked state itself: nothing changed.
    #expect(try #require(journal.changes(of: list, since: mark, same: Self.same)).isEmpty)
    journal.reset()
    // A version between two noted changes put back: the journal's note is of the later one.
    let secondMark = ListMark(list)
    var between = list
    journal.recording {
      list[id: 2]?.value += 1
      between = list
      list[id: 3]?.value += 1
      list = between
    }
    if let changes = journal.changes(of: list, since: secondMark, same: Self.same) {
      var rebuilt = IdentifiedList((0..<100).map { Item(id: $0, value: $0) })
      try rebuilt.apply(changes)
      #expect(rebuilt == list)
    }
  }

  @Test func noJournalIsFoundWhereNoneIsInstalled() {
    #expect(ListJournal.current == nil)
    let journal = ListJournal()
    journal.recording { #expect(ListJournal.current === journal) }
    #expect(ListJournal.current == nil)
  }
}
