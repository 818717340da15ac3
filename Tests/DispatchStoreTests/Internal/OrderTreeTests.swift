import Testing

@testable import DispatchStore

@Suite(
  "OrderTree", .watchdog, .offThePool,
  .disabled(if: isThreadSanitized, "value code on one thread: no race to find; runs plain and under AddressSanitizer")
) struct OrderTreeTests {
  /// Where each insertion goes in a list of `count` identifiers, the `step`th insertion.
  enum Place: String, CaseIterable, CustomTestStringConvertible {
    /// At `count / 2`: each insertion goes next to the one before, in a crowd that grows in the middle.
    case middle
    /// At one position: each insertion goes before the one before it, after the same identifier.
    case fixed
    /// After the one inserted before, before the same identifier.
    case after
    case front
    case end
    /// Spread over the list (positions 7,919 apart).
    case spread

    var testDescription: String { rawValue }

    func position(count: Int, start: Int, step: Int) -> Int {
      switch self {
      case .middle: count / 2
      case .fixed: start / 2
      case .after: start / 2 + step
      case .front: 0
      case .end: count
      case .spread: (step * 7_919) % (count + 1)
      }
    }
  }

  /// Insertions into a labelled tree relabel few places each, amortised, wherever they go: 100,000 insertions into
  /// 10,000 identifiers relabel fewer than 40 places per insertion (13 in the middle, 3 or fewer elsewhere).
  ///
  /// With one least distance for every relabelled window, insertions in the middle relabelled 86 places each, and
  /// more the longer they went on: every window was left at that distance, so the window relabelled at the next
  /// crowding grew with the crowd.
  @Test(arguments: Place.allCases)
  func insertionsRelabelFewPlacesWhereverTheyGo(_ place: Place) {
    let start = 10_000
    let insertions = isSanitized ? 20_000 : 100_000  // a fifth under AddressSanitizer, whose runtime slows it 3 to 4×
    var tree = OrderTree(Array(0..<start))
    #expect(tree.labels != nil)
    var relabelled = 0
    for step in 0..<insertions {
      relabelled += tree.insert(start + step, at: place.position(count: tree.count, start: start, step: step))
    }
    #expect(relabelled < 40 * insertions, "\(relabelled / insertions) places relabelled per insertion")
    // Labels still increase along the order, and each identifier is found where it is.
    _ = tree.checkedHeight()
    let labels = (0..<tree.count).map { tree.label(at: $0) }
    #expect(zip(labels, labels.dropFirst()).allSatisfy { $0 < $1 })
    #expect(stride(from: 0, to: tree.count, by: 97).allSatisfy { tree.firstIndex(of: tree[$0]) == $0 })
  }

  /// A relabelling while changes are applied splice by splice, with an identifier at two places in its window, its
  /// new place first, where the new label of that place is the old label of the other: the map keeps the new place's
  /// label, and the identifier is found there once its old place goes (the map took the old place's label, which its
  /// removal then dropped).
  @Test func aRelabellingKeepsTheNewPlaceOfAnIdentifierWhoseOldPlaceHasItsNewLabel() {
    var tree = OrderTree(Array(0..<5_000))
    let x = 50_000
    // The window relabelled below is 1,016..<1,048: `low` is the crowd's 16th label, `high` the label of 1,015.
    let low = tree.label(at: 1_000) - (1 << 16)
    let target = low + (tree.label(at: 1_015) - low) / 34  // the label its first place gets
    // x's old place, between 1,000 and 1,001, labelled exactly `target`: fillers narrow the gap, then go.
    var position = 1_001
    var fillers: [Int] = []
    while true {
      let (left, right) = (tree.label(at: position - 1), tree.label(at: position))
      let middle = left + (right - left) / 2
      if middle == target {
        tree.insert(x, at: position)
        break
      }
      let filler = 20_000 + fillers.count
      tree.insert(filler, at: position)
      fillers.append(filler)
      if middle < target { position += 1 }
    }
    for filler in fillers { _ = tree.remove(at: tree.firstIndex(of: filler)!) }
    #expect(tree[1_001] == x)
    // One splice's insertions after 999, x the 17th (its new place); the 33rd finds no label.
    for k in 1...32 { tree.insert(k == 17 ? x : 10_000 + k, at: 999 + k, mayRepeat: true) }
    let relabelled = tree.insert(10_033, at: 1_032, mayRepeat: true)
    #expect(relabelled == 32)
    #expect(tree[1_016] == x && tree[1_034] == x)
    _ = tree.remove(at: 1_034)  // the splice removing x's old place
    #expect(tree.firstIndex(of: x) == 1_016)
    _ = tree.checkedHeight()
  }
}
