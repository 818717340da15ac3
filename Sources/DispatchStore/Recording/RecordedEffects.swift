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
  /// - While a recorder records the dispatch, `body` runs and its value, or the error it throws, is written to the
  ///   session under the dispatch and `key`.
  /// - While ``Session/verify(against:mode:)`` re-runs the session, `body` does not run: the recorded value is
  ///   returned, or a recorded error is thrown again as a ``RecordedError``. A key the session has nothing
  ///   for fails the verification with ``SessionError/missingEffect(dispatchID:key:)``.
  /// - Otherwise `body` runs, and nothing is kept.
  /// - Parameters:
  ///   - key: Names the value within the dispatch; use one per distinct value (a key used twice is read back in
  ///     the same order).
  ///   - body: Fetches the value.
  /// - Returns: The value, fetched or read back.
  /// - Throws: What `body` throws; while verifying, the ``RecordedError`` of a fetch that threw,
  ///   ``SessionError/missingEffect(dispatchID:key:)`` if the session has nothing for `key`, or the decoding error if
  ///   its value does not decode as `Value`.
  public func effect<Value: Codable & Sendable>(
    _ key: String, _ body: () async throws -> Value
  ) async throws -> Value {
    switch effectSource(key) {
    case .recorded(.value(let value)): return try value.decode(Value.self)
    case .recorded(.failure(let description)): throw RecordedError(description: description, effectKey: key)
    case .missing(let error): throw error
    case .live(let record):
      do {
        let value = try await body()
        record(.success(value))
        return value
      } catch {
        record(.failure(error))
        throw error
      }
    }
  }

  /// `effect(_:_:)` for a value fetched without waiting (the time, a random identifier).
  /// - Parameters:
  ///   - key: Names the value within the dispatch.
  ///   - body: Fetches the value.
  /// - Returns: The value, fetched or read back.
  /// - Throws: What `body` throws; while verifying, the ``RecordedError`` of a fetch that threw, or
  ///   ``SessionError/missingEffect(dispatchID:key:)`` if the session has nothing for `key`.
  public func effect<Value: Codable & Sendable>(_ key: String, _ body: () throws -> Value) throws -> Value {
    switch effectSource(key) {
    case .recorded(.value(let value)): return try value.decode(Value.self)
    case .recorded(.failure(let description)): throw RecordedError(description: description, effectKey: key)
    case .missing(let error): throw error
    case .live(let record):
      do {
        let value = try body()
        record(.success(value))
        return value
      } catch {
        record(.failure(error))
        throw error
      }
    }
  }

  private enum EffectSource {
    case recorded(EffectOutcome)
    case missing(SessionError)
    /// Fetch it; the closure keeps what the fetch gave, if a recorder records the dispatch.
    case live(@Sendable (Result<any Encodable & Sendable, any Error>) -> Void)
  }

  private func effectSource(_ key: String) -> EffectSource {
    if let dispatcher = store.dispatcher, let playback = dispatcher.effectPlayback.withLock({ $0 }) {
      switch playback.take(key) {
      case .success(let value): return .recorded(value)
      case .failure(let error): return .missing(error)
      }
    }
    // A store whose values the privacy settings leave out or redact keeps its effects out too.
    guard let context = recordingContext, !context.recorder.privacy.leavesEffectsOut(of: store.identifier) else {
      return .live { _ in }
    }
    return .live { result in
      let outcome: EffectOutcome
      switch result {
      case .success(let value):
        // Encoded here, on the operation's thread and under no lock: it is the app's `Codable` code.
        guard let tree = try? JSONValue(encoding: value) else { return }
        outcome = .value(tree)
      case .failure(let error):
        outcome = .failure(String(describing: error))
      }
      context.recorder.fileEffect(dispatchID: context.dispatchID, key: key, outcome: outcome)
    }
  }
}

/// What an effect's body gave while it was recorded: the value it returned, or the description of the error it threw.
enum EffectOutcome: Sendable {
  case value(JSONValue)
  case failure(String)
}

/// The effects of a session being verified: each read once, in order, by the dispatch and key they were recorded
/// under.
final class EffectPlayback: Sendable {
  private struct State {
    var effects: [TransactionID: [(key: String, outcome: EffectOutcome)]]
    var current: TransactionID?
    var missing: SessionError?
  }

  private let state: LockedValue<State>

  init(effects: [TransactionID: [(key: String, outcome: EffectOutcome)]]) {
    state = LockedValue(State(effects: effects))
  }

  /// The dispatch being re-run: effects are read from its recording.
  func begin(_ dispatchID: TransactionID) {
    state.withLock { $0.current = dispatchID }
  }

  /// Takes the next value recorded under `key` in the current dispatch.
  func take(_ key: String) -> Result<EffectOutcome, SessionError> {
    state.withLock { state in
      guard let dispatch = state.current,
        let position = state.effects[dispatch]?.firstIndex(where: { $0.key == key }),
        let outcome = state.effects[dispatch]?.remove(at: position).outcome
      else {
        let error = SessionError.missingEffect(dispatchID: state.current ?? TransactionID(rawValue: 0), key: key)
        if state.missing == nil { state.missing = error }
        return .failure(error)
      }
      return .success(outcome)
    }
  }

  /// The first effect an operation asked for that the session does not have.
  var missing: SessionError? {
    state.withLock { $0.missing }
  }

  /// Forgets the missing effect of a transaction verify does not hold to its record (a cancelled one).
  func forgetMissing() {
    state.withLock { $0.missing = nil }
  }

  /// A value recorded in `dispatchID` that no operation read.
  func unused(in dispatchID: TransactionID) -> SessionError? {
    state.withLock { state in
      guard let first = state.effects[dispatchID]?.first else { return nil }
      return .unusedEffect(dispatchID: dispatchID, key: first.key)
    }
  }
}
