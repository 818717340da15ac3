import Foundation

/// An ordered collection of identified elements, each id at most once, whose copies share what they did not change:
/// the way to hold a large collection in a model.
///
/// ```swift
/// struct Inbox: ModelType, Codable, Equatable {
///   var messages: IdentifiedList<Message> = []
/// }
/// model.messages.append(message)
/// model.messages[id: message.id]?.isRead = true
/// let newest = model.messages.last
/// ```
///
/// It is used as an `Array` is (a random-access, mutable, range-replaceable collection of value semantics, `Codable`
/// as a JSON array, `Equatable` and `Hashable` when its elements are), and it finds, changes and removes elements by
/// id. Its elements are `Identifiable`, so SwiftUI's `ForEach` takes it as it is.
///
/// What is different is the cost of keeping an old version. An array shares its buffer with its copies, and the first
/// change to a shared buffer copies all of it: a store whose previous model the recorder keeps, for undo and
/// verify, copies every element of its arrays on every change. An `IdentifiedList` is a tree of small nodes, and a
/// change copies only the few nodes on its path that a copy shares. So:
/// - Reading, changing, inserting and removing by position, and reading and changing by id, cost O(log n), whether
///   or not a copy is kept (an insertion into a list that has reached 4,096 elements, on average: now and then it
///   renumbers the places around it, which ``index(id:)`` finds elements by).
/// - `==` skips the nodes two versions of a list share, so comparing a list with its previous version costs what
///   changed, not the list's size.
/// - ``index(id:)``, ``remove(id:)`` (and setting ``subscript(id:)`` to `nil`) cost O(log n) in a list that has
///   reached 4,096 elements, until it shrinks below 1,024; a smaller list searches its ids in order. Iterating costs
///   more per element than an array's (each element is found by its id); reading every position through the
///   position subscript (as `firstIndex(where:)` does) costs O(log n) per element.
///
/// Each id is in the list at most once. Inserting an element whose id is already in the list (by `append`, `insert`
/// or `replaceSubrange`) is a programming error and traps, as `Dictionary(uniqueKeysWithValues:)` does with a
/// duplicate key; ``subscript(id:)`` adds or replaces. Decoding a JSON array with a repeated id throws
/// `DecodingError.dataCorrupted`.
///
/// > Important: A recorder writes an element again only when its stored bytes changed. Keep elements values all the
/// > way down: a class instance an element holds (other than the storage of a copy-on-write value such as `Array`,
/// > `String` or `Data`) is compared by its reference, so a change made inside it is not recorded: restore gives it the
/// > values it had when its element was last written. A list whose elements are themselves classes is written whole.
public struct IdentifiedList<Element: Identifiable> {
  /// The ids, in order; a change to them counts in the order tree's root (``OrderNode/generation``).
  @usableFromInline var order: OrderTree<Element.ID> {
    _read { yield orderStorage }
    _modify { yield &orderStorage }
  }
  /// The elements, by id.
  ///
  /// A change to them counts in their tree's root (``ElementNode/generation``): every change makes the root the
  /// list's own.
  @usableFromInline var elements: ElementTrie<Element> {
    _read { yield elementStorage }
    _modify {
      yield &elementStorage
      // Shared only if nothing changed: a change makes the root unique first.
      if isKnownUniquelyReferenced(&elementStorage.root) { elementStorage.root.generation &+= 1 }
    }
  }
  @usableFromInline var orderStorage: OrderTree<Element.ID>
  @usableFromInline var elementStorage: ElementTrie<Element>

  /// Creates an empty list.
  @inlinable public init() {
    orderStorage = OrderTree()
    elementStorage = ElementTrie()
  }

  /// Creates a list of `elements`, in their order.
  ///
  /// - Parameter elements: The elements, each id at most once (a repeated id traps).
  @inlinable public init(_ elements: some Sequence<Element>) {
    let elements = Array(elements)
    if let trie = ElementTrie.build(elements) {
      self.orderStorage = OrderTree(Self.ids(of: elements))
      self.elementStorage = trie
      return
    }
    // Two elements have one id: found one by one, to name it.
    var trie = ElementTrie<Element>()
    let ids = elements.map { element in
      // The update outside the precondition: `-Ounchecked` does not evaluate a precondition's condition.
      let replaced = trie.update(element)
      precondition(replaced == nil, "IdentifiedList: two elements have the id \(element.id)")
      return element.id
    }
    self.orderStorage = OrderTree(ids)
    self.elementStorage = trie
  }

  /// The element with `id`: `nil` if there is none.
  ///
  /// Setting an element replaces the element with `id` where it is,
  /// or appends it if there is none; setting `nil` removes the element.
  ///
  /// ```swift
  /// model.messages[id: id]?.isRead = true
  /// ```
  /// A change through the subscript changes the element where the list holds it: a list held nowhere else copies
  /// nothing, not even the lists inside the element.
  ///
  /// - Parameter id: The element's id; an element set must have this id.
  @inlinable public subscript(id id: Element.ID) -> Element? {
    get { elements[id] }
    set {
      guard let newValue else {
        remove(id: id)
        return
      }
      precondition(newValue.id == id, "IdentifiedList: the element set for id \(id) has the id \(newValue.id)")
      let note = ListJournal.current?.note(&self, touching: id)
      if elements.update(newValue) == nil { order.insert(id, at: order.count) }
      note?.ended(self)
    }
    _modify {
      let note = ListJournal.current?.note(&self, touching: id)
      // The trees' storage, not `elements`: its accessors cost a retain and a release of the root here.
      if elementStorage.containsItem(id) {
        // Moved out of its node and back: a copy would share what the element holds (a list inside it), which
        // its change would then copy.
        var element: Element?
        let (node, slot) = elementStorage.takeItem(id, into: &element)
        elementStorage.root.generation &+= 1
        defer {
          // Moved back, not copied: nothing it holds is retained and released again.
          if let changed = element.take() {
            precondition(changed.id == id, "IdentifiedList: the element set for id \(id) has the id \(changed.id)")
            node.items.insert(consume changed, at: slot)
          } else {
            elements.dropTaken(id)
            _ = order.remove(at: order.firstIndex(of: id)!)
          }
        }
        yield &element
      } else {
        var element = elements[id]
        defer { self[id: id] = element }
        yield &element
      }
      // Not in a `defer`, which costs an allocation per change; not reached if the caller's change throws, and then
      // the note does not vouch for the list (`ListJournal.changes(of:since:same:)`).
      note?.ended(self)
    }
  }

  /// The position of the element with `id`, if there is one.
  ///
  /// - Parameter id: The element's id.
  /// - Returns: Its position; `nil` if no element has `id`. O(log n) in a list that has reached 4,096 elements (until
  ///   it shrinks below 1,024); a smaller list searches its ids in order.
  @inlinable public func index(id: Element.ID) -> Int? {
    guard elements[id] != nil else { return nil }
    return order.firstIndex(of: id)
  }

  /// Removes the element with `id`, if there is one.
  ///
  /// - Parameter id: The element's id.
  /// - Returns: The element removed; `nil` if no element has `id`. Finding its position costs what ``index(id:)``
  ///   costs.
  @discardableResult
  @inlinable public mutating func remove(id: Element.ID) -> Element? {
    guard let position = index(id: id) else { return nil }
    let note = ListJournal.current?.note(&self, touching: id)
    defer { note?.ended(self) }
    _ = order.remove(at: position)
    return elements.remove(id)
  }
}

extension IdentifiedList: RandomAccessCollection, MutableCollection {
  /// The position of the first element: 0.
  @inlinable public var startIndex: Int { 0 }

  /// The position after the last element: the number of elements.
  @inlinable public var endIndex: Int { order.count }

  /// The number of elements.
  @inlinable public var count: Int { order.count }

  /// The element at `position`.
  ///
  /// Setting an element with the id of the element there replaces it. Setting one with an id not in the list
  /// replaces the element there, whose id leaves the list. Setting one whose id is elsewhere in the list, at
  /// `other`, first exchanges the two positions, then replaces it (as `IdentifiedArray` does): so the standard
  /// library's algorithms that reorder by assigning elements (a slice's `reverse()` or `sort()`) keep each id once.
  /// Finding `other` costs what ``index(id:)`` costs.
  ///
  /// - Parameter position: A position from 0 to `count - 1`.
  @inlinable public subscript(position: Int) -> Element {
    get {
      precondition(position >= 0 && position < count, "IdentifiedList: index \(position) out of range")
      return elements[order[position]]!
    }
    set {
      precondition(position >= 0 && position < count, "IdentifiedList: index \(position) out of range")
      let id = order[position]
      let note = ListJournal.current?.note(&self, touching: id, newValue.id)
      defer { note?.ended(self) }
      if newValue.id == id {
        elements.update(newValue)
        return
      }
      if elements[newValue.id] != nil, let other = order.firstIndex(of: newValue.id) {
        swapAt(position, other)
        elements.update(newValue)
        return
      }
      elements.remove(id)
      elements.update(newValue)
      order.replace(at: position, with: newValue.id)
    }
  }

  /// The position after `position`.
  ///
  /// - Parameter position: A position.
  /// - Returns: `position + 1`.
  @inlinable public func index(after position: Int) -> Int { position + 1 }

  /// The position before `position`.
  ///
  /// - Parameter position: A position.
  /// - Returns: `position - 1`.
  @inlinable public func index(before position: Int) -> Int { position - 1 }

  /// Exchanges the elements at two positions.
  ///
  /// - Parameters:
  ///   - first: A position of an element.
  ///   - second: A position of an element.
  @inlinable public mutating func swapAt(_ first: Int, _ second: Int) {
    precondition(first >= 0 && first < count && second >= 0 && second < count, "IdentifiedList: index out of range")
    guard first != second else { return }
    let note = ListJournal.current?.note(&self)
    defer { note?.ended(self) }
    let (firstID, secondID) = (order[first], order[second])
    order.replace(at: first, with: secondID)
    order.replace(at: second, with: firstID)
  }

  /// Moves the elements at `source` to `destination`, keeping their order, as SwiftUI's `onMove` reports a drag.
  ///
  /// Only the order changes, not the elements: a recorded session's record of a move holds the order's change alone.
  ///
  /// - Parameters:
  ///   - source: The positions of the elements to move; a position outside the list traps.
  ///   - destination: The position, in the list before the move, that the elements go before (`count` for the end);
  ///     a position outside `0...count` traps.
  @inlinable public mutating func move(fromOffsets source: IndexSet, toOffset destination: Int) {
    precondition(destination >= 0 && destination <= count, "IdentifiedList: destination out of range")
    guard let first = source.first, let last = source.last else { return }
    precondition(first >= 0 && last < count, "IdentifiedList: index out of range")
    let note = ListJournal.current?.note(&self)
    defer { note?.ended(self) }
    let ids = source.map { order[$0] }
    for position in source.reversed() { _ = order.remove(at: position) }
    let target = destination - source.count(in: 0..<destination)
    for (offset, id) in ids.enumerated() { order.insert(id, at: target + offset) }
  }

  /// Sorts the list in place; like `Array`'s, the sort is not promised to be stable.
  ///
  /// - Parameter areInIncreasingOrder: Whether its first argument goes before its second.
  /// - Throws: What `areInIncreasingOrder` throws; the list is then unchanged.
  @inlinable public mutating func sort(by areInIncreasingOrder: (Element, Element) throws -> Bool) rethrows {
    let sorted = try self.sorted(by: areInIncreasingOrder)
    let note = ListJournal.current?.note(&self)
    order = OrderTree(Self.ids(of: sorted))
    note?.ended(self)
  }

  /// The ids of `elements`, in order.
  ///
  /// Read through the array's buffer: in code not specialised for the element type, `map` reads each element
  /// through the collection's generic subscript, which allocates for each.
  @inlinable static func ids(of elements: [Element]) -> [Element.ID] {
    // Not for none: an array made with no capacity is the shared empty one, whose count the initialiser writes, a
    // data race under ThreadSanitizer.
    guard !elements.isEmpty else { return [] }
    return elements.withUnsafeBufferPointer { elements in
      [Element.ID](unsafeUninitializedCapacity: elements.count) { ids, initialized in
        for index in elements.indices { (ids.baseAddress! + index).initialize(to: elements[index].id) }
        initialized = elements.count
      }
    }
  }

  /// The elements in order.
  @inlinable public func makeIterator() -> Iterator {
    Iterator(ids: order.makeIterator(), elements: elements)
  }

  /// Visits a list's elements in order.
  public struct Iterator: IteratorProtocol {
    @usableFromInline var ids: OrderTree<Element.ID>.Iterator
    @usableFromInline let elements: ElementTrie<Element>

    @inlinable init(ids: OrderTree<Element.ID>.Iterator, elements: ElementTrie<Element>) {
      self.ids = ids
      self.elements = elements
    }

    /// The next element; `nil` after the last.
    @inlinable public mutating func next() -> Element? {
      guard let id = ids.next() else { return nil }
      return elements[id]!
    }
  }
}

extension IdentifiedList: RangeReplaceableCollection {
  /// Replaces the elements in `subrange` with `newElements`.
  ///
  /// - Parameters:
  ///   - subrange: The positions to replace.
  ///   - newElements: The elements to put there, whose ids are not in the list outside `subrange` (a repeated id
  ///     traps).
  @inlinable public mutating func replaceSubrange(_ subrange: Range<Int>, with newElements: some Collection<Element>) {
    precondition(subrange.lowerBound >= 0 && subrange.upperBound <= count, "IdentifiedList: range out of bounds")
    var note: ListJournal.Note<Element>?
    if let journal = ListJournal.current {
      let ids = subrange.map { order[$0] } + newElements.map(\.id)
      note = journal.note(&self, touchingAll: ids)
    }
    defer { note?.ended(self) }
    for position in subrange.reversed() {
      elements.remove(order.remove(at: position))
    }
    var position = subrange.lowerBound
    for element in newElements {
      let replaced = elements.update(element)
      precondition(replaced == nil, "IdentifiedList: the id \(element.id) is already in the list")
      order.insert(element.id, at: position)
      position += 1
    }
  }

  /// Removes all elements.
  ///
  /// - Parameter keepCapacity: Ignored: a list holds no spare capacity.
  @inlinable public mutating func removeAll(keepingCapacity keepCapacity: Bool = false) {
    let note = ListJournal.current?.note(&self)
    note?.replacingElements(self)
    self = IdentifiedList()
    note?.ended(self)
  }
}

extension IdentifiedList where Element: Comparable {
  /// Sorts the list in ascending order; like `Array`'s, the sort is not promised to be stable.
  @inlinable public mutating func sort() {
    sort(by: <)
  }
}

extension IdentifiedList: ExpressibleByArrayLiteral {
  /// Creates a list of the literal's elements.
  ///
  /// - Parameter elements: The elements, each id at most once (a repeated id traps).
  @inlinable public init(arrayLiteral elements: Element...) {
    self.init(elements)
  }
}

extension IdentifiedList: Equatable where Element: Equatable {
  /// Whether two lists hold equal elements in the same order; the parts two versions of a list share are skipped.
  ///
  /// - Parameters:
  ///   - lhs: A list.
  ///   - rhs: Another list.
  /// - Returns: Whether they are equal.
  @inlinable public static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.count == rhs.count && lhs.order == rhs.order && lhs.elements == rhs.elements
  }
}

extension IdentifiedList: Hashable where Element: Hashable {
  /// Hashes the elements in order.
  ///
  /// - Parameter hasher: The hasher.
  @inlinable public func hash(into hasher: inout Hasher) {
    hasher.combine(count)
    for element in self { hasher.combine(element) }
  }
}

extension IdentifiedList: Sendable where Element: Sendable, Element.ID: Sendable {}

extension IdentifiedList: Encodable where Element: Encodable {
  /// Encodes the elements as an array, in order.
  ///
  /// - Parameter encoder: The encoder.
  /// - Throws: What encoding an element throws.
  public func encode(to encoder: any Encoder) throws {
    // A session's writer writes the list as the changes from its previous record, or whole with its ids.
    if let stream = encoder as? JSONStreamEncoder, let lists = stream.lists, try lists.write(self, to: stream) {
      return
    }
    try encodeElements(to: encoder)
  }

  /// Encodes the elements as an array, in order: apart, so that the session's path above does not look up the types
  /// iterating uses (unspecialised, an optional of the element's type).
  private func encodeElements(to encoder: any Encoder) throws {
    var container = encoder.unkeyedContainer()
    for element in self { try container.encode(element) }
  }
}

extension IdentifiedList: Decodable where Element: Decodable {
  /// Decodes the elements from an array, in order.
  ///
  /// - Parameter decoder: The decoder.
  /// - Throws: `DecodingError.dataCorrupted` if two elements have the same id; what decoding an element throws.
  public init(from decoder: any Decoder) throws {
    // A session's reader reads the list from its session form: whole with its ids, or as changes from a base.
    if let lists = decoder.userInfo[ListDecoding.key] as? ListDecoding,
      let list = try lists.decode(Self.self, from: decoder)
    {
      self = list
      return
    }
    var container = try decoder.unkeyedContainer()
    var elements: [Element] = []
    if let count = container.count, count > 0 {
      // Written in place: appending, in code not specialised for the element type, looks up the array's type for
      // each element. (Not for none: an array made with no capacity is the shared empty one, whose count the
      // initialiser writes, a data race under ThreadSanitizer.)
      elements = try Array(unsafeUninitializedCapacity: count) { buffer, initialized in
        while initialized < count, !container.isAtEnd {
          (buffer.baseAddress! + initialized).initialize(to: try container.decode(Element.self))
          initialized += 1
        }
      }
    }
    // Any the container's count left out (a decoder whose count is missing, or low).
    while !container.isAtEnd { elements.append(try container.decode(Element.self)) }
    guard let trie = ElementTrie.build(elements) else {
      var seen = Set<Element.ID>()
      let repeated = elements.first { !seen.insert($0.id).inserted }!
      throw DecodingError.dataCorruptedError(
        in: container, debugDescription: "Two elements have the id \(repeated.id).")
    }
    self.orderStorage = OrderTree(Self.ids(of: elements))
    self.elementStorage = trie
  }
}

extension IdentifiedList: CustomStringConvertible {
  /// The elements, as an array describes them.
  public var description: String { Array(self).description }
}
