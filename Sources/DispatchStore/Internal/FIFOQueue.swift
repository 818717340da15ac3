/// A first-in, first-out queue with amortised O(1) `append` and `popFirst`.
///
/// An array and a head index: popped slots are released at once and the storage is compacted when more than
/// half of it is dead, so a long-lived queue does not grow without bound.
@usableFromInline
struct FIFOQueue<Element> {
  @usableFromInline var storage: [Element?] = []
  @usableFromInline var head = 0

  @inlinable
  init() {}

  @inlinable
  var isEmpty: Bool { head == storage.count }

  @inlinable
  mutating func append(_ element: Element) {
    storage.append(element)
  }

  @inlinable
  mutating func popFirst() -> Element? {
    guard head < storage.count else { return nil }
    // Moved out by a swap: a copy and a reset would retain and release everything the element holds.
    var element: Element?
    swap(&element, &storage[head])
    head += 1
    if head == storage.count {
      storage.removeAll(keepingCapacity: true)
      head = 0
    } else if head > 32 && head * 2 > storage.count {
      storage.removeFirst(head)
      head = 0
    }
    return element
  }

  /// Replaces each element by what `transform` returns for it, dropping those it returns `nil` for; the order stays.
  mutating func replaceEach(_ transform: (Element) -> Element?) {
    // A loop, not `compactMap` into `[Element?]`, which would keep each `nil` as a slot: `popFirst` would then
    // return `nil` there, as if the queue were empty, before the elements after it.
    var kept: [Element?] = []
    kept.reserveCapacity(storage.count - head)
    for case let element? in storage[head...] {
      if let replaced = transform(element) { kept.append(replaced) }
    }
    storage = kept
    head = 0
  }
}

extension FIFOQueue: Sendable where Element: Sendable {}
