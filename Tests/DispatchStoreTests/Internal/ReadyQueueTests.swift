import Testing

@testable import DispatchStore

@Suite("ReadyQueue", .watchdog)
struct ReadyQueueTests {
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
