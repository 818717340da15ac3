import Foundation

// The session file format (documented in the DocC article "Recording and replay").
//
// Version 3, written by this library: JSON Lines, UTF-8, one JSON object per line, every line ending in "\n", and
// every object ending in `,"h":"<16 hex digits>"}`: the FNV-1a 64 hash of the previous line's hash (8 bytes, little
// endian; 0 before the first line) followed by the line's bytes without that suffix (and with its closing brace).
// The hashes chain the lines, so that an edited, deleted, duplicated or swapped line is found on loading.
//   line 1    {"format":"DispatchStore.session","version":3,"stores":[{"identifier":..,"model":..,"action":..}]}
//   record    {"k":"r","i":N,"t":<transaction>,"d":<dispatch, if not t>,"s":store,"a":action,"m":model,
//              "e":"<error>"?,"c":true?,"f":<nanoseconds from t to the record, if not 0>?,
//              "u":true if the model did not change (an operation that made no change: undo steps over it)?,
//              "n":<the record's number among its transaction's, if not 0: an operation files one per change>?,
//              "b":true if the record puts the store back after its all-or-nothing dispatch failed (a rollback)?}
//              with "p":"m"|"a"|"am" right after "s" when the model, the action or both were redacted (SessionPrivacy)
//              with "z":<index> after "s" and "p" when the store's previous record line, with no move line
//              between, is the base of its IdentifiedLists' changes, and "l":[[key or index…]…] after "m", the
//              paths in the model of the IdentifiedLists written in their list forms (ListForms.swift): whole,
//              {"~all":[…],"~ids":[…]}, or changes from the list at the same path in the base,
//              {"~order":[[position,removing,[id…]]…],"~remove":[id…],"~set":[[id,element]…]}
//   snapshot  with "p":{store: "m"|"a"|"am"} right after "i" when some of its models or actions were redacted
//   move      {"k":"m","i":N}                      the cursor moved to record N (-1: before the first record)
//   snapshot  {"k":"s","i":N,"m":{store: model}}   the listed stores' models just before record N
//   effect    {"k":"e","d":<dispatch>,"t":<transaction>,"key":"..","v":<value>}   or, for a fetch that threw,
//             "e":"<error>" for "v"; "t" since proposal 0027 (lines without it are their dispatch's)
//   outcome   {"k":"o","t":<transaction>,"e":"<error>"?,"c":true?}   an operation whose records were filed at its
//             changes failed or was cancelled: its error and cancellation apply to every record of the transaction
//   read      {"k":"w","i":N,"t":<transaction>,"s":store}   an operation of transaction t read the store's model as
//             record N left it (ActionOperation.model(of:as:)); N is before the history's first record when the
//             store had none in it yet (-1: none at all). Format 3 only (proposal 0022)
// An operation's record is filed at each change it makes to its store's model, so a transaction may have several
// records (the same "t"), in the order of the store's changes; one that changed nothing has one, filed at its end.
// A record at index N first drops the history from N on (a dispatch after moving back), then appends: N is always
// one more than the cursor. Version 2 is version 3 without "z", "l" and list forms: it loads, and a recorder appends
// version 2 lines to it. Version 1 (no hashes, no dispatches, no snapshots) is read by `LineDecodingV1`.

/// The keys of every session line.
enum SessionLineKey: String, CodingKey {
  case format, version, stores
  // Version 2.
  case k, i, t, d, s, a, m, e, c, f, u, p, n, b, key, v, z, l
  // Version 1.
  case kind, index, transaction, timestamp, store, action, model, cursor
}

enum SessionFormat {
  static let name = "DispatchStore.session"
  static let version = 3
  /// How deeply a model, action or effect value may nest objects and arrays.
  ///
  /// `JSONDecoder` reads at most 512 levels, and a value sits up to three levels down (in its line, in a snapshot's
  /// map of stores, in the array the loader decodes all records from). A deeper value is refused when it is
  /// written, so that what is written loads back.
  static let maximumValueDepth = 500

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

  /// Whether `data`'s first line is a session header, of any version: what may be replaced by a session.
  static func startsWithHeader(_ data: Data) -> Bool {
    let end = data.firstIndex(of: UInt8(ascii: "\n")) ?? data.endIndex
    return (try? JSONDecoder().decode(Header.self, from: data[data.startIndex..<end]))?.format == name
  }

  /// The header of a session for `codecs`, without the stores a recorder's privacy settings leave out.
  static func header(for codecs: SessionCodecs, excluding excluded: Set<String> = []) -> Header {
    Header(
      format: name, version: version,
      stores: codecs.storeIdentifiers.compactMap { identifier in
        guard let codec = codecs.codecs[identifier], !excluded.contains(identifier) else { return nil }
        return StoreEntry(identifier: identifier, model: codec.modelTypeName, action: codec.actionTypeName)
      })
  }

  /// One line after the header.
  enum Line: Sendable {
    case record(Record)
    /// The cursor moved to this record (-1: before the first).
    case move(Int)
    /// These stores' models just before record `index`, and the action of each one's latest record, where known
    /// (observers hear a restored model with it).
    case snapshot(index: Int, models: [String: any ModelType], actions: [String: any ActionType])
    /// What an operation of `dispatchID` fetched through the recorder (`ActionOperation.effect(_:_:)`): a value, or
    /// the error the fetch threw.
    case effect(dispatchID: TransactionID, transactionID: TransactionID?, key: String, outcome: EffectOutcome)
    /// An operation of `store` whose records were filed at its changes failed or was cancelled.
    case outcome(transactionID: TransactionID, store: String, error: (any Error)?, cancelled: Bool)
    /// An operation of transaction `transactionID` read the model of `store` as record `index` left it
    /// (`ActionOperation.model(of:as:)`).
    case read(transactionID: TransactionID, store: String, index: Int)
  }

  // MARK: - Encoding

  /// Encodes lines, chaining their hashes; one per writer.
  ///
  /// Lines are assembled by hand around the JSON of their actions, models and strings, so that each begins with its
  /// kind and index (`{"k":"r","i":12,`): loading reads those without decoding the line (``SessionIndex``).
  struct Encoder {
    private let encoder: JSONStreamEncoder
    let codecs: SessionCodecs
    /// What the recorder redacts before writing.
    let privacy: SessionPrivacy
    /// Stores whose values are redacted already (a loaded session written again): their lines keep the mark.
    let marked: [String: RedactionMark]
    /// The hash of the last line encoded (or found at the end of the file appended to).
    var previousHash: UInt64
    /// Whether records write their ``IdentifiedList``s in the list forms of format 3; `false` to append version 2
    /// lines to a version 2 file.
    var writesListForms = true
    /// Per store, its last record line's index and lists, and how many lines with a base lead to it.
    ///
    /// What the store's next record writes its lists' changes against (format 3). Forgotten at a move line (the
    /// next record of each store is written whole).
    private var listBases: [String: (index: Int, lists: LineLists, chain: Int)] = [:]
    /// The most lines in a row with a base for one store before its lists are written whole again: what decoding a
    /// record reads at most, after one whole line.
    static let maximumChain = 1_000
    /// The lists of the record line being encoded: one for the encoder's lines, begun again for each.
    private let listEncoding = ListEncoding()

    init(
      codecs: SessionCodecs, privacy: SessionPrivacy = SessionPrivacy(), marked: [String: RedactionMark] = [:],
      previousHash: UInt64 = 0
    ) {
      self.encoder = JSONStreamEncoder()
      self.codecs = codecs
      self.privacy = privacy
      self.marked = marked
      self.previousHash = previousHash
    }

    /// The mark of a line of `store`, with a record's own.
    private func mark(of store: String, _ own: RedactionMark = RedactionMark()) -> RedactionMark {
      var mark = own.union(marked[store] ?? RedactionMark())
      if let redaction = privacy.redactions[store] { mark = mark.union(redaction.mark) }
      return mark
    }

    /// `model` as the session may hold it.
    private func redacted(_ model: any ModelType, of store: String) throws(SessionError) -> any ModelType {
      guard let redact = privacy.redactions[store]?.model else { return model }
      return try redact(model)
    }

    /// `action` as the session may hold it.
    private func redacted(_ action: any ActionType, of store: String) throws(SessionError) -> any ActionType {
      guard let redact = privacy.redactions[store]?.action else { return action }
      return try redact(action)
    }

    /// The header line, newline included.
    mutating func header() throws -> Data {
      var bytes: [UInt8] = []
      try encoder.encode(SessionFormat.header(for: codecs, excluding: privacy.excluded), into: &bytes)
      seal(&bytes, from: 0)
      return Data(bytes)
    }

    /// The session in `contents` (its lines before `completeByteCount`) with `header` in place of its header.
    ///
    /// Every other line keeps its bytes, its hash chained anew from the header's; ``previousHash`` is then the last
    /// line's. `contents` must be a session whose lines all end in a hash (one loaded, or parsed, without an error).
    mutating func rehashing(_ contents: Data, completeByteCount: Int, header: Header) throws -> Data {
      var bytes: [UInt8] = []
      try encoder.encode(header, into: &bytes)
      previousHash = 0
      seal(&bytes, from: 0)
      contents.withUnsafeBytes { raw in
        let lines = raw[..<min(completeByteCount, raw.count)].split(separator: 0x0A, omittingEmptySubsequences: false)
        // Past the header, and before the nothing after the last newline.
        for line in lines.dropFirst().dropLast() where line.count > SessionHash.suffixLength {
          let start = bytes.count
          // The object without its hash: the bytes before `,"h":"…"}`, then its closing brace.
          bytes.append(contentsOf: line.dropLast(SessionHash.suffixLength))
          bytes.append(UInt8(ascii: "}"))
          seal(&bytes, from: start)
        }
      }
      return Data(bytes)
    }

    /// `line`, newline included.
    mutating func encode(_ line: Line) throws -> Data {
      var bytes: [UInt8] = []
      try encode(line, into: &bytes)
      return Data(bytes)
    }

    /// Appends `line`, newline included, to `bytes`: a writer encodes a batch into one buffer.
    mutating func encode(_ line: Line, into bytes: inout [UInt8]) throws {
      let start = bytes.count
      switch line {
      case .move(let cursor):
        listBases.removeAll()
        bytes.append(contentsOf: #"{"k":"m","i":"#.utf8)
        JSONText.append(cursor, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
      case .record(let record):
        let codec = try self.codec(record.storeIdentifier)
        bytes.append(contentsOf: #"{"k":"r","i":"#.utf8)
        JSONText.append(record.index, to: &bytes)
        bytes.append(contentsOf: #","t":"#.utf8)
        JSONText.append(record.transactionID.rawValue, to: &bytes)
        if record.dispatchID != record.transactionID {
          bytes.append(contentsOf: #","d":"#.utf8)
          JSONText.append(record.dispatchID.rawValue, to: &bytes)
        }
        bytes.append(contentsOf: ",\"s\":".utf8)
        JSONText.append(record.storeIdentifier, to: &bytes)
        let mark = mark(of: record.storeIdentifier, record.redaction)
        if !mark.isEmpty {
          bytes.append(contentsOf: ",\"p\":".utf8)
          JSONText.append(mark.text, to: &bytes)
        }
        // The base of its lists' changes, named before the action so that loading finds it without scanning the
        // model.
        let base =
          writesListForms ? listBases[record.storeIdentifier].flatMap { $0.chain < Self.maximumChain ? $0 : nil } : nil
        if let base {
          bytes.append(contentsOf: #","z":"#.utf8)
          JSONText.append(base.index, to: &bytes)
        }
        bytes.append(contentsOf: ",\"a\":".utf8)
        try codec.encodeAction(
          record.storeIdentifier, try redacted(record.action, of: record.storeIdentifier), encoder, &bytes)
        try checkDepth(of: "action", store: record.storeIdentifier)
        bytes.append(contentsOf: ",\"m\":".utf8)
        let lists = writesListForms ? listEncoding : nil
        lists?.begin(base: base?.lists ?? .none)
        encoder.lists = lists
        defer { encoder.lists = nil }
        try codec.encodeModel(
          record.storeIdentifier, try redacted(record.model, of: record.storeIdentifier), encoder, &bytes)
        try checkDepth(of: "model", store: record.storeIdentifier)
        if let lists, !lists.paths.isEmpty {
          bytes.append(contentsOf: ",\"l\":[".utf8)
          for (offset, path) in lists.paths.enumerated() {
            if offset > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: path)
          }
          bytes.append(UInt8(ascii: "]"))
          listBases[record.storeIdentifier] = (
            record.index, LineLists(lists: lists.written), base.map { $0.chain + 1 } ?? 0
          )
        } else {
          listBases[record.storeIdentifier] = nil
        }
        if let error = record.error {
          bytes.append(contentsOf: ",\"e\":".utf8)
          JSONText.append(text(of: error, store: record.storeIdentifier), to: &bytes)
        }
        if record.wasCancelled { bytes.append(contentsOf: ",\"c\":true".utf8) }
        if !record.changedModel { bytes.append(contentsOf: ",\"u\":true".utf8) }
        if record.isRollback { bytes.append(contentsOf: ",\"b\":true".utf8) }
        if record.change > 0 {
          bytes.append(contentsOf: #","n":"#.utf8)
          JSONText.append(record.change, to: &bytes)
        }
        if record.elapsed > 0 {
          bytes.append(contentsOf: #","f":"#.utf8)
          JSONText.append(record.elapsed, to: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
      case .snapshot(let index, let models, let actions):
        bytes.append(contentsOf: "{\"k\":\"s\",\"i\":\(index),".utf8)
        let marks = Set(models.keys).union(actions.keys).sorted().compactMap { store -> (String, RedactionMark)? in
          let mark = mark(of: store)
          return mark.isEmpty ? nil : (store, mark)
        }
        if !marks.isEmpty {
          bytes.append(contentsOf: "\"p\":{".utf8)
          for (offset, (store, mark)) in marks.enumerated() {
            if offset > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONText.append(store, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            JSONText.append(mark.text, to: &bytes)
          }
          bytes.append(contentsOf: "},".utf8)
        }
        bytes.append(contentsOf: "\"m\":".utf8)
        try appendByStore(models, to: &bytes) { codec, store, model, bytes in
          try codec.encodeModel(store, try redacted(model, of: store), encoder, &bytes)
          try checkDepth(of: "model", store: store)
        }
        bytes.append(contentsOf: ",\"a\":".utf8)
        try appendByStore(actions, to: &bytes) { codec, store, action, bytes in
          try codec.encodeAction(store, try redacted(action, of: store), encoder, &bytes)
          try checkDepth(of: "action", store: store)
        }
        bytes.append(UInt8(ascii: "}"))
      case .effect(let dispatchID, let transactionID, let key, let outcome):
        // The numbers written as digits: an interpolated string of them would be made on the heap first.
        bytes.append(contentsOf: #"{"k":"e","d":"#.utf8)
        JSONText.append(dispatchID.rawValue, to: &bytes)
        if let transactionID {
          bytes.append(contentsOf: #","t":"#.utf8)
          JSONText.append(transactionID.rawValue, to: &bytes)
        }
        bytes.append(contentsOf: #","key":"#.utf8)
        JSONText.append(key, to: &bytes)
        switch outcome {
        case .value(let value):
          bytes.append(contentsOf: ",\"v\":".utf8)
          try encoder.encode(value, into: &bytes)
          try checkDepth(of: "effect \"\(key)\"", store: "")
        case .failure(let description):
          bytes.append(contentsOf: ",\"e\":".utf8)
          JSONText.append(description, to: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
      case .outcome(let transactionID, let store, let error, let cancelled):
        bytes.append(contentsOf: #"{"k":"o","t":"#.utf8)
        JSONText.append(transactionID.rawValue, to: &bytes)
        if let error {
          bytes.append(contentsOf: ",\"e\":".utf8)
          JSONText.append(text(of: error, store: store), to: &bytes)
        }
        if cancelled { bytes.append(contentsOf: ",\"c\":true".utf8) }
        bytes.append(UInt8(ascii: "}"))
      case .read(let transactionID, let store, let index):
        // Version 2 has no read lines: a recorder appending to such a file leaves them out. So does one whose codecs
        // or privacy settings leave out the store read: the header does not list it, and a line naming it would not
        // load.
        guard writesListForms, codecs.codecs[store] != nil, !privacy.excluded.contains(store) else { return }
        bytes.append(contentsOf: #"{"k":"w","i":"#.utf8)
        JSONText.append(index, to: &bytes)
        bytes.append(contentsOf: #","t":"#.utf8)
        JSONText.append(transactionID.rawValue, to: &bytes)
        bytes.append(contentsOf: ",\"s\":".utf8)
        JSONText.append(store, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
      }
      seal(&bytes, from: start)
    }

    /// A transaction's error as the file keeps it: its description; for a redacted store, which the description
    /// may give away (a password in a thrown value), its type only.
    private func text(of error: any Error, store: String) -> String {
      guard privacy.redactions[store] != nil else { return String(describing: error) }
      return SessionPrivacy.redactedDescription(of: error)
    }

    /// Throws if the value just encoded nests deeper than a session may hold (``maximumValueDepth``).
    private func checkDepth(of what: String, store: String) throws {
      guard encoder.lastDepth > SessionFormat.maximumValueDepth else { return }
      throw SessionError.encodingFailed(
        storeIdentifier: store,
        reason: "its \(what) nests \(encoder.lastDepth) levels of objects and arrays; a session holds at most "
          + "\(SessionFormat.maximumValueDepth), so that it reads back")
    }

    /// Appends `values` as a JSON object keyed by store, in store order, each value as `json` encodes it.
    private func appendByStore<Value>(
      _ values: [String: Value], to bytes: inout [UInt8],
      _ json: (SessionCodecs.Codec, String, Value, inout [UInt8]) throws -> Void
    ) throws {
      bytes.append(UInt8(ascii: "{"))
      for (offset, (store, value)) in values.sorted(by: { $0.key < $1.key }).enumerated() {
        if offset > 0 { bytes.append(UInt8(ascii: ",")) }
        JSONText.append(store, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        try json(codec(store), store, value, &bytes)
      }
      bytes.append(UInt8(ascii: "}"))
    }

    private func codec(_ store: String) throws -> SessionCodecs.Codec {
      guard let codec = codecs.codecs[store] else {
        throw SessionError.encodingFailed(storeIdentifier: store, reason: "no codec registered")
      }
      return codec
    }

    /// Appends the hash suffix and the newline to the JSON object that starts at `start`, and chains the hash.
    private mutating func seal(_ bytes: inout [UInt8], from start: Int) {
      let hash = bytes.withUnsafeBufferPointer { buffer in
        SessionHash.line(
          UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[start...])), previous: previousHash)
      }
      previousHash = hash
      bytes.removeLast()  // "}"
      SessionHash.appendSuffix(hash, to: &bytes)
      bytes.append(0x0A)
    }
  }

  /// A store identifier as a key of a snapshot's models.
  struct StoreKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) {
      self.stringValue = stringValue
    }

    init?(intValue: Int) {
      nil
    }
  }

  /// Writes a whole session file, `lines` after the header: creates it, or replaces a session file (or an empty
  /// one) at `url` atomically, under its lock (``SessionFile/replace(_:with:replacing:unlessChangedSince:)``); returns
  /// what the file holds then.
  @discardableResult
  static func write(
    _ lines: [Line], codecs: SessionCodecs, privacy: SessionPrivacy = SessionPrivacy(),
    marked: [String: RedactionMark] = [:], to url: URL, loaded: SessionFile.Fingerprint? = nil
  ) throws(SessionError) -> SessionFile.Fingerprint {
    var encoder = Encoder(codecs: codecs, privacy: privacy, marked: marked)
    var data = Data()
    do {
      data.append(try encoder.header())
      for line in lines { data.append(try encoder.encode(line)) }
    } catch let error as SessionError {
      throw error
    } catch {
      throw .encodingFailed(storeIdentifier: "", reason: "\(error)")
    }
    return try SessionFile.replace(url, with: data, replacing: .sessions, unlessChangedSince: loaded)
  }

  // MARK: - Decoding

  /// Decodes one line after the header; `codecs` travels in the decoder's user info.
  struct LineDecoding: Decodable {
    static let codecsKey = CodingUserInfoKey(rawValue: "DispatchStore.SessionCodecs")!
    let line: Line
    /// What the line does to the lists its store's next line rests on, applied by the session once the whole line
    /// has decoded (``ListDecoding/decoded(_:)``): a line that fails, and is read again, reads from the same base.
    let lists: ListDecoding.Outcome

    init(from decoder: any Decoder) throws {
      let container = try decoder.container(keyedBy: SessionLineKey.self)
      guard let codecs = decoder.userInfo[Self.codecsKey] as? SessionCodecs else {
        throw DecodingError.dataCorruptedError(forKey: .k, in: container, debugDescription: "no codecs")
      }
      switch try container.decode(String.self, forKey: .k) {
      case "m":
        line = .move(try container.decode(Int.self, forKey: .i))
        lists = .moved
      case "r":
        let store = try container.decode(String.self, forKey: .s)
        guard let codec = codecs.codecs[store] else { throw UnknownStore(identifier: store) }
        let transaction = TransactionID(rawValue: try container.decode(UInt64.self, forKey: .t))
        let dispatch = try container.decodeIfPresent(UInt64.self, forKey: .d).map(TransactionID.init) ?? transaction
        let index = try container.decode(Int.self, forKey: .i)
        // Format 3: the lists the line holds in their list forms, and the record line whose lists they change.
        let reading = decoder.userInfo[ListDecoding.key] as? ListDecoding
        let paths = try container.decodeIfPresent([[ListPath.Component]].self, forKey: .l) ?? []
        var base = LineLists.none
        let z = try container.decodeIfPresent(Int.self, forKey: .z)
        // The base loading checked, found right after the store: a "z" elsewhere in the line is not taken.
        if let reading, reading.indexedBase(index) != z { throw MissingBase(index: z ?? -1) }
        if let z {
          guard let latest = reading?.latest[store], latest.index == z else { throw MissingBase(index: z) }
          base = latest.lists
        }
        reading?.begin(modelDepth: decoder.codingPath.count + 1, paths: paths, base: base)
        let model = try codec.decodeModel(container, .m)
        let found = reading?.end() ?? .none
        let record = Record(
          index: index, dispatchID: dispatch, transactionID: transaction,
          storeIdentifier: store, action: try codec.decodeAction(container, .a), model: model,
          error: try container.decodeIfPresent(String.self, forKey: .e).map { RecordedError(description: $0) },
          wasCancelled: try container.decodeIfPresent(Bool.self, forKey: .c) ?? false,
          elapsed: try container.decodeIfPresent(UInt64.self, forKey: .f) ?? 0,
          changedModel: !(try container.decodeIfPresent(Bool.self, forKey: .u) ?? false),
          redaction: try container.decodeIfPresent(String.self, forKey: .p).flatMap(RedactionMark.init(text:))
            ?? RedactionMark(),
          change: try container.decodeIfPresent(UInt32.self, forKey: .n) ?? 0,
          isRollback: try container.decodeIfPresent(Bool.self, forKey: .b) ?? false)
        line = .record(record)
        self.lists = .record(store: store, index: index, lists: paths.isEmpty ? nil : found)
      case "s":
        let nested = try container.nestedContainer(keyedBy: StoreKey.self, forKey: .m)
        var models: [String: any ModelType] = [:]
        for key in nested.allKeys {
          guard let codec = codecs.codecs[key.stringValue] else { throw UnknownStore(identifier: key.stringValue) }
          models[key.stringValue] = try codec.decodeSnapshotModel(nested, key)
        }
        var actions: [String: any ActionType] = [:]
        if container.contains(.a) {
          let nested = try container.nestedContainer(keyedBy: StoreKey.self, forKey: .a)
          for key in nested.allKeys {
            guard let codec = codecs.codecs[key.stringValue] else { throw UnknownStore(identifier: key.stringValue) }
            actions[key.stringValue] = try codec.decodeSnapshotAction(nested, key)
          }
        }
        line = .snapshot(index: try container.decode(Int.self, forKey: .i), models: models, actions: actions)
        lists = .unchanged
      case "e":
        let outcome: EffectOutcome =
          container.contains(.v)
          ? .value(try container.decode(JSONValue.self, forKey: .v))
          : .failure(try container.decode(String.self, forKey: .e))
        line = .effect(
          dispatchID: TransactionID(rawValue: try container.decode(UInt64.self, forKey: .d)),
          transactionID: try container.decodeIfPresent(UInt64.self, forKey: .t).map(TransactionID.init(rawValue:)),
          key: try container.decode(String.self, forKey: .key), outcome: outcome)
        lists = .unchanged
      case "o":
        line = .outcome(
          transactionID: TransactionID(rawValue: try container.decode(UInt64.self, forKey: .t)), store: "",
          error: try container.decodeIfPresent(String.self, forKey: .e).map { RecordedError(description: $0) },
          cancelled: try container.decodeIfPresent(Bool.self, forKey: .c) ?? false)
        lists = .unchanged
      case "w":
        line = .read(
          transactionID: TransactionID(rawValue: try container.decode(UInt64.self, forKey: .t)),
          store: try container.decode(String.self, forKey: .s), index: try container.decode(Int.self, forKey: .i))
        lists = .unchanged
      case let kind:
        throw DecodingError.dataCorruptedError(
          forKey: .k, in: container, debugDescription: "unknown line kind \"\(kind)\"")
      }
    }
  }

  /// Decodes one version 1 line after the header: a record (its own dispatch) or a cursor move.
  struct LineDecodingV1: Decodable {
    let line: Line

    init(from decoder: any Decoder) throws {
      let container = try decoder.container(keyedBy: SessionLineKey.self)
      switch try container.decode(String.self, forKey: .kind) {
      case "cursor":
        line = .move(try container.decode(Int.self, forKey: .cursor))
      case "record":
        let store = try container.decode(String.self, forKey: .store)
        guard let codecs = decoder.userInfo[LineDecoding.codecsKey] as? SessionCodecs, let codec = codecs.codecs[store]
        else {
          throw UnknownStore(identifier: store)
        }
        let transaction = TransactionID(rawValue: try container.decode(UInt64.self, forKey: .transaction))
        line = .record(
          Record(
            index: try container.decode(Int.self, forKey: .index), dispatchID: transaction,
            transactionID: transaction, storeIdentifier: store, action: try codec.decodeAction(container, .action),
            model: try codec.decodeModel(container, .model)))
      case let kind:
        throw DecodingError.dataCorruptedError(
          forKey: .kind, in: container, debugDescription: "unknown line kind \"\(kind)\"")
      }
    }
  }

  struct UnknownStore: Error {
    let identifier: String
  }

  /// A record line names a base (`"z"`) whose lists were not decoded just before it, for its store.
  struct MissingBase: Error, CustomStringConvertible {
    let index: Int
    var description: String {
      "its lists' base \"z\": \(index) is not the store's previous record line holding lists"
    }
  }
}

/// The line hashes of format version 2: FNV-1a's step over 64-bit words, chained.
///
/// For a line whose JSON object, without its hash, has the bytes `b` (ending with its closing brace), after a line
/// hashed `p`: start at FNV's offset basis; take the step `h = (h ^ x) &* 0x100000001b3` for `x = p`, for each
/// 8 bytes of `b` read as a little-endian integer (the last ones padded with zeros), and for the count of `b`.
/// A word a step rather than a byte: eight times fewer multiplications, which loading a long session pays per
/// byte. Not a cryptographic hash (Foundation has none on Linux): it finds accidents and edits, not an attacker.
enum SessionHash {
  static let suffixLength = 24  // ,"h":"0123456789abcdef"}
  private static let basis: UInt64 = 0xcbf2_9ce4_8422_2325
  private static let prime: UInt64 = 0x100_0000_01b3

  /// The hash of a line whose object is `object`, followed by `closing` if given, after a line hashed `previous`.
  static func line(_ object: UnsafeRawBufferPointer, closing: UInt8? = nil, previous: UInt64) -> UInt64 {
    var hash = (basis ^ previous) &* prime
    let count = object.count
    var offset = 0
    while offset + 8 <= count {
      hash = (hash ^ UInt64(littleEndian: object.loadUnaligned(fromByteOffset: offset, as: UInt64.self))) &* prime
      offset += 8
    }
    var tail: UInt64 = 0
    var shift: UInt64 = 0
    while offset < count {
      tail |= UInt64(object[offset]) << shift
      shift += 8
      offset += 1
    }
    var length = count
    if let closing {
      // The closing brace completes the tail, or starts a word of its own.
      if shift == 64 {
        hash = (hash ^ tail) &* prime
        tail = 0
        shift = 0
      }
      tail |= UInt64(closing) << shift
      shift += 8
      length += 1
    }
    if shift > 0 { hash = (hash ^ tail) &* prime }
    return (hash ^ UInt64(length)) &* prime
  }

  /// Appends `,"h":"<16 hex digits>"}`.
  static func appendSuffix(_ hash: UInt64, to bytes: inout [UInt8]) {
    bytes.append(contentsOf: #","h":""#.utf8)
    for shift in stride(from: 60, through: 0, by: -4) {
      let digit = UInt8(truncatingIfNeeded: hash >> UInt64(shift)) & 0xF
      bytes.append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
    }
    bytes.append(contentsOf: #""}"#.utf8)
  }

  enum Check {
    case valid(UInt64)
    /// The line does not end in a hash.
    case missing
    /// The hash does not follow from the previous line's and this line's bytes.
    case mismatch
  }

  static let suffixStart = Array(",\"h\":\"".utf8)

  /// Checks the hash a line (without its newline) ends with, in place.
  static func check(_ line: UnsafeRawBufferPointer, previous: UInt64) -> Check {
    guard line.count > suffixLength + 1 else { return .missing }
    let start = line.count - suffixLength
    for offset in suffixStart.indices where line[start + offset] != suffixStart[offset] { return .missing }
    guard line[line.count - 2] == UInt8(ascii: "\""), line[line.count - 1] == UInt8(ascii: "}") else { return .missing }
    var carried: UInt64 = 0
    for offset in (start + 6)..<(start + 22) {
      let byte = line[offset]
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
      default: return .missing
      }
      carried = carried << 4 | UInt64(digit)
    }
    // The object without the hash: the bytes before the suffix, then its closing brace.
    let hash = Self.line(
      UnsafeRawBufferPointer(rebasing: line[..<start]), closing: UInt8(ascii: "}"), previous: previous)
    return hash == carried ? .valid(hash) : .mismatch
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
