import Foundation

// Recorded effects (proposal 0010): a value an operation fetches from outside (a response, the time, a random id)
// goes through the recorder, so that verifying a session reads it from the session instead of fetching it again.

extension ActionOperation {
  /// Runs `body` to fetch a value from outside the app (a network response, the time, a random identifier), and
  /// lets the recorder keep it, so that a recorded session re-runs exactly, offline.
  ///
  /// ```swift
  /// ActionOperation(action: action, store: store) { operation in
  ///   let user = try await operation.effect("user \(id)") { try await api.user(id) }
  ///   operation.updateModel { $0.user = user }
  /// }
  /// ```
  ///
  /// - While a recorder records the dispatch, `body` runs and its value is written to the session under the
  ///   dispatch and `key`.
  /// - While ``Session/verify(against:mode:)`` re-runs the session, `body` does not run: the recorded value is
  ///   returned. A key the session has no value for fails the verification with ``ReplayError/missingEffect(dispatchID:key:)``.
  /// - Otherwise `body` runs, and nothing is kept.
  /// - Parameters:
  ///   - key: Names the value within the dispatch; use one per distinct value (a key used twice is read back in
  ///     the same order).
  ///   - body: Fetches the value.
  /// - Returns: The value, fetched or read back.
  /// - Throws: What `body` throws; while verifying, ``ReplayError/missingEffect(dispatchID:key:)`` if the session
  ///   has no value for `key`, or the decoding error if it does not decode as `Value`.
  public func effect<Value: Codable & Sendable>(
    _ key: String, _ body: () async throws -> Value
  ) async throws -> Value {
    switch effectSource(key) {
    case .recorded(let value): return try value.decode(Value.self)
    case .missing(let error): throw error
    case .live(let record):
      let value = try await body()
      record(value)
      return value
    }
  }

  /// `effect(_:_:)` for a value fetched without waiting (the time, a random identifier).
  /// - Parameters:
  ///   - key: Names the value within the dispatch.
  ///   - body: Fetches the value.
  /// - Returns: The value, fetched or read back.
  /// - Throws: What `body` throws; while verifying, ``ReplayError/missingEffect(dispatchID:key:)`` if the session
  ///   has no value for `key`.
  public func effect<Value: Codable & Sendable>(_ key: String, _ body: () throws -> Value) throws -> Value {
    switch effectSource(key) {
    case .recorded(let value): return try value.decode(Value.self)
    case .missing(let error): throw error
    case .live(let record):
      let value = try body()
      record(value)
      return value
    }
  }

  private enum EffectSource {
    case recorded(JSONValue)
    case missing(ReplayError)
    /// Fetch it; the closure keeps the value, if a recorder records the dispatch.
    case live(@Sendable (any Encodable & Sendable) -> Void)
  }

  private func effectSource(_ key: String) -> EffectSource {
    if let dispatcher = store.dispatcher, let playback = dispatcher.effectPlayback.withLock({ $0 }) {
      switch playback.take(key) {
      case .success(let value): return .recorded(value)
      case .failure(let error): return .missing(error)
      }
    }
    guard let context = recordingContext else { return .live { _ in } }
    return .live { value in
      // Encoded here, on the operation's thread and under no lock: it is the app's `Codable` code.
      guard let tree = try? JSONValue(encoding: value) else { return }
      context.recorder.fileEffect(dispatchID: context.dispatchID, key: key, value: tree)
    }
  }
}

/// The effects of a session being verified: each read once, in order, by the dispatch and key they were recorded
/// under.
final class EffectPlayback: Sendable {
  private struct State {
    var effects: [TransactionID: [(key: String, value: JSONValue)]]
    var current: TransactionID?
    var missing: ReplayError?
  }

  private let state: LockedValue<State>

  init(effects: [TransactionID: [(key: String, value: JSONValue)]]) {
    state = LockedValue(State(effects: effects))
  }

  /// The dispatch being re-run: effects are read from its recording.
  func begin(_ dispatchID: TransactionID) {
    state.withLock { $0.current = dispatchID }
  }

  /// Takes the next value recorded under `key` in the current dispatch.
  func take(_ key: String) -> Result<JSONValue, ReplayError> {
    state.withLock { state in
      guard let dispatch = state.current,
        let position = state.effects[dispatch]?.firstIndex(where: { $0.key == key }),
        let value = state.effects[dispatch]?.remove(at: position).value
      else {
        let error = ReplayError.missingEffect(dispatchID: state.current ?? TransactionID(rawValue: 0), key: key)
        if state.missing == nil { state.missing = error }
        return .failure(error)
      }
      return .success(value)
    }
  }

  /// The first effect an operation asked for that the session does not have.
  var missing: ReplayError? {
    state.withLock { $0.missing }
  }

  /// A value recorded in `dispatchID` that no operation read.
  func unused(in dispatchID: TransactionID) -> ReplayError? {
    state.withLock { state in
      guard let first = state.effects[dispatchID]?.first else { return nil }
      return .unusedEffect(dispatchID: dispatchID, key: first.key)
    }
  }
}
