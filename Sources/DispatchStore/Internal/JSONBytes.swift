import Foundation

/// Compact JSON, as a session's writer writes it, read in place: where values, members and elements are, without
/// decoding them.
///
/// Every read checks its bounds and returns `nil` (or `false`) for anything but compact JSON, whitespace included: the
/// bytes may be any file's. Valid only while the buffer it reads is.
struct JSONBytes {
  private let bytes: UnsafeRawBufferPointer

  init(_ bytes: UnsafeRawBufferPointer) {
    self.bytes = bytes
  }

  var count: Int { bytes.count }

  subscript(_ position: Int) -> UInt8 { bytes[position] }

  /// Where the value that starts at `start` ends, reading no further than `limit`.
  ///
  /// Nested arrays and objects are skipped by counting brackets, strings by their closing quote; a number or literal
  /// ends at the next `,`, `]` or `}`.
  func valueEnd(from start: Int, limit: Int) -> Int? {
    guard start >= 0, start < limit, limit <= bytes.count else { return nil }
    var position = start
    var depth = 0
    repeat {
      guard position < limit else { return nil }
      switch bytes[position] {
      case UInt8(ascii: "\""):
        guard let end = stringEnd(from: position, limit: limit) else { return nil }
        position = end
      case UInt8(ascii: "["), UInt8(ascii: "{"):
        depth += 1
        position += 1
      case UInt8(ascii: "]"), UInt8(ascii: "}"):
        guard depth > 0 else { return nil }
        depth -= 1
        position += 1
      case UInt8(ascii: ","), UInt8(ascii: ":"):
        guard depth > 0 else { return nil }
        position += 1
      default:
        if depth > 0 {
          position += 1
        } else {
          while position < limit, !Self.endsLiteral(bytes[position]) { position += 1 }
          return position
        }
      }
    } while depth > 0
    return position
  }

  /// Calls `body` with the ranges of each member's key (its quotes included) and value of the object in `range` (its
  /// braces included), in order, until it returns `false`; returns whether every member was read and `body` returned
  /// `true` for each.
  func forEachMember(in range: Range<Int>, _ body: (Range<Int>, Range<Int>) -> Bool) -> Bool {
    forEachItem(in: range, opening: UInt8(ascii: "{"), closing: UInt8(ascii: "}")) { start, limit in
      guard bytes[start] == UInt8(ascii: "\""), let keyEnd = stringEnd(from: start, limit: limit), keyEnd < limit,
        bytes[keyEnd] == UInt8(ascii: ":"), let valueEnd = valueEnd(from: keyEnd + 1, limit: limit),
        body(start..<keyEnd, (keyEnd + 1)..<valueEnd)
      else { return nil }
      return valueEnd
    }
  }

  /// Calls `body` with the range of each element of the array in `range` (its brackets included), in order, until it
  /// returns `false`; returns whether every element was read and `body` returned `true` for each.
  func forEachElement(in range: Range<Int>, _ body: (Range<Int>) -> Bool) -> Bool {
    forEachItem(in: range, opening: UInt8(ascii: "["), closing: UInt8(ascii: "]")) { start, limit in
      guard let end = valueEnd(from: start, limit: limit), body(start..<end) else { return nil }
      return end
    }
  }

  /// Whether every item of the container in `range` was read by `readItem`: items between its `opening` and
  /// `closing` bytes, separated by commas.
  ///
  /// `readItem` takes where an item starts and where the container's closing byte is, and returns where the item
  /// ends, or `nil` to stop.
  private func forEachItem(
    in range: Range<Int>, opening: UInt8, closing: UInt8, _ readItem: (_ start: Int, _ limit: Int) -> Int?
  ) -> Bool {
    guard range.count >= 2, range.lowerBound >= 0, range.upperBound <= bytes.count,
      bytes[range.lowerBound] == opening, bytes[range.upperBound - 1] == closing
    else { return false }
    let last = range.upperBound - 1
    var position = range.lowerBound + 1
    guard position < last else { return true }
    while true {
      guard let end = readItem(position, last) else { return false }
      if end == last { return true }
      guard bytes[end] == UInt8(ascii: ","), end + 1 < last else { return false }
      position = end + 1
    }
  }

  /// The integer written in `range`: digits, after a `-` if it is negative.
  func integer(_ range: Range<Int>) -> Int? {
    guard !range.isEmpty, range.upperBound <= bytes.count else { return nil }
    var value = 0
    let negative = bytes[range.lowerBound] == UInt8(ascii: "-")
    for position in (negative ? range.lowerBound + 1 : range.lowerBound)..<range.upperBound {
      let digit = Int(bytes[position]) - Int(UInt8(ascii: "0"))
      guard (0...9).contains(digit) else { return nil }
      let (times, overflowed) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflowedAgain) = times.addingReportingOverflow(negative ? -digit : digit)
      guard !overflowed, !overflowedAgain else { return nil }
      value = sum
    }
    return negative && range.count == 1 ? nil : value
  }

  /// Whether the bytes in `range` are those of `other`.
  func equals(_ range: Range<Int>, _ other: JSONBytes) -> Bool {
    same(range, as: other, 0..<other.count)
  }

  /// Whether the bytes in `range` are `text`'s.
  func equals(_ range: Range<Int>, _ text: StaticString) -> Bool {
    text.withUTF8Buffer { utf8 in equals(range, JSONBytes(UnsafeRawBufferPointer(utf8))) }
  }

  /// Whether the bytes in `range` are those in `otherRange` of `other`.
  func same(_ range: Range<Int>, as other: JSONBytes, _ otherRange: Range<Int>) -> Bool {
    guard range.count == otherRange.count, range.lowerBound >= 0, range.upperBound <= bytes.count,
      otherRange.lowerBound >= 0, otherRange.upperBound <= other.bytes.count
    else { return false }
    guard !range.isEmpty else { return true }
    return memcmp(bytes.baseAddress! + range.lowerBound, other.bytes.baseAddress! + otherRange.lowerBound, range.count)
      == 0
  }

  /// The FNV-1a hash of the bytes in `range`.
  func hash(_ range: Range<Int>) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for position in range { hash = (hash ^ UInt64(bytes[position])) &* 0x100_0000_01b3 }
    return hash
  }

  /// Where the string whose opening quote is at `start` ends, past its closing quote.
  private func stringEnd(from start: Int, limit: Int) -> Int? {
    var position = start + 1
    while position < limit {
      switch bytes[position] {
      case UInt8(ascii: "\\"): position += 2
      case UInt8(ascii: "\""): return position + 1
      default: position += 1
      }
    }
    return nil
  }

  /// Whether `byte` ends a number or a literal.
  private static func endsLiteral(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: ":")
  }
}
