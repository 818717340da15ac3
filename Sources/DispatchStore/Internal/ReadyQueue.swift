/// A FIFO queue of node indices that holds its oldest element inline, so that one ready node allocates nothing.
struct ReadyQueue {
  private var head: Int?
  private var tail = FIFOQueue<Int>()
  private var tailCount = 0

  var isEmpty: Bool { head == nil && tailCount == 0 }

  mutating func append(_ index: Int) {
    if head == nil && tailCount == 0 {
      head = index
    } else {
      tail.append(index)
      tailCount += 1
    }
  }

  mutating func popFirst() -> Int? {
    if let head {
      self.head = nil
      return head
    }
    guard let next = tail.popFirst() else { return nil }
    tailCount -= 1
    return next
  }
}

extension ReadyQueue: Sendable {}
