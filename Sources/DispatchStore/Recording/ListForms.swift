import Foundation

/// How a session line holds an ``IdentifiedList`` (format 3, proposal 0017): whole, with its ids, or as the changes
/// from the same list in the store's previous record line.
///
/// ```text
/// whole    {"~all":[element…],"~ids":[id…]}
/// changes  {"~order":[[position,removing,[id…]]…],"~remove":[id…],"~set":[[id,element]…]}   (empty ones left out)
/// ```
/// The line lists where these forms are in its model (`"l"`, coding paths as arrays of keys and indices) and, when
/// it has a base, the record line whose lists its changes apply to (`"z"`). Everywhere else a list is a plain JSON
/// array.
///
/// A list inside an element of a list form is in a form too, at its path through the form (`["sections","~set",0,1,
/// "rows"]`): whole in an element written whole or added, and in a changed element as the changes from the same list
/// in the element it replaces (the element with its id in the outer list's base).
enum ListFormKey: String, CodingKey {
  case ids = "~ids"
  case all = "~all"
  case set = "~set"
  case remove = "~remove"
  case order = "~order"
}

/// A coding path as a line's `"l"` holds it: a JSON array of object keys (strings) and array indices (integers).
enum ListPath {
  /// The JSON of `codingPath` without its first `dropping` keys; also the key that finds a list by its path.
  static func json(_ codingPath: [any CodingKey], dropping: Int = 0) -> [UInt8] {
    json(
      codingPath.dropFirst(dropping).map { key in
        // An array's position: coders name it "Index N" (a user's integer key keeps its own name, the JSON key).
        if let index = key.intValue, key.stringValue == "Index \(index)" { return .index(index) }
        return .key(key.stringValue)
      })
  }

  /// Whether `codingPath`, without its first `dropping` keys, passes through an array's position.
  static func hasIndex(_ codingPath: [any CodingKey], dropping: Int) -> Bool {
    codingPath.dropFirst(dropping).contains { key in
      if let index = key.intValue, key.stringValue == "Index \(index)" { return true }
      return false
    }
  }

  /// One key of a path in `"l"`, decoded.
  enum Component: Decodable {
    case key(String)
    case index(Int)

    init(from decoder: any Decoder) throws {
      let container = try decoder.singleValueContainer()
      if let index = try? container.decode(Int.self) {
        self = .index(index)
      } else {
        self = .key(try container.decode(String.self))
      }
    }
  }

  /// The key of a decoded path, equal to ``json(_:dropping:)``'s of the same path.
  static func json(_ components: [Component]) -> [UInt8] {
    var json: [UInt8] = [UInt8(ascii: "[")]
    for (offset, component) in components.enumerated() {
      if offset > 0 { json.append(UInt8(ascii: ",")) }
      switch component {
      case .key(let key): JSONText.append(key, to: &json)
      case .index(let index): JSONText.append(index, to: &json)
      }
    }
    json.append(UInt8(ascii: "]"))
    return json
  }
}

/// The lists of one record line, by path (the JSON of their coding paths in the model): what the next line of the
/// same store writes its changes against, and reads them with.
///
/// `@unchecked Sendable`: it holds ``IdentifiedList``s taken from models, which are `Sendable`, as `Any`; it is
/// never changed after it is made.
struct LineLists: @unchecked Sendable {
  let lists: [[UInt8]: Any]

  static let none = LineLists(lists: [:])
}

/// An ``IdentifiedList`` held as `Any` (in ``LineLists``), compared with another.
protocol ComparableList {
  /// Whether `other` is a list of this type with the same ids in the same order and, where the list is `Equatable`,
  /// equal to it.
  func isSame(as other: Any) -> Bool
}

extension IdentifiedList: ComparableList {
  func isSame(as other: Any) -> Bool {
    guard let other = other as? IdentifiedList<Element> else { return false }
    func equal<List: Equatable>(_ list: List) -> Bool { (other as? List) == list }
    if let list = self as Any as? any Equatable { return equal(list) }
    return order == other.order
  }
}

/// The lists of one store's record line while it is encoded: the lists of the store's previous line to write
/// changes against, and the lists this line writes, by path.
///
/// Used by one writer's encoder, on its thread.
final class ListEncoding {
  /// The lists of the store's previous record line; empty to write every list whole.
  private(set) var base: LineLists
  /// The lists this line writes: the next line's base.
  private(set) var written: [[UInt8]: Any] = [:]
  /// The paths of the forms written, in the order written.
  private(set) var paths: [[UInt8]] = []
  /// The paths of the base's lists this line's changes were written against.
  private(set) var basePathsRead: [[UInt8]] = []
  /// The JSON of each element of the list last written whole at a path (``ElementJSON``).
  ///
  /// A list written whole again copies the JSON of the elements whose stored bytes are unchanged, instead of encoding
  /// them. It holds a copy of the list's elements and their JSON, per path, for as long as the encoder lives.
  private var wholeJSON: [[UInt8]: Any] = [:]
  /// The elements of list forms being written, innermost last: a list inside one is written in its form too.
  private var scopes: [ElementScope] = []
  /// The lists found so far by ``lists(in:)``, while it encodes an element; `nil` otherwise.
  private var found: [[UInt8]: Any]?
  /// The encoder ``lists(in:)`` uses, and the bytes it writes (thrown away).
  private lazy var finder = JSONStreamEncoder()
  private var scratch: [UInt8] = []
  /// The element type of the list last written, and whether its lists take their forms (``write(_:to:)``): a model's
  /// lists are of the same types from one line to the next, and checking a type's conformances costs a lookup.
  private var lastElementType: (type: ObjectIdentifier, takesForms: Bool)?
  /// The coding path of the list last written, as ``ListPath/json(_:dropping:)`` reads it, and that JSON: a model's
  /// lists are at the same paths from one line to the next.
  private var lastPath: (keys: [(string: String, int: Int?)], json: [UInt8])?

  init(base: LineLists = .none) {
    self.base = base
  }

  /// Starts a line whose lists' changes are written against `base` (every list whole if it is empty).
  func begin(base: LineLists) {
    self.base = base
    reset()
  }

  /// Forgets what was written: the value is being encoded again another way (without list forms).
  func reset() {
    if !written.isEmpty { written = [:] }
    if !paths.isEmpty { paths = [] }
    // Kept: the writer's lines reach here too, and a buffer made again for each would be a malloc per line.
    if !basePathsRead.isEmpty { basePathsRead.removeAll(keepingCapacity: true) }
    if !scopes.isEmpty { scopes = [] }
  }

  /// The lists in `element` that are not inside another list, by their coding paths from it: the bases of the changes
  /// of the lists inside the element that replaces it, or, for a model, the lists a line writing them whole records
  /// (``written``), found without encoding their elements.
  ///
  /// - Throws: `JSONStreamEncoder.Unsupported` for an element this encoder does not follow: the line's whole model is
  ///   then written by `JSONEncoder`, without list forms, as for any such value.
  func lists(in element: any Encodable) throws -> [[UInt8]: Any] {
    found = [:]
    finder.lists = self
    defer {
      found = nil
      finder.lists = nil
      scratch.removeAll(keepingCapacity: true)
    }
    // Not `encode`, whose fallback would forget the forms of the line this encoding is writing.
    try finder.encodeDirectly(element, into: &scratch)
    return found ?? [:]
  }

  /// Writes `list` at the encoder's coding path in its list form.
  ///
  /// The changes from the base's list at the same path if there is one of the same type, otherwise whole. Returns
  /// `false`, having written nothing, if the list's ids do not encode.
  func write<Element: Identifiable & Encodable>(
    _ list: IdentifiedList<Element>, to encoder: JSONStreamEncoder
  ) throws -> Bool {
    // Changes are found by comparing elements' stored bytes: an element that is a class, changed in place, would
    // look unchanged, so such lists are written as plain arrays.
    let elementType = ObjectIdentifier(Element.self)
    let takesForms: Bool
    if let last = lastElementType, last.type == elementType {
      takesForms = last.takesForms
    } else {
      takesForms = Element.ID.self is any Encodable.Type && !(Element.self is AnyObject.Type)
      lastElementType = (elementType, takesForms)
    }
    guard takesForms else { return false }
    let codingPath = encoder.codingPath
    if found != nil {
      // Finding an element's lists: noted, not written. Their paths are from the element, not the line's: not through
      // `pathJSON`, whose one path kept would then change between the two on every changed element of a nested list.
      found?[ListPath.json(codingPath)] = list
      _ = encoder.unkeyedContainer()
      return true
    }
    let path = pathJSON(codingPath)
    // The base's list, if it has one of this type: checked with `is`, then taken with `as!`. Unspecialised, `as?`
    // makes an optional of the list's type, which looks its type up on every record.
    let baseList: Any? = scopes.isEmpty ? base.lists[path] : try scopes.replacedList(at: codingPath, finder: self)
    let form = try encoder.directObject()
    if let baseList, baseList is IdentifiedList<Element> {
      if scopes.isEmpty { basePathsRead.append(path) }
      try writeChanges(list, from: baseList as! IdentifiedList<Element>, depth: codingPath.count, to: form)
    } else {
      try writeWholeForm(list, at: path, depth: codingPath.count, to: form, encoder: encoder)
    }
    if scopes.isEmpty { written[path] = list }
    paths.append(path)
    return true
  }

  /// Writes `list` in `form` as its changes from `previous`, the list at the same path in the base.
  private func writeChanges<Element: Identifiable & Encodable>(
    _ list: IdentifiedList<Element>, from previous: IdentifiedList<Element>, depth: Int,
    to form: JSONStreamEncoder.DirectContainer
  ) throws {
    try write(list.changes(since: previous) { Self.sameBytes($0, $1) }, replacing: previous, depth: depth, to: form)
  }

  /// Writes `list` in `form` whole, with its ids.
  private func writeWholeForm<Element: Identifiable & Encodable>(
    _ list: IdentifiedList<Element>, at path: [UInt8], depth: Int, to form: JSONStreamEncoder.DirectContainer,
    encoder: JSONStreamEncoder
  ) throws {
    // `"~all"` first, in the order the encoder sorts keys in: the list's JSON is not moved when the object closes.
    let all = try form.nestedArray(forKey: .all)
    let kept: ElementJSON<Element>?
    if scopes.isEmpty {
      kept = try writeWhole(list, at: path, depth: depth, to: all)
    } else {
      kept = nil
      for element in list { try within(ElementScope(depth: depth + 2)) { try all.encode(element) } }
    }
    let ids = try form.nestedArray(forKey: .ids)
    if let kept, let json = kept.idsJSON {
      try ids.appendElementsJSON(json[...], count: list.count)
    } else {
      let start = encoder.writtenCount
      var order = list.order.makeIterator()
      while let id = order.next() { try Self.encode(id, into: ids) }
      if let kept, encoder.isComplete { kept.idsJSON = encoder.written(from: start) }
    }
  }

  /// ``ListPath/json(_:dropping:)`` of `codingPath`, taken from ``lastPath`` when the keys are the same.
  private func pathJSON(_ codingPath: [any CodingKey]) -> [UInt8] {
    if let last = lastPath, last.keys.count == codingPath.count,
      zip(last.keys, codingPath).allSatisfy({ $0.string == $1.stringValue && $0.int == $1.intValue })
    {
      return last.json
    }
    let json = ListPath.json(codingPath)
    lastPath = (codingPath.map { ($0.stringValue, $0.intValue) }, json)
    return json
  }

  /// Runs `body`, which writes the element of `scope`.
  private func within<Result>(_ scope: ElementScope, _ body: () throws -> Result) rethrows -> Result {
    scopes.append(scope)
    defer { scopes.removeLast() }
    return try body()
  }

  /// Writes the elements of `list` into `all`, then keeps their JSON for the next time a list is written whole at
  /// `path`.
  ///
  /// If the list has the ids, in the same order, of the list last written whole there, the elements that changed
  /// since (``IdentifiedList/changes(since:same:)``) are encoded and the runs between them copied
  /// (``writeWholeKeepingOrder(_:known:changes:depth:to:into:)``). Otherwise an element found at the same place in that
  /// list (or one or two places on: elements removed since), with the same stored bytes (``sameBytes(_:_:)``: the same
  /// value, so the same JSON), is written by copying its JSON; the others are encoded.
  ///
  /// The lists inside an element are in their forms, whole, and their paths go into `"l"`: an element copied adds the
  /// paths its JSON holds, at its new position.
  /// - Returns: The JSON kept for the next time, if any: its ids' JSON is for the caller to keep.
  private func writeWhole<Element: Identifiable & Encodable>(
    _ list: IdentifiedList<Element>, at path: [UInt8], depth: Int, to all: JSONStreamEncoder.DirectContainer
  ) throws -> ElementJSON<Element>? {
    let known = wholeJSON[path] as? ElementJSON<Element>
    // Dropped first: a write that fails keeps none, rather than the JSON of a list half written.
    wholeJSON[path] = nil
    guard !list.isEmpty else { return nil }
    var whole = WholeJSON<Element>(path: path, count: list.count)
    if let known, known.inner.isEmpty,
      let changes = Self.changesKeepingOrder(of: list, since: known)
    {
      try writeWholeKeepingOrder(
        list, known: known, changes: changes, depth: depth, to: all, into: &whole)
      guard whole.complete else { return nil }
      let kept = ElementJSON(
        list: list, elements: whole.elements, ends: whole.ends, json: whole.json, inner: whole.inner,
        innerPaths: whole.innerPaths, positions: known.positions)
      // The ids' JSON too, unless an id was replaced by an equal one stored apart (`"é"` spelt `"e\u{301}"`),
      // whose JSON may differ.
      if changes.sameIDs { kept.idsJSON = known.idsJSON }
      wholeJSON[path] = kept
      return kept
    }
    whole.json.reserveCapacity(known?.json.count ?? 0)
    var cursor = 0
    // Made at its size: appending, in code not specialised for the element type, looks up the array's type for each
    // element.
    let elements = try [Element](unsafeUninitializedCapacity: list.count) { buffer, initialized in
      for element in list {
        var copied = false
        if let known {
          for candidate in cursor..<min(cursor + 3, known.elements.count)
          where known.elements[candidate].id == element.id {
            cursor = candidate + 1
            let unchanged = known.elements.withUnsafeBufferPointer { stored in
              withUnsafePointer(to: element) { Self.sameBytes(stored.baseAddress! + candidate, $0) }
            }
            guard unchanged else { break }
            let bytes = known.json[known.start(candidate)..<known.ends[candidate]]
            try all.appendElementsJSON(bytes, count: 1)
            let position = whole.ends.count
            whole.append(bytes)
            if !known.inner.isEmpty, known.inner[candidate] != 0 {
              let set = known.innerPaths[known.inner[candidate]]
              let own = whole.elementPath(position)
              for rest in set { paths.append(own + rest) }
              whole.noteInner(set, at: position)
            }
            copied = true
            break
          }
        }
        if !copied { try writeElement(element, depth: depth, to: all, into: &whole) }
        (buffer.baseAddress! + initialized).initialize(to: element)
        initialized += 1
      }
    }
    whole.elements = elements
    guard whole.complete else { return nil }
    let kept = ElementJSON(
      list: list, elements: whole.elements, ends: whole.ends, json: whole.json, inner: whole.inner,
      innerPaths: whole.innerPaths, positions: nil)
    wholeJSON[path] = kept
    return kept
  }

  /// The elements of `list` that changed since `known`'s list, and their positions in order.
  ///
  /// `nil` unless `list` has the ids of that list in the same order. `sameIDs`: whether each changed element's id has
  /// the stored bytes of the id it replaces.
  private static func changesKeepingOrder<Element: Identifiable & Encodable>(
    of list: IdentifiedList<Element>, since known: ElementJSON<Element>
  ) -> (changed: [Element], order: [(position: Int, index: Int)], sameIDs: Bool)? {
    let changes = list.changes(since: known.list) { sameBytes($0, $1) }
    guard changes.splices.isEmpty, changes.removed.isEmpty, list.count == known.elements.count else { return nil }
    // Positions and indices sorted, not the elements: a sort of elements, unspecialised, copies them through their
    // type's witnesses.
    var order: [(position: Int, index: Int)] = []
    order.reserveCapacity(changes.updated.count)
    var sameIDs = true
    for index in changes.updated.indices {
      // The order is the same, so every id updated was there: an id added would have changed the order.
      guard let position = known.position(of: changes.updated[index].id) else { return nil }
      order.append((position, index))
      if sameIDs {
        sameIDs = withUnsafePointer(to: changes.updated[index].id) { updated in
          withUnsafePointer(to: known.elements[position].id) { sameBytes(updated, $0) }
        }
      }
    }
    order.sort { $0.position < $1.position }
    return (changes.updated, order, sameIDs)
  }

  /// Writes a list with the ids and order of `known`'s: the elements at `changed` encoded, the runs of elements
  /// between them copied from `known`'s JSON, each run at once.
  private func writeWholeKeepingOrder<Element: Identifiable & Encodable>(
    _ list: IdentifiedList<Element>, known: ElementJSON<Element>,
    changes changed: (changed: [Element], order: [(position: Int, index: Int)], sameIDs: Bool), depth: Int,
    to all: JSONStreamEncoder.DirectContainer, into whole: inout WholeJSON<Element>
  ) throws {
    whole.json.reserveCapacity(known.json.count + 64)
    // Taken, not copied: `known` is dropped once this list is written.
    whole.elements = known.takeElements()
    var cursor = 0
    for (position, index) in changed.order {
      if position > cursor { try whole.appendRun(of: known, from: cursor, upTo: position, to: all) }
      try writeElement(changed.changed[index], depth: depth, to: all, into: &whole)
      cursor = position + 1
    }
    if list.count > cursor { try whole.appendRun(of: known, from: cursor, upTo: list.count, to: all) }
    // In one access: unspecialised, each assignment looks up the array's type.
    whole.elements.withUnsafeMutableBufferPointer { elements in
      for (position, index) in changed.order { elements[position] = changed.changed[index] }
    }
  }

  /// Encodes `element` as the next element of a list written whole, noting the paths of the lists inside it.
  private func writeElement<Element: Identifiable & Encodable>(
    _ element: Element, depth: Int, to all: JSONStreamEncoder.DirectContainer, into whole: inout WholeJSON<Element>
  ) throws {
    let forms = paths.count
    let position = whole.ends.count
    guard let bytes = try within(ElementScope(depth: depth + 2), { try all.encodeElement(element) })
    else {
      whole.complete = false
      whole.append([][...])
      return
    }
    whole.append(bytes)
    if paths.count > forms {
      let own = whole.elementPath(position)
      whole.noteInner(paths[forms...].map { Array($0.dropFirst(own.count)) }, at: position)
    }
  }

  /// Writes `changes` from `previous`, the list at the coding path of length `depth`.
  private func write<Element: Identifiable & Encodable>(
    _ changes: ListChanges<Element>, replacing previous: IdentifiedList<Element>, depth: Int,
    to form: JSONStreamEncoder.DirectContainer
  ) throws {
    // In the order the encoder sorts keys in (`"~order"`, `"~remove"`, `"~set"`): nothing is moved when the object
    // closes. `count`, not `isEmpty`: unspecialised, `isEmpty` looks up the array's type and its witnesses.
    if changes.splices.count > 0 {
      let order = try form.nestedArray(forKey: .order)
      for splice in changes.splices {
        let entry = try order.nestedArray()
        try entry.encode(splice.position)
        try entry.encode(splice.removing)
        let ids = try entry.nestedArray()
        for id in splice.ids { try Self.encode(id, into: ids) }
      }
    }
    if changes.removed.count > 0 {
      let remove = try form.nestedArray(forKey: .remove)
      for id in try Self.sortedByJSON(changes.removed, id: { $0 }) { try Self.encode(id, into: remove) }
    }
    if changes.updated.count > 0 {
      // In the order of the ids' JSON, so that the bytes do not depend on the trie's shape (the process's hash seed).
      let sorted = try Self.sortedByJSON(changes.updated, id: { $0.id })
      let set = try form.nestedArray(forKey: .set)
      for element in sorted {
        let pair = try set.nestedArray()
        try Self.encode(element.id, into: pair)
        // Lists inside it are written as the changes from the element it replaces.
        let scope = ElementScope(depth: depth + 3, replaced: ReplacedElement(list: previous, id: element.id))
        try within(scope) { try pair.encode(element) }
      }
    }
  }

  /// Encodes an id, whose type ``write(_:to:)`` checked is `Encodable`.
  private static func encode(_ id: some Hashable, into container: JSONStreamEncoder.DirectContainer) throws {
    if try container.encodeCommonID(id) { return }
    let encodable = id as! any Encodable
    try encodeOpened(encodable, into: container)
  }

  private static func encodeOpened<ID: Encodable>(_ id: ID, into container: JSONStreamEncoder.DirectContainer) throws {
    try container.encode(id)
  }

  /// `values` in the order of their ids' JSON; one value (the common record, one element changed) as it is.
  private static func sortedByJSON<Value, ID: Hashable>(_ values: [Value], id: (Value) -> ID) throws -> [Value] {
    guard values.count > 1 else { return values }
    let encoder = JSONStreamEncoder()
    var keyed: [(json: [UInt8], value: Value)] = []
    keyed.reserveCapacity(values.count)
    for value in values {
      var bytes: [UInt8] = []
      let encodable = id(value) as! any Encodable
      try jsonOpened(encodable, encoder, into: &bytes)
      keyed.append((bytes, value))
    }
    return keyed.sorted { $0.json.lexicographicallyPrecedes($1.json) }.map(\.value)
  }

  private static func jsonOpened<ID: Encodable>(_ id: ID, _ encoder: JSONStreamEncoder, into bytes: inout [UInt8])
    throws
  {
    try encoder.encode(id, into: &bytes)
  }

  /// Whether two elements hold the same bytes: the same values, and the same references to storage (a `String`'s,
  /// an `Array`'s), which a value type never changes in place.
  ///
  /// Not `==`, which an element may define more loosely (by its id alone), and which would then leave a change
  /// unwritten. Two equal values stored apart (a string built again) differ here: they are written, which costs
  /// bytes, never a change.
  ///
  /// The bytes of the padding between fields are not compared: a copy of a type that holds references writes its
  /// fields, not its padding, so an element copied (taken out and put back, or removed and inserted again) may differ
  /// from its original there alone. Where the stored bytes differ, both elements are copied over zeros and those
  /// copies compared: the same fields make the same bytes. (A type without references, or one over 512 bytes, is
  /// compared as stored: an element of it built again with the same values may be written again.)
  static func sameBytes<Element>(_ lhs: UnsafePointer<Element>, _ rhs: UnsafePointer<Element>) -> Bool {
    let size = MemoryLayout<Element>.size
    if memcmp(lhs, rhs, size) == 0 { return true }
    // Copies of a type without references are its bytes, padding included; a type that is not bitwise-takable may
    // copy otherwise; scratch space over 1 KB is not on the stack.
    let stride = MemoryLayout<Element>.stride
    guard !_isPOD(Element.self), _isBitwiseTakable(Element.self), stride <= 512 else { return false }
    return withUnsafeTemporaryAllocation(byteCount: 2 * stride, alignment: MemoryLayout<Element>.alignment) { raw in
      let base = raw.baseAddress!
      base.initializeMemory(as: UInt8.self, repeating: 0, count: 2 * stride)
      let copies = base.bindMemory(to: Element.self, capacity: 2)
      copies.initialize(from: lhs, count: 1)
      (copies + 1).initialize(from: rhs, count: 1)
      defer { copies.deinitialize(count: 2) }
      // Two values of one type write the same bytes when their cases (and an existential's type) are the same, and
      // those differ in bytes that both write.
      return memcmp(copies, copies + 1, size) == 0
    }
  }
}

/// An element of a list form being written or read: the lists inside it are in their forms too.
struct ElementScope {
  /// The length of the element's coding path.
  let depth: Int
  /// For a changed element, the element it replaces in the list's base (none if it was added); `nil` for an element
  /// of a list written whole.
  let replaced: (any ReplacedLists)?
  /// The lists in the replaced element, by their coding paths from it, once asked for.
  var lists: [[UInt8]: Any]?

  init(depth: Int, replaced: (any ReplacedLists)? = nil) {
    self.depth = depth
    self.replaced = replaced
  }
}

extension [ElementScope] {
  /// The list at `codingPath` in the element the innermost scope's element replaces, if there is one; `finder` finds
  /// that element's lists on first use.
  mutating func replacedList(at codingPath: [any CodingKey], finder: ListEncoding) throws -> Any? {
    let innermost = count - 1
    // Not through an array inside the element: a `Set`, or a `Dictionary` whose keys are not strings or integers,
    // encodes in its hash order, which the element a reader decodes need not share. Such a list is written whole.
    guard !ListPath.hasIndex(codingPath, dropping: self[innermost].depth) else { return nil }
    if self[innermost].lists == nil {
      self[innermost].lists = try self[innermost].replaced?.lists(finder: finder) ?? [:]
    }
    return self[innermost].lists?[ListPath.json(codingPath, dropping: self[innermost].depth)]
  }
}

/// The element a changed element replaces: the lists inside the changed one are the changes from its lists.
protocol ReplacedLists {
  /// The lists in the element that are not inside another list, by their coding paths from it.
  func lists(finder: ListEncoding) throws -> [[UInt8]: Any]
}

/// The element with `id` in a list, the base of a list form, if it has one.
///
/// Holds the list's elements, not the list: small enough for an existential's inline buffer with an id of a word or
/// two, so that making one for each changed element allocates nothing.
struct ReplacedElement<Element: Identifiable>: ReplacedLists {
  let elements: ElementTrie<Element>
  let id: Element.ID

  init(list: IdentifiedList<Element>, id: Element.ID) {
    elements = list.elements
    self.id = id
  }

  func lists(finder: ListEncoding) throws -> [[UInt8]: Any] {
    guard let element = elements[id] else { return [:] }
    // Found by encoding it: a reader's type that is not `Encodable` cannot find them.
    guard let encodable = element as? any Encodable else { throw NotEncodable(type: "\(Element.self)") }
    return try finder.lists(in: encodable)
  }

  struct NotEncodable: Error, CustomStringConvertible {
    let type: String
    var description: String {
      "the changes of a list inside a changed \(type) are read against the element it replaces, which needs \(type) to be Encodable"
    }
  }
}

/// The elements of a list written whole, in order, and the JSON written for each (``ListEncoding``): the JSON of
/// the elements one after another, separated by commas, element `i`'s ending at `ends[i]`.
final class ElementJSON<Element: Identifiable> {
  /// The list written.
  let list: IdentifiedList<Element>
  /// The elements, until a list written whole in the same order takes them (``takeElements()``).
  private(set) var elements: [Element]
  let ends: [Int]
  let json: [UInt8]
  /// Per element, an index into `innerPaths`: the paths in `"l"` of the lists inside it, after its own path; empty if
  /// no element holds a list.
  let inner: [Int]
  let innerPaths: [[[UInt8]]]
  /// Each id's position, made on first use; handed on to the next list written whole in the same order.
  private(set) var positions: [Element.ID: Int]?
  /// The JSON of the list's ids, separated by commas, once written; a list written in the order of the one before it
  /// takes that one's (``ListEncoding``).
  var idsJSON: [UInt8]?

  init(
    list: IdentifiedList<Element>, elements: [Element], ends: [Int], json: [UInt8], inner: [Int],
    innerPaths: [[[UInt8]]], positions: [Element.ID: Int]?
  ) {
    (self.list, self.elements, self.ends, self.json) = (list, elements, ends, json)
    (self.inner, self.innerPaths, self.positions) = (inner, innerPaths, positions)
  }

  /// Hands ``elements`` over to the list written next in the same order, which changes them in place; this JSON is
  /// not used for a list written whole after that.
  func takeElements() -> [Element] {
    var taken: [Element] = []
    swap(&taken, &elements)
    return taken
  }

  /// Where the JSON of element `index` starts.
  func start(_ index: Int) -> Int { index == 0 ? 0 : ends[index - 1] + 1 }

  /// The position of the element with `id`.
  func position(of id: Element.ID) -> Int? {
    if positions == nil {
      var made = [Element.ID: Int](minimumCapacity: elements.count)
      for index in elements.indices { made[elements[index].id] = index }
      positions = made
    }
    return positions?[id]
  }
}

/// A list's JSON while ``ListEncoding`` writes it whole: the next ``ElementJSON`` of its path.
struct WholeJSON<Element: Identifiable> {
  let path: [UInt8]
  let count: Int
  var elements: [Element] = []
  var ends: [Int] = []
  var json: [UInt8] = []
  var inner: [Int] = []
  var innerPaths: [[[UInt8]]] = [[]]
  var innerIndex: [[[UInt8]]: Int] = [:]
  /// Whether every element was encoded by the session's encoder: only then is the JSON kept.
  var complete = true

  init(path: [UInt8], count: Int) {
    (self.path, self.count) = (path, count)
    ends.reserveCapacity(count)
  }

  /// Adds the JSON of the next element.
  mutating func append(_ bytes: ArraySlice<UInt8>) {
    if !ends.isEmpty { json.append(UInt8(ascii: ",")) }
    json.append(contentsOf: bytes)
    ends.append(json.count)
  }

  /// Adds the JSON of the next elements, separated by commas, taken from an ``ElementJSON``'s `json` (`run`), where
  /// they end at `runEnds`.
  mutating func appendRun(_ run: ArraySlice<UInt8>, ends runEnds: ArraySlice<Int>) {
    if !ends.isEmpty { json.append(UInt8(ascii: ",")) }
    let shift = json.count - run.startIndex
    json.append(contentsOf: run)
    for end in runEnds { ends.append(end + shift) }
  }

  /// Adds the JSON of `known`'s elements `start..<end`, written into `all` at once.
  mutating func appendRun(
    of known: ElementJSON<Element>, from start: Int, upTo end: Int, to all: JSONStreamEncoder.DirectContainer
  ) throws {
    let run = known.json[known.start(start)..<known.ends[end - 1]]
    try all.appendElementsJSON(run, count: end - start)
    appendRun(run, ends: known.ends[start..<end])
  }

  /// Notes that the element at `position` holds lists, at `set` after its own path.
  mutating func noteInner(_ set: [[UInt8]], at position: Int) {
    if inner.isEmpty { inner = Array(repeating: 0, count: count) }
    if let index = innerIndex[set] {
      inner[position] = index
    } else {
      innerIndex[set] = innerPaths.count
      inner[position] = innerPaths.count
      innerPaths.append(set)
    }
  }

  /// The path of the element at `position`, without its closing bracket: `["items","~all",position`.
  func elementPath(_ position: Int) -> [UInt8] {
    var bytes = Array(path.dropLast())
    if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
    bytes.append(contentsOf: #""~all","#.utf8)
    JSONText.append(position, to: &bytes)
    return bytes
  }
}

/// What a session's reader knows of the lists of the line it decodes: set by the line (``SessionFormat/LineDecoding``)
/// in the decoder's user info, read by ``IdentifiedList``'s `init(from:)`.
///
/// `@unchecked Sendable`: user info holds `Sendable` values; one decoder uses it, on the thread that decodes, and
/// nothing else sees it.
final class ListDecoding: @unchecked Sendable {
  static let key = CodingUserInfoKey(rawValue: "DispatchStore.ListDecoding")!

  /// Per store, its latest record line decoded and that line's lists: the base of the store's next line.
  var latest: [String: (index: Int, lists: LineLists)] = [:]
  /// The line being decoded: how many keys of a coding path lead to its model, where its list forms are, and the
  /// lists of its base.
  private var modelDepth = 0
  private var paths: Set<[UInt8]> = []
  private var base = LineLists.none
  private var found: [[UInt8]: Any] = [:]
  /// The elements of list forms being decoded, innermost last (``ElementScope``).
  private var scopes: [ElementScope] = []
  /// Finds the lists in the elements that changed ones replace.
  private lazy var finder = ListEncoding()

  /// With `keepingEach`, the lists of every record line decoded, by record index; otherwise empty.
  private(set) var kept: [Int: LineLists] = [:]
  private let keepingEach: Bool
  /// The base the file's index found for a record (`"z"` right after the store), by record index: a line's `"z"`
  /// must be that one.
  let indexedBase: (Int) -> Int?

  init(
    latest: [String: (index: Int, lists: LineLists)] = [:], keepingEach: Bool = false,
    indexedBase: @escaping (Int) -> Int?
  ) {
    self.latest = latest
    self.keepingEach = keepingEach
    self.indexedBase = indexedBase
  }

  /// What a line, decoded whole, does to the bases of the lines after it.
  enum Outcome {
    /// A record line of `store`, holding `lists` (`nil` if none): the base of the store's next line.
    case record(store: String, index: Int, lists: LineLists?)
    /// A cursor move: the next record lines hold their lists whole.
    case moved
    /// Any other line.
    case unchanged
  }

  /// Applies what a line decoded whole does to the bases of the lines after it.
  func decoded(_ outcome: Outcome) {
    switch outcome {
    case .record(let store, let index, let lists):
      latest[store] = lists.map { (index, $0) }
      if keepingEach, let lists { kept[index] = lists }
    case .moved:
      latest.removeAll()
    case .unchanged:
      break
    }
  }

  /// Starts decoding a record line's model.
  func begin(modelDepth: Int, paths: [[ListPath.Component]], base: LineLists) {
    self.modelDepth = modelDepth
    self.paths = Set(paths.map(ListPath.json))
    self.base = base
    found = [:]
    scopes = []
  }

  /// Ends the model begun; returns the lists it held.
  func end() -> LineLists {
    defer {
      paths = []
      base = .none
      found = [:]
    }
    return LineLists(lists: found)
  }

  /// Decodes the list at `decoder`'s coding path if the line holds a list form there; `nil` to decode a plain array.
  func decode<Element: Identifiable & Decodable>(
    _: IdentifiedList<Element>.Type, from decoder: any Decoder
  ) throws -> IdentifiedList<Element>? {
    guard !paths.isEmpty, decoder.codingPath.count >= modelDepth else { return nil }
    let path = ListPath.json(decoder.codingPath, dropping: modelDepth)
    guard paths.contains(path) else { return nil }
    let container = try decoder.container(keyedBy: ListFormKey.self)
    let depth = decoder.codingPath.count
    let list: IdentifiedList<Element>
    if container.contains(.all) {
      // The elements carry their ids; "~ids" is for readers without the types (the inspector), and must agree.
      list = try within(ElementScope(depth: depth + 2)) {
        try container.decode(IdentifiedList<Element>.self, forKey: .all)
      }
      if let idType = Element.ID.self as? any Decodable.Type {
        var ids: any UnkeyedDecodingContainer = try container.nestedUnkeyedContainer(forKey: .ids)
        guard try Self.ids(idType, of: Element.self, &ids, match: list.order) else {
          throw DecodingError.dataCorruptedError(
            forKey: ListFormKey.ids, in: container, debugDescription: "The ids of a list are not its elements' ids.")
        }
      }
    } else {
      let previous =
        scopes.isEmpty
        ? base.lists[path] as? IdentifiedList<Element>
        : try scopes.replacedList(at: decoder.codingPath, finder: finder) as? IdentifiedList<Element>
      guard let previous else {
        throw DecodingError.dataCorruptedError(
          forKey: ListFormKey.set, in: container,
          debugDescription: scopes.isEmpty
            ? "The changes of a list have no list of this type at the same path in the base record."
            : "The changes of a list have no list of this type at the same path in the element its element replaces.")
      }
      var changed = previous
      do {
        try changed.apply(try changes(replacing: previous, depth: depth, in: container))
      } catch let mismatch as ListChangesMismatch {
        throw DecodingError.dataCorruptedError(
          forKey: ListFormKey.order, in: container,
          debugDescription: "The changes of a list do not fit its base: \(mismatch.description).")
      }
      list = changed
    }
    if scopes.isEmpty { found[path] = list }
    return list
  }

  /// Runs `body`, which decodes the element of `scope`.
  private func within<Result>(_ scope: ElementScope, _ body: () throws -> Result) rethrows -> Result {
    scopes.append(scope)
    defer { scopes.removeLast() }
    return try body()
  }

  /// The changes in `container` from `previous`, the list at the coding path of length `depth`.
  private func changes<Element: Identifiable & Decodable>(
    replacing previous: IdentifiedList<Element>, depth: Int, in container: KeyedDecodingContainer<ListFormKey>
  ) throws -> ListChanges<Element> {
    var changes = ListChanges<Element>()
    let idType = Element.ID.self as? any Decodable.Type
    if container.contains(.set) {
      var set = try container.nestedUnkeyedContainer(forKey: .set)
      while !set.isAtEnd {
        var pair: any UnkeyedDecodingContainer = try set.nestedUnkeyedContainer()
        // The id, for readers without the types (the inspector): it must be the element's.
        let id: Element.ID?
        if let idType {
          id = try Self.id(idType, of: Element.self, &pair)
        } else {
          _ = try pair.decode(Skipped.self)
          id = nil
        }
        // Lists inside it are the changes from the element it replaces.
        let scope = ElementScope(depth: depth + 3, replaced: id.map { ReplacedElement(list: previous, id: $0) })
        let element = try within(scope) { try pair.decode(Element.self) }
        guard id == nil || id == element.id else {
          throw DecodingError.dataCorruptedError(
            forKey: ListFormKey.set, in: container, debugDescription: "A changed element's id is not the one given.")
        }
        changes.updated.append(element)
      }
    }
    guard container.contains(.remove) || container.contains(.order) else { return changes }
    guard let idType else {
      throw DecodingError.dataCorruptedError(
        forKey: ListFormKey.remove, in: container,
        debugDescription: "The list's ids (\(Element.ID.self)) are not Decodable, so its removals cannot be read.")
    }
    func ids(_ container: inout any UnkeyedDecodingContainer) throws -> [Element.ID] {
      try Self.ids(idType, of: Element.self, &container)
    }
    if container.contains(.remove) {
      var remove: any UnkeyedDecodingContainer = try container.nestedUnkeyedContainer(forKey: .remove)
      changes.removed = try ids(&remove)
    }
    if container.contains(.order) {
      var order = try container.nestedUnkeyedContainer(forKey: .order)
      while !order.isAtEnd {
        var entry = try order.nestedUnkeyedContainer()
        let position = try entry.decode(Int.self)
        let removing = try entry.decode(Int.self)
        var added: any UnkeyedDecodingContainer = try entry.nestedUnkeyedContainer()
        changes.splices.append(OrderSplice(position: position, removing: removing, ids: try ids(&added)))
      }
    }
    return changes
  }

  /// The ids left in `container`, decoded as `ID`, which is `Element.ID`.
  private static func ids<ID: Decodable, Element: Identifiable>(
    _: ID.Type, of _: Element.Type, _ container: inout any UnkeyedDecodingContainer
  ) throws -> [Element.ID] {
    var ids: [Element.ID] = []
    while !container.isAtEnd { ids.append(try container.decode(ID.self) as! Element.ID) }
    return ids
  }

  /// Whether the ids left in `container`, decoded as `ID` (which is `Element.ID`), are `order`'s, one by one.
  private static func ids<ID: Decodable, Element: Identifiable>(
    _: ID.Type, of _: Element.Type, _ container: inout any UnkeyedDecodingContainer, match order: OrderTree<Element.ID>
  ) throws -> Bool {
    // Compared as they are read: no array of ids is built (appending, in code not specialised for the element type,
    // looks up the array's type for each id).
    var next = order.makeIterator()
    while !container.isAtEnd {
      guard let id = next.next(), try container.decode(ID.self) as! Element.ID == id else { return false }
    }
    return next.next() == nil
  }

  /// The next id in `container`, decoded as `ID`, which is `Element.ID`.
  private static func id<ID: Decodable, Element: Identifiable>(
    _: ID.Type, of _: Element.Type, _ container: inout any UnkeyedDecodingContainer
  ) throws -> Element.ID {
    try container.decode(ID.self) as! Element.ID
  }

  /// A value read past.
  private struct Skipped: Decodable {
    init(from decoder: any Decoder) {}
  }
}
