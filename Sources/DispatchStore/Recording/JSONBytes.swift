import Foundation

/// Reading JSON text where it lies, for ``RecordedElements``: the members of an object and the elements of an array,
/// as byte ranges, each value checked to be whole (strings closed, brackets matched) but not decoded.
enum JSONBytes {
  /// Reads JSON text once, front to back, the values it is not after skipped whole (``valueEnd(_:from:end:)``).
  struct Reader {
    let bytes: UnsafeRawBufferPointer
    var position: Int
    let end: Int

    /// Whether only whitespace is left.
    var atEnd: Bool { JSONBytes.skipSpace(bytes, from: position, end: end) == end }

    private mutating func skipSpace() { position = JSONBytes.skipSpace(bytes, from: position, end: end) }

    /// Reads `byte`, after any whitespace; `false` if it is not next.
    private mutating func read(_ byte: UInt8) -> Bool {
      skipSpace()
      guard position < end, bytes[position] == byte else { return false }
      position += 1
      return true
    }

    /// Reads a value whole; its bytes, or `nil`.
    mutating func skipValue() -> Range<Int>? {
      skipSpace()
      guard let after = JSONBytes.valueEnd(bytes, from: position, end: end) else { return nil }
      defer { position = after }
      return position..<after
    }

    /// Reads an object or array up to its closing bracket, `entry` reading each entry (for an object, from its
    /// value, its key's bytes between the quotes given); `false` if the text is not one, or `entry` returned `false`.
    mutating func container(object: Bool, _ entry: (inout Reader, Range<Int>?) -> Bool) -> Bool {
      guard read(object ? UInt8(ascii: "{") : UInt8(ascii: "[")) else { return false }
      let close = object ? UInt8(ascii: "}") : UInt8(ascii: "]")
      skipSpace()
      if position < end, bytes[position] == close {
        position += 1
        return true
      }
      while true {
        var key: Range<Int>?
        if object {
          skipSpace()
          guard position < end, bytes[position] == UInt8(ascii: "\""),
            let after = JSONBytes.stringEnd(bytes, from: position, end: end)
          else { return false }
          key = (position + 1)..<(after - 1)
          position = after
          guard read(UInt8(ascii: ":")) else { return false }
        }
        skipSpace()
        guard entry(&self, key) else { return false }
        if read(close) { return true }
        guard read(UInt8(ascii: ",")) else { return false }
      }
    }

    /// Reads the value at the list path `components` of `path`'s JSON with `then`, every other value skipped; `false`
    /// if a key on the way is missing or given twice, or an index is past its array's end.
    mutating func value(
      at components: ArraySlice<Range<Int>>, path: UnsafeRawBufferPointer, then: (inout Reader) -> Bool
    ) -> Bool {
      guard let component = components.first else { return then(&self) }
      let rest = components.dropFirst()
      var found = false
      let bytes = bytes
      if path[component.lowerBound] == UInt8(ascii: "\"") {
        // The key as the path spells it, between its quotes: both written by one encoder.
        let key = UnsafeRawBufferPointer(rebasing: path[(component.lowerBound + 1)..<(component.upperBound - 1)])
        let fits = container(object: true) { reader, name in
          guard let name, JSONBytes.equal(UnsafeRawBufferPointer(rebasing: bytes[name]), key) else {
            return reader.skipValue() != nil
          }
          guard !found else { return false }
          found = true
          return reader.value(at: rest, path: path, then: then)
        }
        return fits && found
      }
      guard let wanted = Int(String(decoding: UnsafeRawBufferPointer(rebasing: path[component]), as: UTF8.self))
      else { return false }
      var index = 0
      let fits = container(object: false) { reader, _ in
        defer { index += 1 }
        guard index == wanted else { return reader.skipValue() != nil }
        found = true
        return reader.value(at: rest, path: path, then: then)
      }
      return fits && found
    }

    /// Reads the pairs of the common change line's model into `pairs`, without walking each container twice.
    ///
    /// The model holds one member, a list at a path of keys (`["a","b"]`), in a form that sets one or more elements,
    /// as a writer writes it: `{"a":{"b":{"~set":[[id,element]…]}}}`, no whitespace. `false` for any other model,
    /// read then by ``value(at:path:then:)``.
    mutating func onlySetPairs(
      at path: UnsafeRawBufferPointer, into pairs: inout [(id: Range<Int>, element: Range<Int>)]
    ) -> Bool {
      // `{"a":{"b":` from the path's `["a","b"]`: a key per `"…"`, each opening an object.
      // Each byte of the path reads at most two of the model's: the bounds checked once.
      guard path.count > 4, path[0] == UInt8(ascii: "["), path[path.count - 1] == UInt8(ascii: "]"),
        end - position > 2 * path.count + 12
      else { return false }
      var depth = 0
      var inString = false
      var at = position
      for offset in 1..<(path.count - 1) {
        let byte = path[offset]
        if byte == UInt8(ascii: "\"") {
          inString.toggle()
          guard bytes[at] == (inString ? UInt8(ascii: "{") : byte) else { return false }
          if inString {
            depth += 1
            at += 1
            guard bytes[at] == byte else { return false }
          }
          at += 1
          if !inString {
            guard bytes[at] == UInt8(ascii: ":") else { return false }
            at += 1
          }
        } else if inString {
          guard byte != UInt8(ascii: "\\"), bytes[at] == byte else { return false }
          at += 1
        } else {
          // Between keys: a comma; an index is not read here.
          guard byte == UInt8(ascii: ",") else { return false }
        }
      }
      let opening: StaticString = #"{"~set":["#
      let count = opening.utf8CodeUnitCount
      guard !inString, depth > 0, end - at > count + depth + 2,
        JSONBytes.equal(
          UnsafeRawBufferPointer(rebasing: bytes[at..<(at + count)]),
          UnsafeRawBufferPointer(start: opening.utf8Start, count: count))
      else { return false }
      at += count
      while true {
        guard at < end, bytes[at] == UInt8(ascii: "["), let idEnd = JSONBytes.valueEnd(bytes, from: at + 1, end: end),
          idEnd < end, bytes[idEnd] == UInt8(ascii: ","),
          let elementEnd = JSONBytes.valueEnd(bytes, from: idEnd + 1, end: end), elementEnd < end,
          bytes[elementEnd] == UInt8(ascii: "]")
        else { return false }
        pairs.append(((at + 1)..<idEnd, (idEnd + 1)..<elementEnd))
        at = elementEnd + 1
        guard at < end else { return false }
        if bytes[at] == UInt8(ascii: "]") { break }
        guard bytes[at] == UInt8(ascii: ",") else { return false }
        at += 1
      }
      // `]` then a `}` for the form and one for each key's object.
      at += 1
      guard end - at == depth + 1 else { return false }
      while at < end {
        guard bytes[at] == UInt8(ascii: "}") else { return false }
        at += 1
      }
      position = at
      return true
    }

    /// Reads a list form that only sets elements (`{"~set":[[id,element]…]}`, or `{}`) into `pairs`; `false` for any
    /// other form.
    mutating func setPairs(into pairs: inout [(id: Range<Int>, element: Range<Int>)]) -> Bool {
      var sets = 0
      let bytes = bytes
      return container(object: true) { reader, name in
        let set: StaticString = "~set"
        guard let name, sets == 0,
          JSONBytes.equal(
            UnsafeRawBufferPointer(rebasing: bytes[name]), UnsafeRawBufferPointer(start: set.utf8Start, count: 4))
        else {
          return false
        }
        sets += 1
        return reader.container(object: false) { reader, _ in
          guard reader.read(UInt8(ascii: "[")), let id = reader.skipValue(), reader.read(UInt8(ascii: ",")),
            let element = reader.skipValue(), reader.read(UInt8(ascii: "]"))
          else { return false }
          pairs.append((id, element))
          return true
        }
      }
    }
  }

  /// The elements of the array that is all of `range` (whitespace around it allowed); `nil` if it is not an array.
  static func elements(of bytes: UnsafeRawBufferPointer, in range: Range<Int>) -> [Range<Int>]? {
    var reader = Reader(bytes: bytes, position: range.lowerBound, end: range.upperBound)
    var elements: [Range<Int>] = []
    let fits = reader.container(object: false) { reader, _ in
      guard let element = reader.skipValue() else { return false }
      elements.append(element)
      return true
    }
    return fits && reader.atEnd ? elements : nil
  }

  /// Whether `lhs` and `rhs` hold the same bytes.
  static func equal(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
    lhs.count == rhs.count && (lhs.count == 0 || memcmp(lhs.baseAddress!, rhs.baseAddress!, lhs.count) == 0)
  }

  static func skipSpace(_ bytes: UnsafeRawBufferPointer, from start: Int, end: Int) -> Int {
    var position = start
    while position < end {
      switch bytes[position] {
      case 0x20, 0x09, 0x0A, 0x0D: position += 1
      default: return position
      }
    }
    return position
  }

  /// Past the string whose opening quote is at `start`; `nil` if it does not close before `end`.
  static func stringEnd(_ bytes: UnsafeRawBufferPointer, from start: Int, end: Int) -> Int? {
    var position = start + 1
    while position < end {
      switch bytes[position] {
      case UInt8(ascii: "\""): return position + 1
      case UInt8(ascii: "\\"): position += 2
      default: position += 1
      }
    }
    return nil
  }

  /// Past the value that starts at `start`: a string, a container whose brackets match, or a number or literal (its
  /// characters checked, not its grammar); `nil` if there is none.
  static func valueEnd(_ bytes: UnsafeRawBufferPointer, from start: Int, end: Int) -> Int? {
    guard start < end else { return nil }
    switch bytes[start] {
    case UInt8(ascii: "\""):
      return stringEnd(bytes, from: start, end: end)
    case UInt8(ascii: "{"), UInt8(ascii: "["):
      // Whether each open container is an array, innermost in the lowest bit: 64 deep at most, which a list's
      // element nests far less than (a deeper one is not copied, but encoded).
      var arrays: UInt64 = 0
      var depth = 0
      var position = start
      while position < end {
        switch bytes[position] {
        case UInt8(ascii: "\""):
          guard let after = stringEnd(bytes, from: position, end: end) else { return nil }
          position = after
          continue
        case UInt8(ascii: "{"), UInt8(ascii: "["):
          guard depth < 64 else { return nil }
          arrays = arrays << 1 | (bytes[position] == UInt8(ascii: "[") ? 1 : 0)
          depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
          guard depth > 0, (arrays & 1 == 1) == (bytes[position] == UInt8(ascii: "]")) else { return nil }
          arrays >>= 1
          depth -= 1
          if depth == 0 { return position + 1 }
        default: break
        }
        position += 1
      }
      return nil
    default:
      var position = start
      while position < end {
        switch bytes[position] {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
          UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "a")...UInt8(ascii: "u"):
          position += 1
        default:
          return position > start ? position : nil
        }
      }
      return position > start ? position : nil
    }
  }
}
