import Testing

@testable import DispatchStore

@Suite struct OrderTreeTests {
  /// Where each insertion goes in a list of `count` identifiers, the `step`th insertion.
  enum Place: String, CaseIterable, CustomTestStringConvertible {
    /// At `count / 2`: each insertion goes next to the one before, in a crowd that grows in the middle.
    case middle
    /// Before the same identifier each time.
    case fixed
    /// After the one inserted before.
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

  /// Insertions into a labelled tree relabel O(log n) places each, amortised, wherever they go: 100,000 insertions
  /// into 10,000 identifiers relabel fewer than 40 places per insertion (13 in the middle, 3 or fewer elsewhere).
  ///
  /// With one least distance for every relabelled window, insertions in the middle relabelled 86 places each, and
  /// more the longer they went on: every window was left at that distance, so the window relabelled at the next
  /// crowding grew with the crowd.
  @Test(arguments: Place.allCases)
  func insertionsRelabelFewPlacesWhereverTheyGo(_ place: Place) {
    let start = 10_000
    let insertions = 100_000
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
}
