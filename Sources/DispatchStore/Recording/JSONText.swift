// Writing JSON text into byte buffers: the pieces the session format and the stream encoder share.

/// JSON strings and integers, written straight into a byte buffer.
enum JSONText {
  /// Appends `string` as a JSON string literal, quotes included.
  static func append(_ string: String, to bytes: inout [UInt8]) {
    var string = string
    string.withUTF8 { utf8 in
      bytes.append(UInt8(ascii: "\""))
      // The bytes between escapes are copied at once: most strings (keys, identifiers) are one such run.
      var run = 0
      for index in utf8.indices {
        let byte = utf8[index]
        guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<index]))
        run = index + 1
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
        case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
        default:
          let hex = String(byte, radix: 16)
          bytes.append(contentsOf: "\\u00".utf8)
          if hex.count == 1 { bytes.append(UInt8(ascii: "0")) }
          bytes.append(contentsOf: hex.utf8)
        }
      }
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
      bytes.append(UInt8(ascii: "\""))
    }
  }

  /// Appends the decimal digits of `value` (at most 64 bits, as every standard integer type), without making a
  /// string.
  static func append<Integer: BinaryInteger>(_ value: Integer, to bytes: inout [UInt8]) {
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    var magnitude = UInt64(truncatingIfNeeded: value.magnitude)
    var digits = 1
    var limit: UInt64 = 10
    while digits < 20 && magnitude >= limit {
      digits += 1
      limit &*= 10
    }
    let end = bytes.count + digits
    bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
    bytes.withUnsafeMutableBufferPointer { buffer in
      var position = end
      repeat {
        position -= 1
        buffer[position] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10)
        magnitude /= 10
      } while magnitude > 0
    }
  }
}
