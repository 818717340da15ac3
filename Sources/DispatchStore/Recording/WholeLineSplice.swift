import Foundation

/// Checks a record line that holds its store's lists whole by its bytes, without encoding the lists: against the
/// store's previous such line, the store's change lines between the two, and the re-run's own change since the last
/// of them (proposal 0024).
///
/// Each list of the line must be the previous whole line's, its ids the same bytes in the same order, with the
/// elements that the change lines and the re-run's change set (`"~set"`) in place of the ones they replace; the
/// model's other fields must be the re-run's change line's. The previous whole line and the change lines in between
/// are each compared with their re-run before this line is, by their bytes (a record of the store decoded to be
/// compared ends the chain, and the base: ``invalidate()``), and verify throws the first error in the session's order.
/// So each of those lines is the writer's encoding of the re-run's model (no key spelt otherwise, none twice), and a
/// line that passes here is the encoding of the re-run's model too. A line that does not pass here is compared as any
/// other (``ModelComparison``): this check only ever saves work.
///
/// Used on one thread at a time.
struct WholeLineSplice {
  /// What the re-running thread found for a record line that holds its lists whole.
  struct Input: Sendable {
    /// The store's previous record line of whole lists.
    let start: Int
    /// The store's record lines after it, in order, each resting on the one before (the first on `start`).
    let links: [Link]
    /// The re-run model encoded as a change line resting on the last of `links` (or on `start`) writes it: the
    /// model's bytes, and the paths of its list forms as `"l"` writes them.
    let change: [UInt8]
    let paths: [[UInt8]]
    /// The lists of the re-run model, found without encoding them: the base of the store's next record.
    let lists: LineLists
  }

  /// A record line of changes: its index, and where its model and its `"l"` are in the file.
  struct Link: Sendable {
    let index: Int
    let model: Range<Int>
    let listPaths: Range<Int>
  }

  /// A list held whole in a line: where its elements' JSON and its ids' JSON are in the file, and each id's position
  /// by the hash of its JSON.
  private struct WholeList {
    var elements: [Range<Int>]
    /// The ids' JSON, between the brackets of `"~ids"`, and each id's range within it.
    var ids: Range<Int>
    var idRanges: [Range<Int>]
    var positions: [UInt64: Int]

    /// The position of the element whose id's JSON is `id` in `bytes`, checked against the id's JSON in `file`.
    func position(of id: Range<Int>, in bytes: JSONBytes, file: JSONBytes) -> Int? {
      guard let position = positions[bytes.hash(id)] else { return nil }
      let stored = idRanges[position]
      let start = ids.lowerBound + stored.lowerBound
      return bytes.same(id, as: file, start..<(start + stored.count)) ? position : nil
    }
  }

  /// Where an element's JSON comes from: a change line in the file, or the re-run's change line.
  private struct Piece {
    let inChange: Bool
    let range: Range<Int>
  }

  /// The store's last record line of whole lists compared by its bytes, where its model and its `"l"` are, and what
  /// was found of its lists, by path, as each was first needed.
  private var previous: (index: Int, model: Range<Int>, listPaths: Range<Int>, lists: [[UInt8]: WholeList])?

  /// Starts again from the record line of whole lists `index`, whose model is at `model` and its `"l"` at
  /// `listPaths`: compared another way, it is the base of the next check if it passes by its bytes.
  mutating func restart(at index: Int, model: Range<Int>, listPaths: Range<Int>) {
    previous = (index, model, listPaths, [:])
  }

  /// Forgets the base: a record of the store was decoded to be compared (its bytes were not the re-run's), so the
  /// lists the reader has may not be the bytes' to build on, until the next line of whole lists compared another way.
  mutating func invalidate() {
    previous = nil
  }

  /// Whether the record line `index`, which holds its lists whole, with its model at `model` and its `"l"` at
  /// `listPaths`, is what `input` makes of the previous one; if it is, it becomes the base of the next check.
  mutating func check(_ index: Int, model: Range<Int>, listPaths: Range<Int>, input: Input, in data: Data) -> Bool {
    // The previous line's `"l"` too: its elements hold no list in a form of its own (one it names inside them).
    guard let previous, previous.index == input.start, !input.paths.isEmpty,
      input.paths.allSatisfy(Self.isOutsideLists), data.isListOfPaths(input.paths, in: listPaths),
      data.isListOfPaths(input.paths, in: previous.listPaths),
      input.links.allSatisfy({ data.isListOfPaths(input.paths, in: $0.listPaths) })
    else { return false }
    let lists = data.withUnsafeBytes { file in
      input.change.withUnsafeBytes { change in
        Self.lists(of: model, previous: previous, input: input, file: JSONBytes(file), change: JSONBytes(change))
      }
    }
    guard let lists else { return false }
    self.previous = (index, model, listPaths, lists)
    return true
  }

  /// The lists of the line whose model is at `model`, if it is what `input` makes of `previous`
  /// (``check(_:model:listPaths:input:in:)`` on the bytes).
  private static func lists(
    of model: Range<Int>, previous: (index: Int, model: Range<Int>, listPaths: Range<Int>, lists: [[UInt8]: WholeList]),
    input: Input,
    file: JSONBytes, change: JSONBytes
  ) -> [[UInt8]: WholeList]? {
    // Per list: its form in the re-run's change line, the previous whole line's list, and the elements set since,
    // the last set of each position winning.
    var forms: [(path: [UInt8], form: Range<Int>, list: WholeList, pieces: [Piece], slots: [Int32])] = []
    for path in input.paths {
      guard let components = ListPathComponents(path), let form = change.value(at: components, in: 0..<change.count),
        change.onlySets(form)
      else { return nil }
      // The change lines' forms before the previous list is read: one that moves or removes an element ends the
      // check cheaply.
      var sets: [(inChange: Bool, form: Range<Int>)] = []
      sets.reserveCapacity(input.links.count + 1)
      for link in input.links {
        guard let linkForm = file.value(at: components, in: link.model), file.onlySets(linkForm) else { return nil }
        sets.append((false, linkForm))
      }
      sets.append((true, form))
      guard let list = previous.lists[path] ?? wholeList(at: components, in: previous.model, of: file) else {
        return nil
      }
      var pieces: [Piece] = []
      var slots = [Int32](repeating: -1, count: list.elements.count)
      for (inChange, form) in sets {
        let bytes = inChange ? change : file
        let read = bytes.forEachSetPair(in: form) { id, element in
          guard let position = list.position(of: id, in: bytes, file: file) else { return false }
          slots[position] = Int32(pieces.count)
          pieces.append(Piece(inChange: inChange, range: element))
          return true
        }
        guard read else { return nil }
      }
      forms.append((path, form, list, pieces, slots))
    }
    // The line: the change line's model with each list form replaced by the whole list, compared as it is made.
    forms.sort { $0.form.lowerBound < $1.form.lowerBound }
    var compared = Comparison(file: file, at: model.lowerBound, end: model.upperBound)
    var cursor = 0
    var lists: [[UInt8]: WholeList] = [:]
    for (path, form, list, pieces, slots) in forms {
      guard form.lowerBound >= cursor, compared.expect(change, cursor..<form.lowerBound),
        compared.expect(#"{"~all":["#)
      else { return nil }
      var elements: [Range<Int>] = []
      elements.reserveCapacity(list.elements.count)
      var position = 0
      while position < list.elements.count {
        if position > 0, !compared.expect(",") { return nil }
        let slot = Int(slots[position])
        if slot >= 0 {
          let start = compared.at
          guard compared.expect(pieces[slot].inChange ? change : file, pieces[slot].range) else { return nil }
          elements.append(start..<compared.at)
          position += 1
          continue
        }
        // A run of elements the previous line holds, compared at once: their JSON is one run of its bytes.
        var end = position + 1
        while end < list.elements.count, slots[end] < 0 { end += 1 }
        let shift = compared.at - list.elements[position].lowerBound
        guard compared.expect(file, list.elements[position].lowerBound..<list.elements[end - 1].upperBound) else {
          return nil
        }
        for element in list.elements[position..<end] {
          elements.append((element.lowerBound + shift)..<(element.upperBound + shift))
        }
        position = end
      }
      guard compared.expect(#"],"~ids":["#) else { return nil }
      let ids = compared.at
      guard compared.expect(file, list.ids), compared.expect("]}") else { return nil }
      lists[path] = WholeList(
        elements: elements, ids: ids..<(ids + list.ids.count), idRanges: list.idRanges, positions: list.positions)
      cursor = form.upperBound
    }
    guard compared.expect(change, cursor..<change.count), compared.at == compared.end else { return nil }
    return lists
  }

  /// The list held whole at `components` in the model at `model`, if it is in the form a writer writes
  /// (`{"~all":[…],"~ids":[…]}`), with as many ids as elements and no two ids' JSON of the same hash.
  private static func wholeList(at components: ListPathComponents, in model: Range<Int>, of file: JSONBytes)
    -> WholeList?
  {
    guard let form = file.value(at: components, in: model) else { return nil }
    // Its two members, `"~all"` then `"~ids"`.
    var values: [Range<Int>] = []
    let readForm = file.forEachMember(in: form) { key, value in
      guard values.count < 2, file.equals(key, values.isEmpty ? #""~all""# : #""~ids""#) else { return false }
      values.append(value)
      return true
    }
    guard readForm, values.count == 2 else { return nil }
    var elements: [Range<Int>] = []
    var idRanges: [Range<Int>] = []
    let ids = values[1]
    guard ids.count >= 2 else { return nil }
    let inside = (ids.lowerBound + 1)..<(ids.upperBound - 1)
    let readElements = file.forEachElement(in: values[0]) { element in
      elements.append(element)
      return true
    }
    let readIDs = file.forEachElement(in: ids) { id in
      idRanges.append((id.lowerBound - inside.lowerBound)..<(id.upperBound - inside.lowerBound))
      return true
    }
    guard readElements, readIDs, elements.count == idRanges.count else { return nil }
    var positions: [UInt64: Int] = [:]
    positions.reserveCapacity(idRanges.count)
    for (position, range) in idRanges.enumerated() {
      let id = (range.lowerBound + inside.lowerBound)..<(range.upperBound + inside.lowerBound)
      guard positions.updateValue(position, forKey: file.hash(id)) == nil else { return nil }
    }
    return WholeList(elements: elements, ids: inside, idRanges: idRanges, positions: positions)
  }

  /// Whether `path` (an entry of a line's `"l"`) is outside every list form: none of its keys is a form's (`"~…"`).
  private static func isOutsideLists(_ path: [UInt8]) -> Bool {
    !path.indices.dropLast().contains { path[$0] == UInt8(ascii: "\"") && path[$0 + 1] == UInt8(ascii: "~") }
  }
}

/// The keys and indices of a list's path, read from a line's `"l"` entry: a key as its JSON string's bytes.
private struct ListPathComponents {
  enum Component {
    case key([UInt8])
    case index(Int)
  }

  let components: [Component]

  /// `nil` if `path` is not a JSON array of strings and integers.
  init?(_ path: [UInt8]) {
    let read: [Component]? = path.withUnsafeBytes { raw in
      let bytes = JSONBytes(raw)
      var components: [Component] = []
      let ok = bytes.forEachElement(in: 0..<bytes.count) { range in
        if bytes[range.lowerBound] == UInt8(ascii: "\"") {
          components.append(.key(Array(raw[range])))
        } else if let index = bytes.integer(range) {
          components.append(.index(index))
        } else {
          return false
        }
        return true
      }
      return ok ? components : nil
    }
    guard let read else { return nil }
    components = read
  }
}

extension JSONBytes {
  /// The range of the value at `path` in the JSON value at `range`.
  fileprivate func value(at path: ListPathComponents, in range: Range<Int>) -> Range<Int>? {
    var current = range
    for component in path.components {
      switch component {
      case .key(let key):
        var found: Range<Int>?
        key.withUnsafeBytes { key in
          _ = forEachMember(in: current) { name, value in
            if equals(name, JSONBytes(key)) { found = value }
            return found == nil
          }
        }
        guard let found else { return nil }
        current = found
      case .index(let index):
        var found: Range<Int>?
        var seen = 0
        guard
          forEachElement(
            in: current,
            { element in
              if seen == index { found = element }
              seen += 1
              return found == nil
            }) || found != nil, let found
        else { return nil }
        current = found
      }
    }
    return current
  }
}

/// A line's bytes compared with what they must be, piece after piece, from `at` to `end` in `file`.
private struct Comparison {
  let file: JSONBytes
  private(set) var at: Int
  let end: Int

  init(file: JSONBytes, at: Int, end: Int) {
    (self.file, self.at, self.end) = (file, at, end)
  }

  /// Whether the next bytes are `bytes[range]`; moves past them if they are.
  mutating func expect(_ bytes: JSONBytes, _ range: Range<Int>) -> Bool {
    guard range.count <= end - at, bytes.same(range, as: file, at..<(at + range.count)) else { return false }
    at += range.count
    return true
  }

  /// Whether the next bytes are `text`'s; moves past them if they are.
  mutating func expect(_ text: StaticString) -> Bool {
    text.withUTF8Buffer { utf8 in expect(JSONBytes(UnsafeRawBufferPointer(utf8)), 0..<utf8.count) }
  }
}

extension JSONBytes {
  /// Whether the list form in `range` only sets elements, by its first and last bytes: `{}`, or `{"~set":[…]}` as a
  /// writer writes it (a form that removes or moves an element starts with another key).
  fileprivate func onlySets(_ range: Range<Int>) -> Bool {
    equals(range, "{}")
      || (range.count >= 11 && equals(range.prefix(9), #"{"~set":["#)
        && self[range.upperBound - 2] == UInt8(ascii: "]") && self[range.upperBound - 1] == UInt8(ascii: "}"))
  }

  /// Calls `body` with the ranges of each pair's id and element in the form in `range`, which only sets elements
  /// (``onlySets(_:)``), until it returns `false`; returns whether every pair was read and `body` returned `true` for
  /// each.
  fileprivate func forEachSetPair(in range: Range<Int>, _ body: (Range<Int>, Range<Int>) -> Bool) -> Bool {
    if equals(range, "{}") { return true }
    guard onlySets(range) else { return false }
    // The pairs' closing bracket.
    let last = range.upperBound - 2
    var position = range.lowerBound + 9
    guard position < last else { return true }
    while true {
      guard self[position] == UInt8(ascii: "["), let idEnd = valueEnd(from: position + 1, limit: last), idEnd < last,
        self[idEnd] == UInt8(ascii: ","), let elementEnd = valueEnd(from: idEnd + 1, limit: last), elementEnd < last,
        self[elementEnd] == UInt8(ascii: "]"), body((position + 1)..<idEnd, (idEnd + 1)..<elementEnd)
      else { return false }
      let next = elementEnd + 1
      if next == last { return true }
      guard self[next] == UInt8(ascii: ","), next + 1 < last else { return false }
      position = next + 1
    }
  }
}
