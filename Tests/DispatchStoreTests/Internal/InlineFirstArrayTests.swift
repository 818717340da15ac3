import Testing

@testable import DispatchStore

@Suite("InlineFirstArray and ReadyQueue")
struct InlineFirstArrayTests {
  @Test func keepsOrderAcrossTheInlineElementAndTheRest() {
    var array = InlineFirstArray("a")
    array.append("b")
    array.append("c")
    #expect(array.count == 3)
    #expect((0..<array.count).map { index in array.read(at: index) { $0 } } == ["a", "b", "c"])
    array.update(at: 0) { $0 = "A" }
    array.update(at: 2) { $0 += "!" }
    #expect((0..<array.count).map { index in array.read(at: index) { $0 } } == ["A", "b", "c!"])
  }

  @Test func readyQueueIsFirstInFirstOutWhateverTheInterleaving() {
    var queue = ReadyQueue()
    var expected: [Int] = []
    var popped: [Int] = []
    // Interleave appends and pops so that the inline slot empties while later elements wait in the tail.
    for round in 0..<50 {
      for offset in 0..<(round % 4) {
        queue.append(round * 10 + offset)
        expected.append(round * 10 + offset)
      }
      if round % 3 == 0, let next = queue.popFirst() { popped.append(next) }
    }
    while let next = queue.popFirst() { popped.append(next) }
    #expect(popped == expected)
    #expect(queue.popFirst() == nil)
  }
}
