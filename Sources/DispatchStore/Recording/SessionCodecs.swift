import Foundation

/// How each store's actions and models are written to and read from a session file, by store identifier.
///
/// ```swift
/// var codecs = SessionCodecs()
/// codecs.register(storeIdentifier: "todo", model: TodoList.self, action: TodoAction.self)
/// ```
public struct SessionCodecs: Sendable {
  typealias LineReader = KeyedDecodingContainer<SessionLineKey>
  typealias StoreReader = KeyedDecodingContainer<SessionFormat.StoreKey>

  struct Codec: Sendable {
    let modelTypeName: String
    let actionTypeName: String
    /// Appends the action's JSON; the encoder is the caller's (the writer's), reused.
    let encodeAction: @Sendable (String, any ActionType, JSONStreamEncoder, inout [UInt8]) throws -> Void
    /// Appends the model's JSON.
    let encodeModel: @Sendable (String, any ModelType, JSONStreamEncoder, inout [UInt8]) throws -> Void
    let decodeAction: @Sendable (LineReader, SessionLineKey) throws -> any ActionType
    /// An action from its JSON alone; the decoder is the caller's, reused.
    let decodeActionJSON: @Sendable (Data, JSONDecoder) throws -> any ActionType
    /// An action from its JSON alone by ``JSONStreamDecoder``; `nil` where that one refuses or fails (then
    /// `decodeActionJSON` decodes it and names any error).
    let decodeActionBytes: @Sendable (UnsafeRawBufferPointer) -> (any ActionType)?
    let decodeModel: @Sendable (LineReader, SessionLineKey) throws -> any ModelType
    let decodeSnapshotModel: @Sendable (StoreReader, SessionFormat.StoreKey) throws -> any ModelType
    let decodeSnapshotAction: @Sendable (StoreReader, SessionFormat.StoreKey) throws -> any ActionType
    /// Compares two models of this store: `==` for `Equatable` models, otherwise their sorted-key JSON.
    let modelsEqual: @Sendable (any ModelType, any ModelType) -> Bool
    /// The model as a JSON tree, for divergence reports and the inspector.
    let modelTree: @Sendable (any ModelType) -> JSONValue?
    /// The action as a JSON tree, for the inspector.
    let actionTree: @Sendable (any ActionType) -> JSONValue?
  }

  private(set) var codecs: [String: Codec] = [:]

  /// Creates an empty set of codecs.
  public init() {}

  /// The identifiers of the stores with a codec, sorted.
  var storeIdentifiers: [String] { codecs.keys.sorted() }

  /// Registers how the store `storeIdentifier` encodes.
  ///
  /// On replay, models are compared with `==` when the model type is `Equatable`, otherwise through their JSON.
  /// - Parameters:
  ///   - storeIdentifier: The store's identifier.
  ///   - model: The store's model type.
  ///   - action: The store's action type.
  public mutating func register<Model: ModelType & Codable, Action: ActionType & Codable>(
    storeIdentifier: String, model: Model.Type, action: Action.Type
  ) {
    codecs[storeIdentifier] = Self.codec(model, action, equal: Self.equality(of: model))
  }

  /// `==` for an `Equatable` model type, found once, at registration; otherwise a comparison of sorted-key JSON.
  private static func equality<Model: ModelType & Codable>(of _: Model.Type) -> @Sendable (Model, Model) -> Bool {
    if let equatable = Model.self as? any (Equatable & Sendable).Type {
      func compare<E: Equatable & Sendable>(_: E.Type) -> @Sendable (Model, Model) -> Bool {
        { lhs, rhs in (lhs as? E) == (rhs as? E) }
      }
      return compare(equatable)
    }
    return { lhs, rhs in
      let encoder = JSONEncoder()
      encoder.outputFormatting = .sortedKeys
      return (try? encoder.encode(lhs)) == (try? encoder.encode(rhs))
    }
  }

  private static func mismatch(_ store: String, _ expected: Any.Type, _ found: Any) -> SessionError {
    .encodingFailed(storeIdentifier: store, reason: "expected \(expected), got \(type(of: found))")
  }

  /// `found`, which should be a `Wanted`, as one.
  ///
  /// Its type compared, not cast with `as?`: unspecialised, a cast's `Optional<Wanted>` looks up that type's metadata
  /// on every call, once or twice per record written or compared.
  /// - Throws: ``SessionError/encodingFailed(storeIdentifier:reason:)`` if it is not one.
  @inline(__always)
  private static func value<Found, Wanted>(_ found: Found, as _: Wanted.Type, store: String) throws(SessionError)
    -> Wanted
  {
    if Found.self == Wanted.self { return unsafeBitCast(found, to: Wanted.self) }
    return try cast(found, as: Wanted.self, store: store)
  }

  /// ``value(_:as:store:)`` for another type than `Wanted`: a subclass, or a mismatch.
  @inline(never)
  private static func cast<Found, Wanted>(_ found: Found, as _: Wanted.Type, store: String) throws(SessionError)
    -> Wanted
  {
    guard let wanted = found as? Wanted else { throw mismatch(store, Wanted.self, found) }
    return wanted
  }

  private static func codec<Model: ModelType & Codable, Action: ActionType & Codable>(
    _ model: Model.Type, _ action: Action.Type, equal: @escaping @Sendable (Model, Model) -> Bool
  ) -> Codec {
    Codec(
      modelTypeName: String(reflecting: Model.self),
      actionTypeName: String(reflecting: Action.self),
      // The value opened, so that its type is compared (``value(_:as:store:)``).
      encodeAction: { store, action, encoder, bytes in
        func encode<Found: ActionType>(_ found: Found) throws {
          try encoder.encode(try Self.value(found, as: Action.self, store: store), into: &bytes)
        }
        try encode(action)
      },
      encodeModel: { store, model, encoder, bytes in
        func encode<Found: ModelType>(_ found: Found) throws {
          try encoder.encode(try Self.value(found, as: Model.self, store: store), into: &bytes)
        }
        try encode(model)
      },
      decodeAction: { try $0.decode(Action.self, forKey: $1) },
      decodeActionJSON: { try $1.decode(Action.self, from: $0) },
      decodeActionBytes: { (try? JSONStreamDecoder.decode(Action.self, from: $0, userInfo: [:])) ?? nil },
      decodeModel: { try $0.decode(Model.self, forKey: $1) },
      decodeSnapshotModel: { try $0.decode(Model.self, forKey: $1) },
      decodeSnapshotAction: { try $0.decode(Action.self, forKey: $1) },
      modelsEqual: { lhs, rhs in
        guard let lhs = lhs as? Model, let rhs = rhs as? Model else { return false }
        return equal(lhs, rhs)
      },
      modelTree: { model in (model as? Model).flatMap { try? JSONValue(encoding: $0) } },
      actionTree: { action in (action as? Action).flatMap { try? JSONValue(encoding: $0) } })
  }
}

extension SessionCodecs.Codec {
  /// The fields where `actual` differs from `expected`, by their JSON; the whole models where they are equal as JSON
  /// but not with `==` (the difference is then in what the encoding leaves out).
  func differences(expected: any ModelType, actual: any ModelType) -> [FieldDifference] {
    let differences = JSONValue.differences(expected: modelTree(expected), actual: modelTree(actual))
    guard differences.isEmpty else { return differences }
    return [FieldDifference(path: "", expected: "\(expected)", actual: "\(actual)")]
  }
}
