import Dispatch
import Foundation

/// A recorded session read from a file: the history of records and the position the recorder was at.
///
/// ```swift
/// let session = try Session.load(from: url, codecs: codecs)
/// try session.replay(into: dispatcher)  // a fresh dispatcher with the same stores registered
/// ```
public struct Session: Sendable {
  /// The stores the file's header lists.
  public let storeIdentifiers: [String]
  /// The history, oldest first: what a recorder held when the file was last written.
  public let records: [Record]
  /// The index of the current record; -1 when the recorder had moved before the first one.
  public let cursor: Int
  /// The line number of an incomplete last line that was ignored (the writing process died mid-write), if any.
  public let truncatedLine: Int?
  /// The codecs the session was read with.
  public let codecs: SessionCodecs
  /// The length of the file's complete lines, in bytes; what an appending writer keeps.
  let completeByteCount: Int

  /// Reads and validates a whole session file; nothing is applied anywhere.
  ///
  /// An incomplete last line is not an error: every complete record loads and ``truncatedLine`` names it.
  /// - Parameters:
  ///   - url: The session file.
  ///   - codecs: How each store's actions and models decode.
  /// - Returns: The session.
  /// - Throws: ``SessionError`` naming the first bad line: corrupt JSON, an unknown store, an unsupported format
  ///   version, a type mismatch or an impossible position.
  public static func load(from url: URL, codecs: SessionCodecs) throws(SessionError) -> Session {
    let data: Data
    do {
      data = try Data(contentsOf: url)
    } catch {
      throw .io(path: url.path, reason: error.localizedDescription)
    }
    return try parse(data, path: url.path, codecs: codecs)
  }

  static func parse(_ data: Data, path: String, codecs: SessionCodecs) throws(SessionError) -> Session {
    var lines = data.split(separator: 0x0A, omittingEmptySubsequences: false)
    // A file ends with "\n"; whatever follows the last one is a line the writer did not finish.
    let tail = lines.removeLast()
    let truncatedLine = tail.isEmpty ? nil : lines.count + 1
    let completeByteCount = data.count - tail.count
    // No complete line at all: not even the header was written.
    guard let headerLine = lines.first else { throw .missingHeader(path: path) }
    let headerStores = try validateHeader(Data(headerLine), path: path, codecs: codecs)

    let decoder = JSONDecoder()
    decoder.userInfo[SessionFormat.LineDecoding.codecsKey] = codecs
    var records: [Record] = []
    var cursor = -1
    for (offset, line) in lines.dropFirst().enumerated() {
      let number = offset + 2
      let decoded: SessionFormat.Line
      do {
        decoded = try decoder.decode(SessionFormat.LineDecoding.self, from: Data(line)).line
      } catch let error as SessionFormat.UnknownStore {
        throw .unknownStore(identifier: error.identifier, line: number)
      } catch let error as DecodingError {
        throw .corruptLine(line: number, reason: error.shortDescription)
      } catch {
        throw .corruptLine(line: number, reason: "\(error)")
      }
      switch decoded {
      case .record(let record):
        guard headerStores.contains(record.storeIdentifier) else {
          throw .unknownStore(identifier: record.storeIdentifier, line: number)
        }
        guard record.index >= 0, record.index <= records.count else { throw .invalidIndex(record.index, line: number) }
        records.removeSubrange(record.index...)
        records.append(record)
        cursor = record.index
      case .cursor(let position):
        guard position >= -1, position < records.count else { throw .invalidIndex(position, line: number) }
        cursor = position
      }
    }
    return Session(
      storeIdentifiers: headerStores.sorted(), records: records, cursor: cursor, truncatedLine: truncatedLine,
      codecs: codecs, completeByteCount: completeByteCount)
  }

  private struct Version: Decodable {
    let format: String
    let version: Int
  }

  /// Checks the header line and returns the stores it lists.
  private static func validateHeader(_ line: Data, path: String, codecs: SessionCodecs) throws(SessionError) -> Set<
    String
  > {
    guard let version = try? JSONDecoder().decode(Version.self, from: line), version.format == SessionFormat.name
    else {
      throw .missingHeader(path: path)
    }
    guard version.version == SessionFormat.version else {
      throw .unsupportedVersion(found: version.version, supported: SessionFormat.version, line: 1)
    }
    let header: SessionFormat.Header
    do {
      header = try JSONDecoder().decode(SessionFormat.Header.self, from: line)
    } catch let error as DecodingError {
      throw .corruptLine(line: 1, reason: error.shortDescription)
    } catch {
      throw .corruptLine(line: 1, reason: "\(error)")
    }
    for store in header.stores {
      guard let codec = codecs.codecs[store.identifier] else {
        throw .unknownStore(identifier: store.identifier, line: 1)
      }
      if codec.modelTypeName != store.model {
        throw .typeMismatch(
          storeIdentifier: store.identifier, recorded: store.model, registered: codec.modelTypeName, line: 1)
      }
      if codec.actionTypeName != store.action {
        throw .typeMismatch(
          storeIdentifier: store.identifier, recorded: store.action, registered: codec.actionTypeName, line: 1)
      }
    }
    return Set(header.stores.map(\.identifier))
  }

  /// Re-dispatches every record's action to its store, in order, and checks each store's model after each step.
  ///
  /// Replay into a fresh dispatcher whose stores start from the models the recording started from. Each action
  /// goes to the one store that recorded it.
  /// - Parameters:
  ///   - dispatcher: The dispatcher to replay into.
  ///   - mode: How each action is dispatched; `.sync` by default, the fastest.
  /// - Throws: ``ReplayError`` at the first record that fails or whose model differs from the recorded one.
  ///
  /// > Important: This blocks until each dispatch finished; do not call it on the thread a mode needs
  /// > (the main run-loop thread for `.mainThread`).
  public func replay(into dispatcher: Dispatcher, mode: Dispatcher.Mode = .sync) throws(ReplayError) {
    for record in records {
      guard let store = dispatcher.store(with: record.storeIdentifier) else {
        throw .unknownStore(index: record.index, storeIdentifier: record.storeIdentifier)
      }
      let result = Self.dispatchAndWait(record.action, to: record.storeIdentifier, in: dispatcher, mode: mode)
      if case .failure(let error) = result {
        throw .dispatchFailed(
          index: record.index, storeIdentifier: record.storeIdentifier, action: "\(record.action)", error: error)
      }
      let actual = store.anyModel
      guard let codec = codecs.codecs[record.storeIdentifier], codec.modelsEqual(record.model, actual) else {
        let describe = codecs.codecs[record.storeIdentifier]?.describeModel ?? { "\($0)" }
        throw .diverged(
          index: record.index, storeIdentifier: record.storeIdentifier, action: "\(record.action)",
          expected: describe(record.model), actual: describe(actual))
      }
    }
  }

  private static func dispatchAndWait<Action: ActionType>(
    _ action: Action, to storeIdentifier: String, in dispatcher: Dispatcher, mode: Dispatcher.Mode
  ) -> Result<Void, DispatchError> {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox()
    dispatcher.dispatch(storeIdentifier: storeIdentifier, action: action, mode: mode) { result in
      box.result = result
      done.signal()
    }
    done.wait()
    return box.result ?? .success(())
  }
}

/// Carries a dispatch result to the thread waiting on the semaphore.
///
/// `@unchecked Sendable`: written once before `signal()` and read after `wait()`, which orders the two.
private final class ResultBox: @unchecked Sendable {
  var result: Result<Void, DispatchError>?
}
