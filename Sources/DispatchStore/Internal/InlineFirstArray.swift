/// A non-empty array that keeps its first element inline, so that the common case of one element allocates
/// nothing.
struct InlineFirstArray<Element> {
  private var first: Element
  private var rest: [Element] = []

  init(_ first: Element) {
    self.first = first
  }

  var count: Int { 1 + rest.count }

  mutating func append(_ element: Element) {
    rest.append(element)
  }

  /// Makes room for `count` elements in all, so that appending them allocates once.
  mutating func reserveCapacity(_ count: Int) {
    rest.reserveCapacity(count - 1)
  }

  // Closures, not a `_read`/`_modify` subscript: an accessor coroutine that is not inlined allocates its frame.

  /// Calls `body` with the element at `index`, without copying it.
  func read<Result>(at index: Int, _ body: (Element) throws -> Result) rethrows -> Result {
    index == 0 ? try body(first) : try body(rest[index - 1])
  }

  /// Calls `body` with the element at `index` to change it in place.
  mutating func update<Result>(at index: Int, _ body: (inout Element) throws -> Result) rethrows -> Result {
    index == 0 ? try body(&first) : try body(&rest[index - 1])
  }
}

/// A FIFO queue of node indices that holds its oldest element inline, so that one ready node allocates nothing.
struct ReadyQueue {
  private var head: Int?
  private var tail = FIFOQueue<Int>()
  private var tailCount = 0

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

extension InlineFirstArray: Sendable where Element: Sendable {}
extension ReadyQueue: Sendable {}
