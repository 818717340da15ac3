import Foundation
import Testing

@testable import DispatchStore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Session files are the user's data: only regular files are read or written, new ones are created exclusively, a
/// file a recorder appends to is locked, and every failure is a typed error that leaves the path as it was.
@Suite("Session files on disk", .timeLimit(.minutes(1)), .watchdog)
struct SessionFileTests {
  /// Attaching the recorder to another file never writes the new file's lines (its snapshot and history) to the
  /// first, whose writer may still be taking lines: the first ends where it was left, and both load.
  ///
  /// The replaced writer used to take lines from the recorder's queue until it closed; under ThreadSanitizer in CI it
  /// wrote the second file's snapshot into the first ("position 0 is outside the history").
  /// (Its flush then waited for ever for lines the replaced writer had taken: the rounds run on a thread of their
  /// own, so that a regression fails here, within the deadline, instead of holding the process.)
  @Test func attachingAnotherFileWritesNothingOfItToTheFirst() async throws {
    let counts = await firstValue(within: .seconds(40)) { (deliver: @escaping @Sendable ([[Int]]) -> Void) in
      Thread {
        var counts: [[Int]] = []
        for _ in 0..<(isSanitized ? 30 : 200) {
          let app = RecordedApp()
          let first = TemporaryFile()
          let second = TemporaryFile()
          try? app.recorder.attach(appendingTo: first.url, codecs: appCodecs())
          for amount in 1...20 { app.send(CounterAction.increase(amount)) }
          try? app.recorder.attach(appendingTo: second.url, codecs: appCodecs())
          app.send(CounterAction.increase(100))
          app.recorder.flush()
          counts.append(
            [first, second].map { file in
              (try? Session.load(from: file.url, codecs: appCodecs()).recordCount) ?? -1
            })
        }
        deliver(counts)
      }.start()
    }
    guard let counts else {
      Issue.record("the rounds did not end within 40 seconds: a flush waits for lines that never came")
      return
    }
    // Every round: the first file holds its 20 records and loads; the second the history and one more.
    #expect(counts.allSatisfy { $0 == [20, 21] }, "\(counts.filter { $0 != [20, 21] }.prefix(5))")
  }

  /// What the path holds: its type, and its bytes if it is a regular file, or its target if it is a link.
  private static func snapshot(_ path: String) -> String {
    var status = stat()
    guard lstat(path, &status) == 0 else { return "nothing" }
    switch status.st_mode & S_IFMT {
    case S_IFLNK: return "link to " + ((try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?")
    case S_IFREG: return "file " + ((try? Data(contentsOf: URL(fileURLWithPath: path)))?.base64EncodedString() ?? "?")
    case S_IFDIR: return "directory of \((try? FileManager.default.contentsOfDirectory(atPath: path).count) ?? -1)"
    case S_IFIFO: return "FIFO"
    case S_IFCHR: return "character device"
    default: return "other"
    }
  }

  /// Loads, attaches and saves at `url`, expecting `expected` from each, and checks that the path is unchanged.
  private static func expectRefused(
    _ url: URL, saving: Bool = true, _ expected: (SessionError) -> Bool,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let before = snapshot(url.path)
    let app = RecordedApp()
    let attempts: [(String, () throws(SessionError) -> Void)] = [
      ("load", { () throws(SessionError) in _ = try Session.load(from: url, codecs: appCodecs()) }),
      ("attach", { () throws(SessionError) in try app.recorder.attach(appendingTo: url, codecs: appCodecs()) }),
      ("save", { () throws(SessionError) in try app.recorder.save(to: url, codecs: appCodecs()) }),
      ("inspect", { () throws(SessionError) in _ = try SessionInspector.page(forSessionAt: url) }),
    ]
    for (name, attempt) in attempts where saving || name != "save" {
      do {
        try attempt()
        Issue.record("\(name) of \(before) succeeded", sourceLocation: sourceLocation)
      } catch {
        #expect(expected(error), "\(name): \(error)", sourceLocation: sourceLocation)
      }
      #expect(snapshot(url.path) == before, "\(name) changed the path", sourceLocation: sourceLocation)
    }
  }

  @Test func aFIFOIsRefusedWithoutWaitingForAWriterAndStaysAFIFO() throws {
    let file = TemporaryFile()
    #expect(mkfifo(file.url.path, 0o644) == 0)
    try Self.expectRefused(file.url) { $0 == .notARegularFile(path: file.url.path, kind: "a FIFO") }
  }

  @Test func aDirectoryIsRefusedAndKeepsItsContents() throws {
    let file = TemporaryFile()
    try FileManager.default.createDirectory(at: file.url, withIntermediateDirectories: false)
    try Data("keep".utf8).write(to: file.url.appendingPathComponent("inside"))
    try Self.expectRefused(file.url) { $0 == .notARegularFile(path: file.url.path, kind: "a directory") }
  }

  /// A symbolic link to nothing is named as such, and left as it was: no session is created through it, and no
  /// temporary file is left beside it (helper-64: attach and save failed three times over with misleading errors).
  @Test func aSymbolicLinkToNothingIsRefusedAndLeftAsItWas() throws {
    let file = TemporaryFile()
    let missing = file.directory.appendingPathComponent("missing")
    try FileManager.default.createSymbolicLink(atPath: file.url.path, withDestinationPath: missing.path)
    try Self.expectRefused(file.url) { $0 == .notARegularFile(path: file.url.path, kind: "a symbolic link to nothing") }
    #expect(Self.snapshot(file.url.path) == "link to \(missing.path)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: file.directory.path) == [file.url.lastPathComponent])
  }

  @Test func aLoopOfSymbolicLinksIsRefusedAndLeftAsItWas() throws {
    let file = TemporaryFile()
    let other = file.directory.appendingPathComponent("other")
    try FileManager.default.createSymbolicLink(atPath: file.url.path, withDestinationPath: other.path)
    try FileManager.default.createSymbolicLink(atPath: other.path, withDestinationPath: file.url.path)
    try Self.expectRefused(file.url) {
      guard case .cannotRead(let path, _) = $0 else { return false }
      return path == file.url.path
    }
    #expect(Self.snapshot(other.path) == "link to \(file.url.path)")
  }

  @Test func aDeviceIsNeverReplacedNorWritten() throws {
    try Self.expectRefused(URL(fileURLWithPath: "/dev/null")) {
      $0 == .notARegularFile(path: "/dev/null", kind: "a character device")
    }
  }

  /// A regular file whose reads fail (`EIO`): an error, never an empty session, and never written.
  @Test func aFileThatCannotBeReadIsAnErrorNotAnEmptySession() throws {
    #if os(Linux)
      let url = URL(fileURLWithPath: "/proc/self/mem")
      try Self.expectRefused(url) {
        guard case .cannotRead(let path, _) = $0 else { return false }
        return path == url.path
      }
    #endif
  }

  /// Without read permission (meaningful when not running as root, which bypasses permissions; CI also checks this
  /// with the todo example run as another user).
  @Test func aFileWithoutReadPermissionIsAnErrorAndUntouched() throws {
    guard getuid() != 0 else { return }
    let file = TemporaryFile()
    try writeSmallSession(to: file)
    #expect(chmod(file.url.path, 0) == 0)
    defer { _ = chmod(file.url.path, 0o644) }
    try Self.expectRefused(file.url) {
      guard case .cannotRead(let path, _) = $0 else { return false }
      return path == file.url.path
    }
  }

  @Test func loadingAMissingFileCreatesNothing() {
    let file = TemporaryFile()
    #expect(throws: SessionError.noFile(path: file.url.path)) { try Session.load(from: file.url, codecs: appCodecs()) }
    #expect(Self.snapshot(file.url.path) == "nothing")
  }

  @Test func aSecondRecorderIsRefusedWhileTheFirstIsAttachedAndAttachesOnceItIsReleased() throws {
    let file = TemporaryFile()
    var first: RecordedApp? = RecordedApp()
    try first!.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    first!.send(CounterAction.increase(1))
    first!.recorder.flush()

    let second = RecordedApp()
    #expect(throws: SessionError.inUse(path: file.url.path)) {
      try second.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    }
    // The first goes on writing, unharmed.
    first!.send(CounterAction.increase(2))
    first!.recorder.flush()
    #expect(first!.recorder.persistenceError == nil)
    #expect(throws: SessionError.inUse(path: file.url.path)) {
      try second.recorder.save(to: file.url, codecs: appCodecs())
    }

    first = nil  // Released: its writer closes the file, which releases the lock.
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect(try session.records.map(\.storeIdentifier) == ["counter", "counter"])
    try second.recorder.resume(session, in: second.dispatcher)
    try second.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    second.send(CounterAction.increase(3))
    second.recorder.flush()
    #expect(try Session.load(from: file.url, codecs: appCodecs()).recordCount == 3)
  }

  @Test func savingRefusesToReplaceAFileThatIsNotASession() throws {
    let file = TemporaryFile("notes.txt")
    file.write("my notes\n")
    let app = RecordedApp()
    app.send(CounterAction.increase(1))
    #expect(throws: SessionError.missingHeader(path: file.url.path)) {
      try app.recorder.save(to: file.url, codecs: appCodecs())
    }
    #expect(file.data == Data("my notes\n".utf8))
  }

  @Test func savingReplacesASessionAndTheTargetOfALinkToIt() throws {
    let file = TemporaryFile()
    try writeSmallSession(to: file)
    let link = file.directory.appendingPathComponent("link.jsonl")
    try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: file.url.path)
    let app = RecordedApp()
    app.send(CounterAction.increase(7))
    try app.recorder.save(to: link, codecs: appCodecs())

    #expect(Self.snapshot(link.path) == "link to \(file.url.path)")
    let saved = try Session.load(from: file.url, codecs: appCodecs())
    #expect(try saved.records.map(\.model).compactMap { $0 as? Counter }.map(\.count) == [7])
    let left = try FileManager.default.contentsOfDirectory(atPath: file.directory.path).sorted()
    #expect(left == ["link.jsonl", "session.jsonl"])  // No temporary file left beside them.
  }

  /// The size of the file at `url`, read without reading the file.
  static func size(_ url: URL) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? NSNumber)?.intValue ?? -1
  }

  /// A session followed by a hole of 1 TiB (a sparse file): its lines load without the hole being read into memory,
  /// and a recorder that resumes it drops the hole, as an incomplete last line, and appends after its last line.
  @Test func aSessionFollowedByAHoleLoadsAndIsAppendedToAfterItsLastLine() throws {
    let file = try SharedSessionFileTests.recordedFile()
    let size = Self.size(file.url)
    #expect(truncate(file.url.path, off_t(size) + (1 << 40)) == 0)
    #expect(try Session.load(from: file.url, codecs: appCodecs()).recordCount == 3)
    let app = try SharedSessionFileTests.resumed(file)
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(4))
    app.recorder.flush()
    #expect(Self.size(file.url) > size)
    #expect(Self.size(file.url) < size + 1_000)
    #expect(try Session.load(from: file.url, codecs: appCodecs()).recordCount == 4)
  }

  /// Zeros after the last line, as a crash can leave them: the lines before them load.
  @Test func zerosAfterTheLastLineAreAnIncompleteLine() throws {
    let file = try SharedSessionFileTests.recordedFile()
    file.write(String(decoding: file.data, as: UTF8.self) + String(repeating: "\0", count: 100_000))
    #expect(try Session.load(from: file.url, codecs: appCodecs()).recordCount == 3)
  }

  /// A page written over a file that is not a session, whose first bytes hold a zero and more after it: replaced, as
  /// any file but a session.
  @Test func thePageReplacesABinaryFile() throws {
    let file = TemporaryFile()
    try writeSmallSession(to: file)
    let page = file.directory.appendingPathComponent("page.html")
    try Data([0x89, 0x50, 0x00, 0x01, 0x02, 0x03]).write(to: page)
    try SessionInspector.writePage(forSessionAt: file.url, to: page)
    #expect(String(decoding: try Data(contentsOf: page), as: UTF8.self).contains("<html lang=\"en\">"))
  }

  /// A writer replaced before it started (two attaches of one recorder at once): closing it writes the lines given to
  /// it, and starting it after does nothing.
  @Test func aWriterClosedBeforeItStartedWritesItsLinesAndNeverStarts() throws {
    final class NoLines: SessionLineSource {
      func takeLines(for writer: ObjectIdentifier) -> [SessionFormat.Line] { [] }
      func hasLines(for writer: ObjectIdentifier) -> Bool { false }
      func flush() {}
    }
    let file = TemporaryFile()
    let writer = try SessionWriter(
      appendingTo: file.url, codecs: appCodecs(), durability: .buffered,
      at: SessionWriter.AppendingPoint(nextIndex: 0, file: nil))
    writer.write(finally: [.snapshot(index: 0, models: ["counter": Counter(count: 4)], actions: [:])])
    let left = writer.close()
    writer.start(taking: NoLines())
    #expect(file.lines.count == 2)
    #expect(left?.count == file.data.count)
    let session = try Session.load(from: file.url, codecs: appCodecs())
    #expect((try session.models(at: -1)["counter"]?.model as? Counter)?.count == 4)
  }

  /// A flush waiting on a writer that is then closed before it started (another attach replaced it) returns, as does
  /// one that comes after (helper-64: both waited for ever, for a thread that never starts).
  @Test func aFlushOfAWriterClosedBeforeItStartedReturns() throws {
    let file = TemporaryFile()
    let writer = try SessionWriter(
      appendingTo: file.url, codecs: appCodecs(), durability: .buffered,
      at: SessionWriter.AppendingPoint(nextIndex: 0, file: nil))
    writer.write(finally: [.snapshot(index: 0, models: ["counter": Counter(count: 4)], actions: [:])])
    let returned = DispatchSemaphore(value: 0)
    // Waiting before the close, or after it: either way it must return.
    Thread {
      writer.waitUntilWritten(5)
      returned.signal()
    }.start()
    _ = writer.close()
    #expect(returned.wait(timeout: .now() + 60) == .success, "the flush did not return")
    let after = DispatchSemaphore(value: 0)
    Thread {
      writer.waitUntilWritten(5)
      after.signal()
    }.start()
    #expect(after.wait(timeout: .now() + 60) == .success, "the flush after the close did not return")
    #expect(file.lines.count == 2)
  }

  /// A zero byte followed by more lines is no session's text: refused, with the line it is on, and left as it was.
  @Test func aZeroByteBeforeMoreLinesIsACorruptLine() throws {
    let file = try SharedSessionFileTests.recordedFile()
    var lines = file.lines
    lines[2] = "\0" + lines[2]
    file.write(lines.joined(separator: "\n") + "\n")
    let before = file.data
    #expect(throws: SessionError.self) { try Session.load(from: file.url, codecs: appCodecs()) }
    do {
      _ = try Session.load(from: file.url, codecs: appCodecs())
    } catch {
      guard case .corruptLine(let line, _) = error else {
        Issue.record("expected a corrupt line, got \(error)")
        return
      }
      #expect(line == 3)
    }
    #expect(file.data == before)
  }

  @Test func aFailedAttachLeavesEveryByte() throws {
    let file = TemporaryFile()
    try writeSmallSession(to: file)
    var lines = file.lines
    lines[2] = lines[2].replacingOccurrences(of: "\"count\":1", with: "\"count\":9")
    file.write(lines.joined(separator: "\n") + "\n")
    // A session, though a corrupt one, may be replaced by `save`: only reading and appending are refused.
    try Self.expectRefused(file.url, saving: false) { $0 == .integrityCheckFailed(line: 3) }
  }

  @Test func thePageIsNeverWrittenOverASessionOrASpecialFile() throws {
    let file = TemporaryFile()
    try writeSmallSession(to: file)
    let session = file.data
    #expect(throws: SessionError.wouldReplaceSession(path: file.url.path)) {
      try SessionInspector.writePage(forSessionAt: file.url, to: file.url)
    }
    #expect(file.data == session)
    let fifo = file.directory.appendingPathComponent("fifo")
    #expect(mkfifo(fifo.path, 0o644) == 0)
    #expect(throws: SessionError.notARegularFile(path: fifo.path, kind: "a FIFO")) {
      try SessionInspector.writePage(forSessionAt: file.url, to: fifo)
    }
    #expect(Self.snapshot(fifo.path) == "FIFO")

    // A new page, then a page replaced by a newer one.
    let page = file.directory.appendingPathComponent("session.jsonl.html")
    try SessionInspector.writePage(forSessionAt: file.url, to: page)
    let written = try String(contentsOf: page, encoding: .utf8)
    #expect(written == (try SessionInspector.page(forSessionAt: file.url)))
    try Data("old page".utf8).write(to: page)
    try SessionInspector.writePage(forSessionAt: file.url, to: page)
    #expect(try String(contentsOf: page, encoding: .utf8) == written)
  }

  /// `.eachRecord`: a dispatch completes only once its record is written.
  @Test(arguments: Dispatcher.Mode.allCases)
  func eachRecordWritesARecordBeforeItsDispatchCompletes(mode: Dispatcher.Mode) async throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs(), syncEachRecord: true)
    for count in 1...20 {
      try await app.dispatcher.dispatch(action: CounterAction.increase(1), mode: mode)
      let records = file.lines.filter { $0.hasPrefix("{\"k\":\"r\"") }.count
      #expect(records == count)
    }
  }
}
