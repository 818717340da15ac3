import Foundation

/// Encodes `Encodable` values as JSON straight into a byte buffer: the encoder of the session writer and of verify.
///
/// Foundation's `JSONEncoder` builds a tree of boxed values for every value it encodes and then writes the tree,
/// and a writer thread paying that per record falls behind an app that dispatches steadily (proposal 0010 has the
/// measurements). This encoder writes as the value encodes itself and keeps only a stack of the objects
/// and arrays still open, in buffers it reuses from one value to the next:
/// - A container stays open until a container below it in the stack writes again, or its value ends. Writing to
///   one after that, which synthesised conformances never do, is ``Unsupported``, as is `superEncoder`: the value
///   is then encoded with `JSONEncoder` (``encode(_:into:)``).
/// - An object's keys are sorted when it closes, as `JSONEncoder`'s `.sortedKeys` sorts them, so that the bytes of
///   a dictionary do not depend on its hash order.
/// - `Data`, `URL`, `Decimal` and `UUID` are written as `JSONEncoder` writes them by default (base64, the absolute
///   string, a number, the `uuidString`), so that `JSONDecoder` reads them back; non-finite floating-point values
///   throw, as there.
///
/// One per thread: it is a class with state, not `Sendable`.
final class JSONStreamEncoder {
  /// A use of the `Encoder` protocol this encoder does not follow: the value is encoded with `JSONEncoder` instead.
  struct Unsupported: Error {}

  // The state is only reached from this file, by the one thread using the encoder, and never by two accesses at
  // once: dynamic exclusivity checks would cost more than the writing.

  /// What was written so far for the value being encoded.
  @exclusivity(unchecked) fileprivate var bytes: [UInt8] = []
  /// The objects and arrays open, outermost first.
  @exclusivity(unchecked) fileprivate var frames: [Frame] = []
  /// The keys and offsets of the entries of the open objects, in the order written: each object's from its frame's
  /// `firstEntry`.
  @exclusivity(unchecked) fileprivate var entries: [Entry] = []
  @exclusivity(unchecked) private var nextFrameID = 0
  /// The value being written: the frames below it belong to the values that contain it.
  @exclusivity(unchecked) fileprivate var slot = Slot(depth: 0)
  /// Whether the value used the `Encoder` protocol in a way this encoder does not follow, where it could not throw
  /// (`superEncoder`, a container it could not open): the value is then encoded again with `JSONEncoder`.
  @exclusivity(unchecked) fileprivate var unsupported = false
  /// How deeply the last value encoded nests objects and arrays (0 for a number or a string): JSON decoders refuse
  /// values past a depth (`JSONDecoder`: 512), so a writer checks it.
  @exclusivity(unchecked) private(set) var lastDepth = 0
  /// The keys of the last object sorted, in the order written, and the order of their positions that sorts them:
  /// the objects of one type write the same keys in the same order, and are sorted alike.
  @exclusivity(unchecked) private var lastSorted: (keys: [String], order: [Int]) = ([], [])
  /// The bytes of the object being sorted, copied out to be written back in key order.
  @exclusivity(unchecked) private var sortScratch: [UInt8] = []
  /// The JSON of keys written before (quotes and colon included), by their object's depth and their place in it:
  /// the objects of one type write the same keys in the same order, and each key's JSON is then copied, not escaped
  /// again.
  @exclusivity(unchecked) private var keyJSON = [(name: String, json: [UInt8])](
    repeating: ("", []), count: JSONStreamEncoder.keySlots)
  private static let keySlots = 64
  /// The lists of the record line being encoded, to write ``IdentifiedList``s in their session forms; `nil` to write
  /// them as plain arrays (``ListEncoding``).
  var lists: ListEncoding?
  private lazy var foundation: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
  }()

  fileprivate struct Frame {
    let id: Int
    let isObject: Bool
    var count = 0
    /// The first of this object's entries in `entries`.
    let firstEntry: Int
    /// Whether the keys came in ascending order so far: then closing moves nothing.
    var ascending = true
    /// The key or index of the value being written into this container, for `codingPath`; set only when user code
    /// runs for it (a nested value or container).
    var key: (any CodingKey)?
  }

  fileprivate struct Entry {
    let key: String
    /// Where the entry's key begins.
    let offset: Int
  }

  /// A value being written, and what it has written.
  fileprivate struct Slot {
    /// The number of frames open before the value began.
    let depth: Int
    var state = State.empty

    enum State {
      case empty
      /// A container, whose frame is at `depth`, with this identifier.
      case container(id: Int, isObject: Bool)
      /// A single value.
      case single
    }
  }

  /// Appends the JSON of `value` to `output`; with `JSONEncoder` (`.sortedKeys`) for a value that encodes in a way
  /// this encoder does not follow.
  /// - Throws: An `EncodingError`, or the value's own error.
  func encode<T: Encodable>(_ value: T, into output: inout [UInt8]) throws {
    do {
      try encodeDirectly(value, into: &output)
    } catch is Unsupported {
      // `JSONEncoder` writes lists as plain arrays.
      lists?.reset()
      let json = try foundation.encode(value)
      lastDepth = Self.depth(of: json)
      output.append(contentsOf: json)
    }
  }

  /// How deeply `json` nests objects and arrays.
  static func depth(of json: Data) -> Int {
    var depth = 0
    var deepest = 0
    var inString = false
    var escaped = false
    for byte in json {
      if inString {
        if escaped {
          escaped = false
        } else if byte == UInt8(ascii: "\\") {
          escaped = true
        } else if byte == UInt8(ascii: "\"") {
          inString = false
        }
        continue
      }
      switch byte {
      case UInt8(ascii: "\""): inString = true
      case UInt8(ascii: "{"), UInt8(ascii: "["):
        depth += 1
        deepest = max(deepest, depth)
      case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
      default: break
      }
    }
    return deepest
  }

  /// Appends the JSON of `value` to `output`.
  /// - Throws: ``Unsupported``, with `output` unchanged; an `EncodingError`; the value's own error.
  func encodeDirectly<T: Encodable>(_ value: T, into output: inout [UInt8]) throws {
    swap(&bytes, &output)
    let start = bytes.count
    lastDepth = 0
    defer {
      frames.removeAll(keepingCapacity: true)
      entries.removeAll(keepingCapacity: true)
      slot = Slot(depth: 0)
      swap(&bytes, &output)
    }
    do {
      try writeValue(value, topLevel: true)
      if unsupported { throw Unsupported() }
    } catch {
      unsupported = false
      bytes.removeSubrange(start...)
      throw error
    }
  }

  /// What `superEncoder` returns: an encoder whose output is discarded, the value being encoded again with
  /// `JSONEncoder`.
  fileprivate func unsupportedEncoder() -> any Encoder {
    unsupported = true
    return JSONStreamEncoder()
  }

  /// A container for a request that cannot be met: every write to it throws ``Unsupported``.
  fileprivate func deadContainer<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    unsupported = true
    return KeyedEncodingContainer(KeyedContainer(encoder: self, depth: -1, id: -1))
  }

  fileprivate func deadUnkeyedContainer() -> any UnkeyedEncodingContainer {
    unsupported = true
    return UnkeyedContainer(encoder: self, depth: -1, id: -1)
  }

  // MARK: - Values

  /// Writes `value` at the current position: directly if it is a primitive, otherwise by letting it encode itself.
  fileprivate func writeValue<T: Encodable>(_ value: T, topLevel: Bool = false) throws {
    if try writePrimitive(value) { return }
    let outer = slot
    slot = Slot(depth: frames.count)
    defer { slot = outer }
    try value.encode(to: self)
    switch slot.state {
    case .empty:
      if topLevel {
        throw EncodingError.invalidValue(
          value, .init(codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
      }
      // As `JSONEncoder`: a nested value that encodes nothing is an empty object.
      bytes.append(contentsOf: "{}".utf8)
    case .container:
      try close(downTo: slot.depth)
    case .single:
      break
    }
  }

  /// Writes `value` if it is one of the types written without calling its `encode(to:)`; returns whether it was.
  fileprivate func writePrimitive<T>(_ value: T) throws -> Bool {
    // Comparing metatypes is a pointer comparison, where `as?` would be a dynamic cast.
    if T.self == String.self {
      JSONText.append(Self.cast(value, to: String.self), to: &bytes)
    } else if T.self == Int.self {
      write(Self.cast(value, to: Int.self))
    } else if T.self == Double.self {
      try write(Self.cast(value, to: Double.self))
    } else if T.self == Bool.self {
      write(Self.cast(value, to: Bool.self))
    } else if T.self == Data.self {
      JSONText.append(Self.cast(value, to: Data.self).base64EncodedString(), to: &bytes)
    } else if T.self == URL.self {
      JSONText.append(Self.cast(value, to: URL.self).absoluteString, to: &bytes)
    } else if T.self == Decimal.self {
      let decimal = Self.cast(value, to: Decimal.self)
      // Its description, `NaN`, is not JSON: the line would not read back.
      guard !decimal.isNaN else {
        throw EncodingError.invalidValue(
          decimal, .init(codingPath: codingPath, debugDescription: "Unable to encode Decimal.nan in JSON."))
      }
      bytes.append(contentsOf: decimal.description.utf8)
    } else if T.self == UUID.self {
      write(Self.cast(value, to: UUID.self))
    } else {
      return false
    }
    return true
  }

  /// `value` as `type`, which is its type.
  private static func cast<T, U>(_ value: T, to type: U.Type) -> U {
    withUnsafePointer(to: value) { $0.withMemoryRebound(to: U.self, capacity: 1) { $0.pointee } }
  }

  /// Writes `uuid` as `UUID.encode(to:)` does: its `uuidString`, quoted.
  ///
  /// Upper-case hexadecimal digits in groups of 8, 4, 4, 4 and 12, written without formatting a string: elements
  /// are often identified by `UUID`s, and a record writes an id wherever the element or the order changed.
  fileprivate func write(_ uuid: UUID) {
    func digit(_ value: UInt8) -> UInt8 { value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10 }
    // The 38 bytes made on the stack and appended at once: appending each checks the array's capacity.
    var text: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
    withUnsafeMutableBytes(of: &text) { text in
      withUnsafeBytes(of: uuid.uuid) { uuid in
        text[0] = UInt8(ascii: "\"")
        var at = 1
        for index in 0..<16 {
          if index == 4 || index == 6 || index == 8 || index == 10 {
            text[at] = UInt8(ascii: "-")
            at += 1
          }
          text[at] = digit(uuid[index] >> 4)
          text[at + 1] = digit(uuid[index] & 0xF)
          at += 2
        }
        text[at] = UInt8(ascii: "\"")
      }
      bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: text[0..<38]))
    }
  }

  fileprivate func write(_ value: Bool) {
    // Byte by byte: an array literal may be allocated, and a string's UTF-8 view is appended through its iterator.
    if value {
      bytes.append(UInt8(ascii: "t"))
      bytes.append(UInt8(ascii: "r"))
      bytes.append(UInt8(ascii: "u"))
    } else {
      bytes.append(UInt8(ascii: "f"))
      bytes.append(UInt8(ascii: "a"))
      bytes.append(UInt8(ascii: "l"))
      bytes.append(UInt8(ascii: "s"))
    }
    bytes.append(UInt8(ascii: "e"))
  }

  fileprivate func write<Integer: BinaryInteger>(_ value: Integer) {
    JSONText.append(value, to: &bytes)
  }

  fileprivate func write<Float: BinaryFloatingPoint & LosslessStringConvertible>(_ value: Float) throws {
    guard value.isFinite else {
      throw EncodingError.invalidValue(
        value, .init(codingPath: codingPath, debugDescription: "Unable to encode \(value) directly in JSON."))
    }
    bytes.append(contentsOf: value.description.utf8)
  }

  fileprivate func writeNull() {
    bytes.append(contentsOf: "null".utf8)
  }

  // MARK: - Containers

  /// Opens an object or array for the current value (a second request for the same kind gets the same one).
  fileprivate func openSlotContainer(isObject: Bool) throws -> (depth: Int, id: Int) {
    switch slot.state {
    case .empty:
      let id = open(isObject: isObject)
      slot.state = .container(id: id, isObject: isObject)
      return (slot.depth, id)
    case .container(let id, let wasObject):
      guard wasObject == isObject, frames.count > slot.depth, frames[slot.depth].id == id else {
        throw Unsupported()
      }
      return (slot.depth, id)
    case .single:
      throw Unsupported()
    }
  }

  private func open(isObject: Bool) -> Int {
    nextFrameID &+= 1
    frames.append(Frame(id: nextFrameID, isObject: isObject, firstEntry: entries.count))
    if frames.count > lastDepth { lastDepth = frames.count }
    bytes.append(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
    return nextFrameID
  }

  /// Makes the container at `depth` with `id` the innermost open one, closing those opened in it since; throws
  /// ``Unsupported`` if it was closed, or belongs to a value that contains the one being written.
  fileprivate func enter(_ depth: Int, _ id: Int) throws {
    guard depth >= slot.depth, depth < frames.count, frames[depth].id == id else { throw Unsupported() }
    if frames.count > depth + 1 { try close(downTo: depth + 1) }
  }

  /// Starts an entry of the object at `depth` (entered): the separator and the key.
  fileprivate func writeKey(_ key: some CodingKey, at depth: Int) {
    let name = key.stringValue
    let place = frames[depth].count
    if place > 0 {
      bytes.append(UInt8(ascii: ","))
      if frames[depth].ascending, let last = entries.last, !(last.key < name) {
        frames[depth].ascending = false
      }
    }
    frames[depth].count += 1
    entries.append(Entry(key: name, offset: bytes.count))
    let slot = (depth &* 8 &+ place) & (Self.keySlots - 1)
    if !keyJSON[slot].json.isEmpty, keyJSON[slot].name == name {
      bytes.append(contentsOf: keyJSON[slot].json)
    } else {
      let start = bytes.count
      JSONText.append(name, to: &bytes)
      bytes.append(UInt8(ascii: ":"))
      // In the slot's own buffer: keys of two objects that take turns at one slot allocate nothing.
      keyJSON[slot].name = name
      keyJSON[slot].json.removeAll(keepingCapacity: true)
      keyJSON[slot].json.append(contentsOf: bytes[start...])
    }
  }

  /// Starts an element of the array at `depth` (entered): the separator.
  fileprivate func writeSeparator(at depth: Int) {
    if frames[depth].count > 0 { bytes.append(UInt8(ascii: ",")) }
    frames[depth].count += 1
  }

  /// Writes a value that encodes itself into the container at `depth`, under `key` (for `codingPath`).
  fileprivate func writeNested<T: Encodable>(_ value: T, at depth: Int, key: any CodingKey) throws {
    frames[depth].key = key
    try writeValue(value)
  }

  /// Opens a container nested in the one at `depth`, after its key or separator.
  fileprivate func openNested(at depth: Int, key: any CodingKey, isObject: Bool) -> (depth: Int, id: Int) {
    frames[depth].key = key
    return (depth + 1, open(isObject: isObject))
  }

  /// Closes the frames from `depth` on, innermost first.
  private func close(downTo depth: Int) throws {
    while frames.count > depth {
      let frame = frames.removeLast()
      if frame.isObject {
        if !frame.ascending { try sortEntries(from: frame.firstEntry) }
        entries.removeSubrange(frame.firstEntry...)
        bytes.append(UInt8(ascii: "}"))
      } else {
        bytes.append(UInt8(ascii: "]"))
      }
    }
  }

  /// Puts the entries of the object being closed, from `first` to the end of `entries`, in key order.
  private func sortEntries(from first: Int) throws {
    let count = entries.count - first
    if lastSorted.keys.count != count
      || !lastSorted.keys.indices.allSatisfy({ lastSorted.keys[$0] == entries[first + $0].key })
    {
      let keys = entries[first...].map(\.key)
      var order = Array(0..<count)
      order.sort { keys[$0] < keys[$1] }
      for index in order.indices.dropFirst() where keys[order[index - 1]] == keys[order[index]] {
        throw Unsupported()  // A key written twice: `JSONEncoder` keeps the last value.
      }
      lastSorted = (keys, order)
    }
    // The entries written back in key order, over the same bytes: each entry but the last ends before the comma that
    // starts the next.
    let start = entries[first].offset
    let end = bytes.count
    sortScratch.removeAll(keepingCapacity: true)
    sortScratch.append(contentsOf: bytes[start..<end])
    var position = start
    bytes.withUnsafeMutableBufferPointer { output in
      sortScratch.withUnsafeBufferPointer { input in
        for (index, entry) in lastSorted.order.enumerated() {
          if index > 0 {
            output[position] = UInt8(ascii: ",")
            position += 1
          }
          let from = entries[first + entry].offset - start
          let to = (first + entry + 1 < entries.count ? entries[first + entry + 1].offset - 1 : end) - start
          output.baseAddress!.advanced(by: position).update(
            from: input.baseAddress!.advanced(by: from), count: to - from)
          position += to - from
        }
      }
    }
  }
}

// MARK: - List forms written directly (``ListEncoding``)

extension JSONStreamEncoder {
  /// An object or array of this encoder that ``ListEncoding`` writes the structure of its list forms into directly.
  ///
  /// Not through the `Encoder` protocol's containers: their boxes and existentials cost more, in code not specialised
  /// for the element type, than the little they write. Elements and ids still encode themselves.
  ///
  /// Written to as the encoder's own keyed and unkeyed containers of the same frame would be: a write reopens the
  /// frame (`enter`), and the coding path holds the same keys and indices. An object's keys and an array's elements
  /// are written only by the methods for them.
  struct DirectContainer {
    fileprivate let encoder: JSONStreamEncoder
    fileprivate let depth: Int
    fileprivate let id: Int

    /// The number of values written into this container so far (0 for one that could not open, at depth -1).
    var count: Int {
      depth >= 0 && depth < encoder.frames.count && encoder.frames[depth].id == id ? encoder.frames[depth].count : 0
    }

    /// Starts the next element of this array: reopens it, and writes the separator.
    fileprivate func start() throws {
      try encoder.enter(depth, id)
      encoder.writeSeparator(at: depth)
    }

    /// Opens an array under `key` of this object.
    func nestedArray(forKey key: ListFormKey) throws -> DirectContainer {
      try encoder.enter(depth, id)
      encoder.writeKey(key, at: depth)
      let (depth, id) = encoder.openNested(at: depth, key: key, isObject: false)
      return DirectContainer(encoder: encoder, depth: depth, id: id)
    }

    /// Opens an array as the next element of this array.
    func nestedArray() throws -> DirectContainer {
      let index = count
      try start()
      let (depth, id) = encoder.openNested(at: depth, key: IndexKey(index), isObject: false)
      return DirectContainer(encoder: encoder, depth: depth, id: id)
    }

    /// Writes `value` as the next element of this array.
    func encode<T: Encodable>(_ value: T) throws {
      let index = count
      try start()
      try encoder.writeNested(value, at: depth, key: IndexKey(index))
    }

    /// Writes `id` as the next element of this array if it is an `Int`, a `String` or a `UUID`; returns whether it was.
    ///
    /// The bytes are those its `encode(to:)` writes (``writePrimitive(_:)``). Elements' ids are most often one of
    /// these, and a record writes an id for each element it changes.
    func encodeCommonID<ID>(_ id: ID) throws -> Bool {
      // Comparing metatypes is a pointer comparison, where `as?` would be a dynamic cast.
      guard ID.self == Int.self || ID.self == String.self || ID.self == UUID.self else { return false }
      try start()
      return try encoder.writePrimitive(id)
    }

    /// Encodes `element` as the next element of this array, and returns the bytes written for it (the separator
    /// before it left out); `nil` if the encoder refused something in it (the value is then encoded again with
    /// `JSONEncoder`, and those bytes are not its JSON).
    func encodeElement<Element: Encodable>(_ element: Element) throws -> ArraySlice<UInt8>? {
      let separated = count > 0
      let start = encoder.bytes.count
      try encode(element)
      guard !encoder.unsupported else { return nil }
      return encoder.bytes[(separated ? start + 1 : start)...]
    }

    /// Writes `json`, the JSON this encoder wrote for `count` elements before (``encodeElement(_:)``), separated by
    /// commas, as the next elements of this array.
    func appendElementsJSON(_ json: ArraySlice<UInt8>, count: Int) throws {
      precondition(count > 0 && !json.isEmpty, "appendElementsJSON: a run of no elements")
      try start()
      encoder.frames[depth].count += count - 1
      encoder.bytes.append(contentsOf: json)
    }
  }

  /// Opens the object of the value being written (a list form), to be written directly.
  /// - Throws: ``Unsupported`` if the value already wrote something else.
  func directObject() throws -> DirectContainer {
    do {
      let (depth, id) = try openSlotContainer(isObject: true)
      return DirectContainer(encoder: self, depth: depth, id: id)
    } catch {
      // As for a container that could not open: the value falls back to `JSONEncoder` even if its own code catches
      // this error.
      unsupported = true
      throw error
    }
  }

  /// How many bytes the encoder has written.
  var writtenCount: Int { bytes.count }

  /// Whether the encoder followed every value so far: else what it wrote is not the value's JSON.
  var isComplete: Bool { !unsupported }

  /// The bytes written from `start` on.
  func written(from start: Int) -> [UInt8] { Array(bytes[start...]) }
}

extension JSONStreamEncoder: Encoder {
  var codingPath: [any CodingKey] {
    frames.prefix(slot.depth).compactMap(\.key)
  }

  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    do {
      let (depth, id) = try openSlotContainer(isObject: true)
      return KeyedEncodingContainer(KeyedContainer(encoder: self, depth: depth, id: id))
    } catch {
      return deadContainer(keyedBy: type)
    }
  }

  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    do {
      let (depth, id) = try openSlotContainer(isObject: false)
      return UnkeyedContainer(encoder: self, depth: depth, id: id)
    } catch {
      return deadUnkeyedContainer()
    }
  }

  func singleValueContainer() -> any SingleValueEncodingContainer {
    SingleValueContainer(encoder: self)
  }
}

// MARK: - Containers

/// An object of ``JSONStreamEncoder``.
///
/// One it could not open has depth -1: every write to it throws ``JSONStreamEncoder/Unsupported``.
private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let encoder: JSONStreamEncoder
  let depth: Int
  let id: Int

  var codingPath: [any CodingKey] { encoder.codingPath }

  private func start(_ key: Key) throws {
    try encoder.enter(depth, id)
    encoder.writeKey(key, at: depth)
  }

  mutating func encodeNil(forKey key: Key) throws {
    try start(key)
    encoder.writeNull()
  }

  mutating func encode(_ value: Bool, forKey key: Key) throws {
    try start(key)
    encoder.write(value)
  }

  mutating func encode(_ value: String, forKey key: Key) throws {
    try start(key)
    JSONText.append(value, to: &encoder.bytes)
  }

  mutating func encode(_ value: Double, forKey key: Key) throws {
    try start(key)
    try encoder.write(value)
  }

  mutating func encode(_ value: Float, forKey key: Key) throws {
    try start(key)
    try encoder.write(value)
  }

  mutating func encode(_ value: Int, forKey key: Key) throws { try integer(value, key) }
  mutating func encode(_ value: Int8, forKey key: Key) throws { try integer(value, key) }
  mutating func encode(_ value: Int16, forKey key: Key) throws { try integer(value, key) }
  mutating func encode(_ value: Int32, forKey key: Key) throws { try integer(value, key) }
  mutating func encode(_ value: Int64, forKey key: Key) throws { try integer(value, key) }
  mutating func encode(_ value: UInt, forKey key: Key) throws { try integer(value, key) }
  mutating func encode(_ value: UInt8, forKey key: Key) throws { try integer(value, key) }
  mutating func encode(_ value: UInt16, forKey key: Key) throws { try integer(value, key) }
  mutating func encode(_ value: UInt32, forKey key: Key) throws { try integer(value, key) }
  mutating func encode(_ value: UInt64, forKey key: Key) throws { try integer(value, key) }

  private func integer(_ value: some BinaryInteger, _ key: Key) throws {
    try start(key)
    encoder.write(value)
  }

  mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
    try start(key)
    try encoder.writeNested(value, at: depth, key: key)
  }

  mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy keyType: NestedKey.Type, forKey key: Key
  ) -> KeyedEncodingContainer<NestedKey> {
    guard (try? start(key)) != nil else { return encoder.deadContainer(keyedBy: keyType) }
    let (depth, id) = encoder.openNested(at: depth, key: key, isObject: true)
    return KeyedEncodingContainer(KeyedContainer<NestedKey>(encoder: encoder, depth: depth, id: id))
  }

  mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    guard (try? start(key)) != nil else { return encoder.deadUnkeyedContainer() }
    let (depth, id) = encoder.openNested(at: depth, key: key, isObject: false)
    return UnkeyedContainer(encoder: encoder, depth: depth, id: id)
  }

  mutating func superEncoder() -> any Encoder { encoder.unsupportedEncoder() }
  mutating func superEncoder(forKey key: Key) -> any Encoder { encoder.unsupportedEncoder() }
}

/// An array of ``JSONStreamEncoder``.
private struct UnkeyedContainer: UnkeyedEncodingContainer {
  let encoder: JSONStreamEncoder
  let depth: Int
  let id: Int

  var codingPath: [any CodingKey] { encoder.codingPath }

  /// The same array, written to directly: the one place an array's elements are started and counted.
  private var direct: JSONStreamEncoder.DirectContainer {
    JSONStreamEncoder.DirectContainer(encoder: encoder, depth: depth, id: id)
  }

  var count: Int { direct.count }

  private func start() throws {
    try direct.start()
  }

  mutating func encodeNil() throws {
    try start()
    encoder.writeNull()
  }

  mutating func encode(_ value: Bool) throws {
    try start()
    encoder.write(value)
  }

  mutating func encode(_ value: String) throws {
    try start()
    JSONText.append(value, to: &encoder.bytes)
  }

  mutating func encode(_ value: Double) throws {
    try start()
    try encoder.write(value)
  }

  mutating func encode(_ value: Float) throws {
    try start()
    try encoder.write(value)
  }

  mutating func encode(_ value: Int) throws { try integer(value) }
  mutating func encode(_ value: Int8) throws { try integer(value) }
  mutating func encode(_ value: Int16) throws { try integer(value) }
  mutating func encode(_ value: Int32) throws { try integer(value) }
  mutating func encode(_ value: Int64) throws { try integer(value) }
  mutating func encode(_ value: UInt) throws { try integer(value) }
  mutating func encode(_ value: UInt8) throws { try integer(value) }
  mutating func encode(_ value: UInt16) throws { try integer(value) }
  mutating func encode(_ value: UInt32) throws { try integer(value) }
  mutating func encode(_ value: UInt64) throws { try integer(value) }

  private func integer(_ value: some BinaryInteger) throws {
    try start()
    encoder.write(value)
  }

  mutating func encode<T: Encodable>(_ value: T) throws {
    try direct.encode(value)
  }

  mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy keyType: NestedKey.Type
  ) -> KeyedEncodingContainer<NestedKey> {
    let index = count
    guard (try? start()) != nil else { return encoder.deadContainer(keyedBy: keyType) }
    let (depth, id) = encoder.openNested(at: depth, key: IndexKey(index), isObject: true)
    return KeyedEncodingContainer(KeyedContainer<NestedKey>(encoder: encoder, depth: depth, id: id))
  }

  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    guard let array = try? direct.nestedArray() else { return encoder.deadUnkeyedContainer() }
    return UnkeyedContainer(encoder: encoder, depth: array.depth, id: array.id)
  }

  mutating func superEncoder() -> any Encoder { encoder.unsupportedEncoder() }
}

/// The single value of ``JSONStreamEncoder``'s current value.
private struct SingleValueContainer: SingleValueEncodingContainer {
  let encoder: JSONStreamEncoder

  var codingPath: [any CodingKey] { encoder.codingPath }

  /// Claims the current value; a second value, or one after a container, throws ``JSONStreamEncoder/Unsupported``.
  private func start() throws {
    guard case .empty = encoder.slot.state else { throw JSONStreamEncoder.Unsupported() }
    encoder.slot.state = .single
  }

  mutating func encodeNil() throws {
    try start()
    encoder.writeNull()
  }

  mutating func encode(_ value: Bool) throws {
    try start()
    encoder.write(value)
  }

  mutating func encode(_ value: String) throws {
    try start()
    JSONText.append(value, to: &encoder.bytes)
  }

  mutating func encode(_ value: Double) throws {
    try start()
    try encoder.write(value)
  }

  mutating func encode(_ value: Float) throws {
    try start()
    try encoder.write(value)
  }

  mutating func encode(_ value: Int) throws { try integer(value) }
  mutating func encode(_ value: Int8) throws { try integer(value) }
  mutating func encode(_ value: Int16) throws { try integer(value) }
  mutating func encode(_ value: Int32) throws { try integer(value) }
  mutating func encode(_ value: Int64) throws { try integer(value) }
  mutating func encode(_ value: UInt) throws { try integer(value) }
  mutating func encode(_ value: UInt8) throws { try integer(value) }
  mutating func encode(_ value: UInt16) throws { try integer(value) }
  mutating func encode(_ value: UInt32) throws { try integer(value) }
  mutating func encode(_ value: UInt64) throws { try integer(value) }

  private func integer(_ value: some BinaryInteger) throws {
    try start()
    encoder.write(value)
  }

  mutating func encode<T: Encodable>(_ value: T) throws {
    try start()
    try encoder.writeValue(value)
  }
}

/// An array element's position in `codingPath`.
private struct IndexKey: CodingKey {
  let intValue: Int?
  var stringValue: String { "Index \(intValue ?? 0)" }

  init(_ index: Int) {
    intValue = index
  }

  init?(stringValue: String) {
    nil
  }

  init?(intValue: Int) {
    self.intValue = intValue
  }
}
