import Foundation

// The session file format, version 1 (documented in the DocC article "Recording and replay").
//
// JSON Lines, UTF-8, one JSON object per line, every line ending in "\n":
//   line 1  {"format":"DispatchStore.session","version":1,"stores":[{"identifier":..,"model":..,"action":..}]}
//   record  {"kind":"record","index":N,"transaction":<id>,"timestamp":<s since 1970>,"store":..,"action":..,"model":..}
//   cursor  {"kind":"cursor","cursor":N}
// A record at index N first drops the history from N on (a dispatch after moving back), then appends. A cursor
// line moves the current position to record N (-1: before the first record) without dropping anything.

/// The keys of every session line.
enum SessionLineKey: String, CodingKey {
  case format, version, stores
  case kind, index, transaction, timestamp, store, action, model, cursor
}

enum SessionFormat {
  static let name = "DispatchStore.session"
  static let version = 1

  struct StoreEntry: Codable, Equatable {
    let identifier: String
    let model: String
    let action: String
  }

  struct Header: Codable {
    let format: String
    let version: Int
    let stores: [StoreEntry]
  }

  static func header(for codecs: SessionCodecs) -> Header {
    Header(
      format: name, version: version,
      stores: codecs.storeIdentifiers.map { identifier in
        let codec = codecs.codecs[identifier]!
        return StoreEntry(identifier: identifier, model: codec.modelTypeName, action: codec.actionTypeName)
      })
  }

  /// One line after the header.
  enum Line {
    case record(Record)
    case cursor(Int)
  }

  /// Encodes a line, newline included.
  static func encode(_ line: Line, codecs: SessionCodecs) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    var data = try encoder.encode(LineEncoding(line: line, codecs: codecs))
    data.append(0x0A)
    return data
  }

  static func encodeHeader(_ header: Header) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    var data = try encoder.encode(header)
    data.append(0x0A)
    return data
  }

  private struct LineEncoding: Encodable {
    let line: Line
    let codecs: SessionCodecs

    func encode(to encoder: any Encoder) throws {
      var container = encoder.container(keyedBy: SessionLineKey.self)
      switch line {
      case .cursor(let cursor):
        try container.encode("cursor", forKey: .kind)
        try container.encode(cursor, forKey: .cursor)
      case .record(let record):
        guard let codec = codecs.codecs[record.storeIdentifier] else {
          throw SessionError.encodingFailed(storeIdentifier: record.storeIdentifier, reason: "no codec registered")
        }
        try container.encode("record", forKey: .kind)
        try container.encode(record.index, forKey: .index)
        try container.encode(record.transactionID.rawValue, forKey: .transaction)
        try container.encode(record.timestamp.timeIntervalSince1970, forKey: .timestamp)
        try container.encode(record.storeIdentifier, forKey: .store)
        try codec.encode(record, &container)
      }
    }
  }

  /// Decodes one line after the header; `codecs` travels in the decoder's user info.
  struct LineDecoding: Decodable {
    static let codecsKey = CodingUserInfoKey(rawValue: "DispatchStore.SessionCodecs")!
    let line: Line

    init(from decoder: any Decoder) throws {
      let container = try decoder.container(keyedBy: SessionLineKey.self)
      switch try container.decode(String.self, forKey: .kind) {
      case "cursor":
        line = .cursor(try container.decode(Int.self, forKey: .cursor))
      case "record":
        let store = try container.decode(String.self, forKey: .store)
        guard let codecs = decoder.userInfo[Self.codecsKey] as? SessionCodecs, let codec = codecs.codecs[store] else {
          throw UnknownStore(identifier: store)
        }
        line = .record(
          Record(
            index: try container.decode(Int.self, forKey: .index),
            transactionID: TransactionID(rawValue: try container.decode(UInt64.self, forKey: .transaction)),
            timestamp: Date(timeIntervalSince1970: try container.decode(Double.self, forKey: .timestamp)),
            storeIdentifier: store,
            action: try codec.decodeAction(container),
            model: try codec.decodeModel(container)))
      case let kind:
        throw DecodingError.dataCorruptedError(
          forKey: .kind, in: container, debugDescription: "unknown line kind \"\(kind)\"")
      }
    }
  }

  struct UnknownStore: Error {
    let identifier: String
  }
}

extension DecodingError {
  /// A short reason for a corrupt-line message.
  var shortDescription: String {
    switch self {
    case .dataCorrupted(let context): return context.debugDescription
    case .keyNotFound(let key, _): return "missing field \"\(key.stringValue)\""
    case .typeMismatch(_, let context), .valueNotFound(_, let context):
      let path = context.codingPath.map(\.stringValue).joined(separator: "/")
      return "\(context.debugDescription) at \"\(path)\""
    @unknown default: return "\(self)"
    }
  }
}
