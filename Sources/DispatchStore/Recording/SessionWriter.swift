import Dispatch
import Foundation
import Synchronization

/// How soon recorded lines reach the session file (``RecorderMiddleware/attach(appendingTo:codecs:syncEachRecord:)``).
///
/// Either way, lines are encoded and written on the recorder's writer thread, in the order they were recorded, and
/// each is one `write`, so that after a crash the file holds a valid prefix of the session.
enum SessionDurability: Sendable, Hashable {
  /// Each record is written and synced (`fsync`) before its dispatch completes: a dispatch that completed is on disk,
  /// and a crash loses none of them. The dispatching thread waits for the writer's sync.
  case eachRecord
  /// The writer writes lines in batches: once many are waiting, at least every few tens of milliseconds, on
  /// ``RecorderMiddleware/flush()``, when the recorder is released, and when the process exits normally.
  case buffered
}

/// Where a writer takes its lines from: the recorder, which queues them under its own lock.
protocol SessionLineSource: AnyObject, Sendable {
  /// Takes the lines queued so far, in order.
  ///
  /// Only for the writer the source currently writes to (`writer`, ``SessionWriter/identity``): a writer the
  /// recorder replaced (``RecorderMiddleware/attach(appendingTo:codecs:syncEachRecord:)``) gets nothing more, so that
  /// the lines queued for the new file never reach the old one.
  func takeLines(for writer: ObjectIdentifier) -> [SessionFormat.Line]
  /// Whether lines are queued.
  func hasLines(for writer: ObjectIdentifier) -> Bool
  /// Waits until the lines queued so far are written (at exit).
  func flush()
}

/// Appends session lines to a file on a thread of its own, in the order the recorder queued them.
///
/// The recorder queues lines in its own state, under the lock it holds anyway to record (in the stores' critical
/// sections: an append, nothing more); the writer thread takes them in batches, encodes them (the app's
/// `Codable` code, under no lock), chains their hashes and writes them.
final class SessionWriter: Sendable {
  let path: String
  let durability: SessionDurability
  /// Whether the file held no session lines yet (new, empty or only a header): the recorder writes its history.
  let startedEmpty: Bool
  /// What the file holds, and its last line's hash, if opening it wrote it again to list stores the app added.
  let rewritten: (file: SessionFile.Fingerprint, lastHash: UInt64)?
  private let loop: WriterLoop

  /// Lines waiting before a sleeping buffered writer is woken.
  static let batch = 256
  /// Lines waiting past which the recording thread waits for the writer.
  static let backlog = 1 << 16

  /// Where a file appended to must end: before the recorder's next record, and at the line and cursor of the file
  /// the recorder took its history from (`file`; `nil` if it took none, or changed it since: then only a file without
  /// records will do).
  struct AppendingPoint: Equatable {
    let nextIndex: Int
    let file: (lastHash: UInt64, cursor: Int)?

    static func == (lhs: Self, rhs: Self) -> Bool {
      lhs.nextIndex == rhs.nextIndex && lhs.file?.lastHash == rhs.file?.lastHash
        && lhs.file?.cursor == rhs.file?.cursor
    }
  }

  /// Opens `url` for appending, and holds its lock until the writer is closed.
  ///
  /// A missing file is created with its header, whole. A file that holds only a header (or nothing: one made by
  /// hand, which gets its header now) is a new session, to which the recorder writes its history. Any other file
  /// must be a version 2 or 3 session for `codecs` whose history is the recorder's: it ends at `point`'s line, with
  /// its cursor; an incomplete last line is dropped. If `codecs` has stores the file's header lacks (the app added
  /// them), the file is written again with a header that lists them (proposal 0025). A file that fails any check is
  /// left as it was, unlocked.
  /// - Parameter point: Where the file's history must end.
  init(
    appendingTo url: URL, codecs: SessionCodecs, privacy: SessionPrivacy = SessionPrivacy(),
    durability: SessionDurability, at point: AppendingPoint
  ) throws(SessionError) {
    path = url.path
    self.durability = durability
    var encoder = SessionFormat.Encoder(codecs: codecs, privacy: privacy)
    let header: Data
    do {
      var headerEncoder = encoder
      header = try headerEncoder.header()
    } catch {
      throw .encodingFailed(storeIdentifier: "", reason: "\(error)")
    }
    var (handle, contents) = try SessionFile.openForAppending(url, creatingWith: header)
    var headerOnly = false
    var rewrote: (file: SessionFile.Fingerprint, lastHash: UInt64)?
    do throws(SessionError) {
      var existing = contents
      if existing.isEmpty {
        try Self.perform(at: url) {
          try handle.write(contentsOf: header)
          try handle.synchronize()
        }
        existing = header
      }
      let session = try Session.parse(existing, path: url.path, codecs: codecs)
      // A version 2 file gets version 2 lines: its lists are written as plain arrays.
      guard session.formatVersion >= 2 else {
        throw .unsupportedVersion(found: session.formatVersion, supported: SessionFormat.version, line: 1)
      }
      encoder.writesListForms = session.formatVersion >= 3
      // Stores the app added since the file was written: its header is written again to list them.
      let added = SessionFormat.header(for: codecs, excluding: privacy.excluded).stores.filter {
        !session.storeIdentifiers.contains($0.identifier)
      }
      headerOnly = session.completeByteCount == (existing.firstIndex(of: UInt8(ascii: "\n")) ?? -1) + 1
      // The recorder's history, not only as long: another recorder may have moved the file's cursor, or filed a
      // record in place of one this recorder holds, since this one took the history over.
      guard
        headerOnly
          || (session.nextIndex == point.nextIndex && session.lastHash == point.file?.lastHash
            && session.cursor == point.file?.cursor)
      else {
        throw .historyMismatch(fileRecords: session.nextIndex, recorderRecords: point.nextIndex)
      }
      if !added.isEmpty {
        // The file's header, its stores then the added ones; every other complete line as it is, hashed anew.
        let firstLine = existing.prefix { $0 != UInt8(ascii: "\n") }
        guard let fileHeader = try? JSONDecoder().decode(SessionFormat.Header.self, from: firstLine) else {
          throw .missingHeader(path: url.path)
        }
        let rewritten: Data
        do {
          rewritten = try encoder.rehashing(
            existing, completeByteCount: session.completeByteCount,
            header: SessionFormat.Header(
              format: fileHeader.format, version: fileHeader.version, stores: fileHeader.stores + added))
        } catch {
          throw .encodingFailed(storeIdentifier: "", reason: "\(error)")
        }
        let rewrittenHandle = try SessionFile.rewrite(url, lockedAs: handle.fileDescriptor, with: rewritten)
        try? handle.close()
        handle = rewrittenHandle
        rewrote = (
          SessionFile.fingerprint(
            of: rewritten, in: SessionFile.Identity(handle.fileDescriptor), at: SessionFile.resolvedPath(url)),
          encoder.previousHash
        )
      } else {
        encoder.previousHash = session.lastHash
        if session.truncatedLine != nil {
          try Self.perform(at: url) { try handle.truncate(atOffset: UInt64(session.completeByteCount)) }
        }
      }
      try Self.perform(at: url) { try handle.seekToEnd() }
    } catch {
      try? handle.close()
      throw error
    }
    startedEmpty = headerOnly
    rewritten = rewrote
    loop = WriterLoop(handle: handle, path: url.path, encoder: encoder, durability: durability)
  }

  /// Runs a file operation, its failure as ``SessionError/io(path:reason:)``.
  private static func perform(at url: URL, _ body: () throws -> Void) throws(SessionError) {
    do {
      try body()
    } catch {
      throw .io(path: url.path, reason: error.localizedDescription)
    }
  }

  /// Which writer this is, for the source to give lines to the current one only.
  var identity: ObjectIdentifier { ObjectIdentifier(loop) }

  /// Starts the writer thread, which takes lines from `source` (held weakly) until it is released.
  func start(taking source: any SessionLineSource) {
    loop.start(source: source)
  }

  deinit {
    loop.close()
  }

  /// The first failure; after one, nothing more is written, so the file stays a valid prefix.
  var failure: SessionError? {
    loop.state.withLock { $0.failure }
  }

  /// Whether the writer thread sleeps: the recorder wakes it (``wake()``) when lines wait that should not.
  var isSleeping: Bool {
    loop.sleeping.load(ordering: .relaxed)
  }

  /// Wakes the writer thread.
  ///
  /// Called after the recorder's lock.
  func wake() {
    loop.wake()
  }

  /// Whether the file this writer appends to is `fingerprint`'s: by its device and inode, or its resolved path.
  ///
  /// Called before the writer starts.
  func appendsTo(_ fingerprint: SessionFile.Fingerprint) -> Bool {
    loop.appendsTo(fingerprint)
  }

  /// Writes what is left, closes the file, and returns what it holds then, read before its lock is released; `nil` if
  /// it cannot be read (or was closed already).
  func close() -> SessionFile.Fingerprint? {
    loop.close(fingerprinting: true)
  }

  /// Writes `lines` after what the writer took so far: the recorder's last lines, when it is released.
  func write(finally lines: [SessionFormat.Line]) {
    loop.state.withLock { $0.pushed.append(contentsOf: lines) }
  }

  /// Returns once `count` lines in all were written (or writing failed).
  func waitUntilWritten(_ count: Int) {
    loop.waitUntilWritten(count)
  }
}

/// The writer thread's loop and the state it shares with the recorder.
///
/// `@unchecked Sendable`: `handle` and `encoder` are only used by the writer thread (and by `close()` after the
/// thread ended, and `appendsTo(_:)` before it started); everything shared is in `state`, behind its lock, or atomic.
private final class WriterLoop: @unchecked Sendable {
  struct State {
    /// Lines given directly (``SessionWriter/write(finally:)``), written after what the source had.
    var pushed: [SessionFormat.Line] = []
    var written = 0
    var failure: SessionError?
    var closing = false
    var started = false
    /// Whether `close(fingerprinting:)` ran.
    var closed = false
    /// Whether writing is over: nothing more will be written, and those waiting were woken.
    var finished = false
    var waiters: [(target: Int, waiter: DispatchSemaphore)] = []
  }

  let state = LockedValue(State())
  let sleeping = Atomic<Bool>(false)
  private let wakeup = DispatchSemaphore(value: 0)
  private let ended = DispatchSemaphore(value: 0)
  private let handle: FileHandle
  private let path: String
  private var encoder: SessionFormat.Encoder
  private let durability: SessionDurability
  /// The recorder; weak, since the recorder owns the writer.
  nonisolated(unsafe) private weak var source: (any SessionLineSource)?

  init(handle: FileHandle, path: String, encoder: SessionFormat.Encoder, durability: SessionDurability) {
    self.handle = handle
    self.path = path
    self.encoder = encoder
    self.durability = durability
  }

  func start(source: any SessionLineSource) {
    // Closed already (another attach replaced this writer before it started): that close wrote its lines.
    let closed = state.withLock { state in
      if !state.closed { state.started = true }
      return state.closed
    }
    guard !closed else { return }
    self.source = source
    let thread = Thread { [self] in run() }
    thread.name = "DispatchStore.SessionWriter"
    thread.start()
    WriterRegistry.shared.add(self)
  }

  func wake() {
    if sleeping.exchange(false, ordering: .relaxed) { wakeup.signal() }
  }

  func appendsTo(_ fingerprint: SessionFile.Fingerprint) -> Bool {
    fingerprint.isFile(at: URL(fileURLWithPath: path), open: handle.fileDescriptor)
  }

  /// Writes what is left, then ends the thread and closes the file.
  ///
  /// With `fingerprinting`, returns what the file holds then, read before its lock is released. A second call does
  /// nothing.
  @discardableResult
  func close(fingerprinting: Bool = false) -> SessionFile.Fingerprint? {
    let (started, closed) = state.withLock { state in
      defer { (state.closing, state.closed) = (true, true) }
      return (state.started, state.closed)
    }
    guard !closed else { return nil }
    if started {
      wakeup.signal()
      ended.wait()
      WriterRegistry.shared.remove(self)
    } else {
      // Never started (its recorder refused it, or another attach replaced it first): the lines given to it, if any,
      // are written here; no thread will start.
      let lines = state.withLock { state in
        defer { state.pushed.removeAll() }
        return state.pushed
      }
      let failure = lines.isEmpty ? nil : write(lines)
      // No thread will write more: those waiting (a flush while another attach replaced this writer) are woken.
      let waiters = state.withLock { state in
        if let failure, state.failure == nil { state.failure = failure }
        state.written += lines.count
        state.finished = true
        defer { state.waiters = [] }
        return state.waiters.map(\.waiter)
      }
      for waiter in waiters { waiter.signal() }
    }
    let left =
      fingerprinting ? try? SessionFile.fingerprint(open: handle.fileDescriptor, at: URL(fileURLWithPath: path)) : nil
    try? handle.close()
    return left
  }

  func waitUntilWritten(_ count: Int) {
    let waiter = state.withLock { state -> DispatchSemaphore? in
      // Not once writing is over: nothing more will be written (those waiting were woken then). A close in progress
      // still writes its lines, and wakes this waiter after.
      guard state.failure == nil, state.written < count, !state.finished else { return nil }
      let waiter = DispatchSemaphore(value: 0)
      state.waiters.append((count, waiter))
      return waiter
    }
    guard let waiter else { return }
    wake()
    waiter.wait()
  }

  /// Flushes at exit: everything the source queued.
  func flushAtExit() {
    source?.flush()
  }

  private func run() {
    while true {
      var lines = source?.takeLines(for: ObjectIdentifier(self)) ?? []
      let closing = state.withLock { state -> Bool in
        lines.append(contentsOf: state.pushed)
        state.pushed.removeAll()
        return state.closing
      }
      if !lines.isEmpty {
        let failed = state.withLock { $0.failure != nil }
        let failure = failed ? nil : write(lines)
        let waiters = state.withLock { state -> [DispatchSemaphore] in
          if let failure, state.failure == nil { state.failure = failure }
          state.written += lines.count
          let done = state.failure != nil
          let woken = state.waiters.filter { done || $0.target <= state.written }.map(\.waiter)
          state.waiters.removeAll { done || $0.target <= state.written }
          return woken
        }
        for waiter in waiters { waiter.signal() }
        continue
      }
      if closing {
        // Nothing written is awaited any more: those waiting are woken.
        let waiters = state.withLock { state in
          state.finished = true
          defer { state.waiters = [] }
          return state.waiters.map(\.waiter)
        }
        for waiter in waiters { waiter.signal() }
        ended.signal()
        return
      }
      sleeping.store(true, ordering: .relaxed)
      // A line queued before the recorder could see the flag is found here: the recorder reads the flag under its
      // lock, which this check takes after setting it.
      if source?.hasLines(for: ObjectIdentifier(self)) == true
        || state.withLock({ !$0.pushed.isEmpty || $0.closing })
      {
        sleeping.store(false, ordering: .relaxed)
        continue
      }
      if durability == .buffered {
        _ = wakeup.wait(timeout: .now() + .milliseconds(20))
      } else {
        wakeup.wait()
      }
      sleeping.store(false, ordering: .relaxed)
    }
  }

  /// Encodes and writes `lines`: in one write when buffered, otherwise each with a sync.
  private func write(_ lines: [SessionFormat.Line]) -> SessionError? {
    var batch: [UInt8] = []
    for line in lines {
      let start = batch.count
      do {
        try encoder.encode(line, into: &batch)
      } catch let error as SessionError {
        return flush(batch[..<start]) ?? error
      } catch {
        let store: String
        if case .record(let record) = line { store = record.storeIdentifier } else { store = "" }
        return flush(batch[..<start]) ?? .encodingFailed(storeIdentifier: store, reason: "\(error)")
      }
      if durability == .eachRecord {
        if let failure = flush(batch[...], sync: true) { return failure }
        batch.removeAll(keepingCapacity: true)
      }
    }
    return flush(batch[...])
  }

  /// Writes `bytes` (the complete lines before a failure, or a batch) in one write.
  private func flush(_ bytes: ArraySlice<UInt8>, sync: Bool = false) -> SessionError? {
    guard !bytes.isEmpty else { return nil }
    do {
      try handle.write(contentsOf: bytes)
      if sync { try handle.synchronize() }
    } catch {
      return .io(path: path, reason: error.localizedDescription)
    }
    return nil
  }
}

/// The live writers, flushed when the process exits normally (`exit`, or returning from `main`).
private final class WriterRegistry: Sendable {
  static let shared: WriterRegistry = {
    atexit { WriterRegistry.shared.flushAll() }
    return WriterRegistry()
  }()

  private let loops = LockedValue<[ObjectIdentifier: WeakLoop]>([:])

  func add(_ loop: WriterLoop) {
    loops.withLock { $0[ObjectIdentifier(loop)] = WeakLoop(loop) }
  }

  func remove(_ loop: WriterLoop) {
    _ = loops.withLock { $0.removeValue(forKey: ObjectIdentifier(loop)) }
  }

  func flushAll() {
    let live = loops.withLock { $0.values.compactMap(\.loop) }
    for loop in live { loop.flushAtExit() }
  }
}

/// `@unchecked Sendable`: the weak reference is the only stored property, read and cleared atomically by the
/// runtime.
private final class WeakLoop: @unchecked Sendable {
  weak var loop: WriterLoop?

  init(_ loop: WriterLoop) {
    self.loop = loop
  }
}
