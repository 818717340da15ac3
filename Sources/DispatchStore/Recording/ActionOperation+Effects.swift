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
    if let dispatcher = store.dispatcher, let replay = dispatcher.replay.withLock({ $0 }) as? SessionReplay {
      switch replay.playback.take(key) {
      case .success(let value): return .recorded(value)
      case .failure(let error): return .missing(error)
      }
    }
    // A store whose values the privacy settings leave out or redact keeps its effects out too.
    guard let hooked, let recorder = hooked.hook as? RecorderMiddleware,
      !recorder.privacy.leavesEffectsOut(of: store.identifier)
    else {
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
      recorder.fileEffect(
        dispatchID: hooked.dispatchID, transactionID: hooked.transactionID, key: key, outcome: outcome)
    }
  }
}
