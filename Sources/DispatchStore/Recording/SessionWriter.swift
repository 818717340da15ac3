import Foundation

/// Appends session lines to a file in the order the recorder numbered them.
///
/// Lines are encoded by the caller without any lock (encoding runs the app's `Codable` code), then handed over
/// with their sequence number; the writer writes each as soon as every earlier one is written. Each line is one
/// `write` to a file opened for appending, so a crash leaves at most the last line incomplete.
final class SessionWriter: Sendable {
  private struct State {
    var nextSequence = 0
    var waiting: [Int: Data] = [:]
    var failure: SessionError?
  }

  let path: String
  private let handle: FileHandle
  private let state = LockedValue(State())

  /// Opens `url` for appending.
  ///
  /// Writes the header to a new or empty file; otherwise validates the whole file and drops an incomplete last
  /// line. A corrupt file is left untouched.
  init(appendingTo url: URL, codecs: SessionCodecs) throws(SessionError) {
    path = url.path
    let manager = FileManager.default
    let existing = (try? Data(contentsOf: url)) ?? Data()
    if existing.isEmpty {
      let header: Data
      do {
        header = try SessionFormat.encodeHeader(SessionFormat.header(for: codecs))
      } catch {
        throw .encodingFailed(storeIdentifier: "", reason: "\(error)")
      }
      guard manager.createFile(atPath: url.path, contents: header) else {
        throw .io(path: url.path, reason: "cannot create the file")
      }
    } else {
      let session = try Session.parse(existing, path: url.path, codecs: codecs)
      let expected = SessionFormat.header(for: codecs).stores.map(\.identifier)
      if let missing = expected.first(where: { !session.storeIdentifiers.contains($0) }) {
        throw .unknownStore(identifier: missing, line: 1)
      }
      if session.truncatedLine != nil {
        do {
          let repair = try FileHandle(forWritingTo: url)
          try repair.truncate(atOffset: UInt64(session.completeByteCount))
          try repair.close()
        } catch {
          throw .io(path: url.path, reason: error.localizedDescription)
        }
      }
    }
    do {
      handle = try FileHandle(forWritingTo: url)
      try handle.seekToEnd()
    } catch {
      throw .io(path: url.path, reason: error.localizedDescription)
    }
  }

  deinit {
    try? handle.close()
  }

  /// The first write failure; after one, nothing more is written, so the file stays a valid prefix.
  var failure: SessionError? {
    state.withLock { $0.failure }
  }

  /// Writes `line` once every line with a smaller sequence number is written; `nil` marks a line that could not
  /// be encoded (`failure` then says why).
  func write(_ line: Result<Data, SessionError>, sequence: Int) {
    state.withLock { state in
      guard state.failure == nil else { return }
      switch line {
      case .success(let data): state.waiting[sequence] = data
      case .failure(let error):
        state.failure = error
        return
      }
      // File I/O under this lock keeps the order; no user code runs here.
      while let data = state.waiting.removeValue(forKey: state.nextSequence) {
        do {
          try handle.write(contentsOf: data)
        } catch {
          state.failure = .io(path: path, reason: error.localizedDescription)
          return
        }
        state.nextSequence += 1
      }
    }
  }
}
