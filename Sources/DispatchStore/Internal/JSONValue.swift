import Foundation

/// A JSON document as a tree: what models and actions look like to diffs, effects and the inspector.
enum JSONValue: Sendable, Hashable, Codable {
  case null
  case bool(Bool)
  case integer(Int64)
  case unsigned(UInt64)
  case number(Double)
  case string(String)
  case array([JSONValue])
  case object([String: JSONValue])

  /// The JSON tree of `value`'s encoding.
  init(encoding value: some Encodable) throws {
    let data = try JSONEncoder().encode(value)
    self = try JSONDecoder().decode(JSONValue.self, from: data)
  }

  /// Decodes `T` from this tree.
  func decode<T: Decodable>(_ type: T.Type) throws -> T {
    try JSONDecoder().decode(T.self, from: JSONEncoder().encode(self))
  }

  init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if container.decodeNil() {
      self = .null
    } else if let value = try? container.decode(Bool.self) {
      self = .bool(value)
    } else if let value = try? container.decode(Int64.self) {
      self = .integer(value)
    } else if let value = try? container.decode(UInt64.self) {
      self = .unsigned(value)
    } else if let value = try? container.decode(Double.self) {
      self = .number(value)
    } else if let value = try? container.decode(String.self) {
      self = .string(value)
    } else if let value = try? container.decode([JSONValue].self) {
      self = .array(value)
    } else {
      self = .object(try container.decode([String: JSONValue].self))
    }
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .null: try container.encodeNil()
    case .bool(let value): try container.encode(value)
    case .integer(let value): try container.encode(value)
    case .unsigned(let value): try container.encode(value)
    case .number(let value): try container.encode(value)
    case .string(let value): try container.encode(value)
    case .array(let value): try container.encode(value)
    case .object(let value): try container.encode(value)
    }
  }

  /// Compact JSON with sorted keys.
  var json: String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    guard let data = try? encoder.encode(self) else { return "null" }
    return String(decoding: data, as: UTF8.self)
  }

  /// The most elements, removed and inserted together, that ``differences(expected:actual:path:alignsArrays:)``
  /// aligns in one array, after equal elements at both ends.
  static let alignmentLimit = 1_000
  /// The most elements it aligns in all the arrays of one comparison together.
  static let alignmentBudget = 4_000

  /// The fields that differ from `expected` to `actual`, by key path, in key order; empty if the trees are equal.
  ///
  /// - Parameters:
  ///   - alignsArrays: `false` compares arrays index by index, as verify must (an element in another place is a
  ///     divergence); `true` aligns them first, so that an element inserted or removed is one difference, at its
  ///     index in the array it is in, rather than a change of every element after it.
  static func differences(
    expected: JSONValue?, actual: JSONValue?, path: String = "", alignsArrays: Bool = false
  ) -> [FieldDifference] {
    var budget = alignsArrays ? alignmentBudget : 0
    return differences(expected: expected, actual: actual, path: path, alignsArrays: alignsArrays, budget: &budget)
  }

  /// `budget`: how many more elements may be aligned; arrays past it are compared index by index.
  private static func differences(
    expected: JSONValue?, actual: JSONValue?, path: String, alignsArrays: Bool, budget: inout Int
  ) -> [FieldDifference] {
    switch (expected, actual) {
    case (.object(let lhs), .object(let rhs)):
      return Set(lhs.keys).union(rhs.keys).sorted().flatMap { key in
        differences(
          expected: lhs[key], actual: rhs[key], path: path.isEmpty ? key : "\(path).\(key)", alignsArrays: alignsArrays,
          budget: &budget)
      }
    case (.array(let lhs), .array(let rhs)) where alignsArrays:
      return alignedDifferences(lhs, rhs, path: path, budget: &budget)
    case (.array(let lhs), .array(let rhs)):
      return (0..<max(lhs.count, rhs.count)).flatMap { index in
        differences(
          expected: index < lhs.count ? lhs[index] : nil, actual: index < rhs.count ? rhs[index] : nil,
          path: "\(path)[\(index)]", alignsArrays: false, budget: &budget)
      }
    default:
      guard expected != actual else { return [] }
      return [FieldDifference(path: path, expected: expected?.json, actual: actual?.json)]
    }
  }

  /// The differences from `lhs` to `rhs` once their equal elements are aligned (a longest common subsequence).
  ///
  /// Between two aligned elements, the elements removed and inserted there are paired in order and compared field
  /// by field (an element changed in place); the rest are whole elements removed (at their index in `lhs`) or
  /// inserted (at their index in `rhs`). Equal elements at both ends are skipped first; if what remains between
  /// them is longer than ``alignmentLimit`` elements, or than what is left of `budget`, it is compared index by
  /// index instead (the alignment's time and memory grow with the product of its size and the number of edits).
  /// Elements are aligned by their hashes, so that each comparison of the alignment is one of integers; an aligned
  /// pair is still compared, in case two hashes collide.
  private static func alignedDifferences(
    _ lhs: [JSONValue], _ rhs: [JSONValue], path: String, budget: inout Int
  ) -> [FieldDifference] {
    var first = 0
    while first < lhs.count, first < rhs.count, lhs[first] == rhs[first] { first += 1 }
    var oldEnd = lhs.count
    var newEnd = rhs.count
    while oldEnd > first, newEnd > first, lhs[oldEnd - 1] == rhs[newEnd - 1] {
      oldEnd -= 1
      newEnd -= 1
    }
    let size = (oldEnd - first) + (newEnd - first)
    if size > alignmentLimit || size > budget {
      budget = 0  // What is left is compared index by index too.
      return (first..<max(oldEnd, newEnd)).flatMap { index in
        differences(
          expected: index < oldEnd ? lhs[index] : nil, actual: index < newEnd ? rhs[index] : nil,
          path: "\(path)[\(index)]", alignsArrays: true, budget: &budget)
      }
    }
    budget -= size
    var removed = Set<Int>()
    var inserted = Set<Int>()
    let newHashes = rhs[first..<newEnd].map(\.hashValue)
    for change in newHashes.difference(from: lhs[first..<oldEnd].map(\.hashValue)) {
      switch change {
      case .remove(let offset, _, _): removed.insert(first + offset)
      case .insert(let offset, _, _): inserted.insert(first + offset)
      }
    }
    var result: [FieldDifference] = []
    var old = first
    var new = first
    while old < oldEnd || new < newEnd {
      var gone: [Int] = []
      var added: [Int] = []
      while old < oldEnd, removed.contains(old) {
        gone.append(old)
        old += 1
      }
      while new < newEnd, inserted.contains(new) {
        added.append(new)
        new += 1
      }
      if gone.isEmpty, added.isEmpty {  // An aligned pair: equal hashes.
        if old < oldEnd, new < newEnd, lhs[old] != rhs[new] {
          result += differences(
            expected: lhs[old], actual: rhs[new], path: "\(path)[\(new)]", alignsArrays: true, budget: &budget)
        }
        old += 1
        new += 1
        continue
      }
      let paired = min(gone.count, added.count)
      for index in 0..<paired {
        result += differences(
          expected: lhs[gone[index]], actual: rhs[added[index]], path: "\(path)[\(added[index])]", alignsArrays: true,
          budget: &budget)
      }
      for index in gone.dropFirst(paired) {
        result.append(FieldDifference(path: "\(path)[\(index)]", expected: lhs[index].json, actual: nil))
      }
      for index in added.dropFirst(paired) {
        result.append(FieldDifference(path: "\(path)[\(index)]", expected: nil, actual: rhs[index].json))
      }
    }
    return result
  }
}
