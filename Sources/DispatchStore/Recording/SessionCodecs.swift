import Foundation

/// How each store's actions and models are written to and read from a session file, by store identifier.
///
/// ```swift
/// var codecs = SessionCodecs()
/// codecs.register(storeIdentifier: "todo", model: TodoList.self, action: TodoAction.self)
/// ```
public struct SessionCodecs: Sendable {
  struct Codec: Sendable {
    let modelTypeName: String
    let actionTypeName: String
    let encode: @Sendable (Record, inout KeyedEncodingContainer<SessionLineKey>) throws -> Void
    let decodeAction: @Sendable (KeyedDecodingContainer<SessionLineKey>) throws -> any ActionType
    let decodeModel: @Sendable (KeyedDecodingContainer<SessionLineKey>) throws -> any ModelType
    /// Compares two models of this store: `==` for `Equatable` models, otherwise their sorted-key JSON.
    let modelsEqual: @Sendable (any ModelType, any ModelType) -> Bool
    /// The model as sorted-key JSON, for divergence reports.
    let describeModel: @Sendable (any ModelType) -> String
  }

  private(set) var codecs: [String: Codec] = [:]

  /// Creates an empty set of codecs.
  public init() {}

  /// The identifiers of the stores with a codec, sorted.
  public var storeIdentifiers: [String] { codecs.keys.sorted() }

  /// Registers how the store `storeIdentifier` encodes; models are compared through their JSON on replay.
  /// - Parameters:
  ///   - storeIdentifier: The store's identifier.
  ///   - model: The store's model type.
  ///   - action: The store's action type.
  public mutating func register<Model: ModelType & Codable, Action: ActionType & Codable>(
    storeIdentifier: String, model: Model.Type, action: Action.Type
  ) {
    codecs[storeIdentifier] = Self.codec(model, action) { lhs, rhs in
      let encoder = JSONEncoder()
      encoder.outputFormatting = .sortedKeys
      return (try? encoder.encode(lhs)) == (try? encoder.encode(rhs))
    }
  }

  /// Registers how the store `storeIdentifier` encodes; models are compared with `==` on replay.
  /// - Parameters:
  ///   - storeIdentifier: The store's identifier.
  ///   - model: The store's model type.
  ///   - action: The store's action type.
  public mutating func register<Model: ModelType & Codable & Equatable, Action: ActionType & Codable>(
    storeIdentifier: String, model: Model.Type, action: Action.Type
  ) {
    codecs[storeIdentifier] = Self.codec(model, action) { $0 == $1 }
  }

  private static func codec<Model: ModelType & Codable, Action: ActionType & Codable>(
    _ model: Model.Type, _ action: Action.Type, equal: @escaping @Sendable (Model, Model) -> Bool
  ) -> Codec {
    Codec(
      modelTypeName: String(reflecting: Model.self),
      actionTypeName: String(reflecting: Action.self),
      encode: { record, container in
        guard let action = record.action as? Action, let model = record.model as? Model else {
          throw SessionError.encodingFailed(
            storeIdentifier: record.storeIdentifier,
            reason:
              "expected \(Action.self) and \(Model.self), got \(type(of: record.action)) and \(type(of: record.model))")
        }
        try container.encode(action, forKey: .action)
        try container.encode(model, forKey: .model)
      },
      decodeAction: { try $0.decode(Action.self, forKey: .action) },
      decodeModel: { try $0.decode(Model.self, forKey: .model) },
      modelsEqual: { lhs, rhs in
        guard let lhs = lhs as? Model, let rhs = rhs as? Model else { return false }
        return equal(lhs, rhs)
      },
      describeModel: { model in
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let model = model as? Model, let data = try? encoder.encode(model) else { return "\(model)" }
        return String(decoding: data, as: UTF8.self)
      })
  }
}
