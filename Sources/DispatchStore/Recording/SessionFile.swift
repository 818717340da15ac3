import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// How the library opens session files: the one place that reads, creates, locks and replaces them.
///
/// - Only regular files are read or written. A path is opened without blocking (a FIFO would wait for a writer) and
///   checked with `fstat` on the open descriptor, so what is checked is what is read.
/// - A new file is created whole and exclusively: written beside the path, then linked into place (`link` fails if
///   anything is there), so that no reader ever sees a session file without its header, and nothing is replaced.
/// - A file a recorder appends to is locked (`flock`, exclusive) for as long as it is open, so that a second
///   writer, in this process or another, is refused instead of interleaving lines.
/// - A file is replaced (save, compact) only if it is a session or empty, under its lock, by renaming a complete,
///   synced copy over it.
/// - Every failure is a typed ``SessionError``; none leaves the path changed.
enum SessionFile {
  /// Reads the whole file at `url`: nothing is created, locked or written.
  /// - Throws: ``SessionError/noFile(path:)``, ``SessionError/notARegularFile(path:kind:)`` or
  ///   ``SessionError/cannotRead(path:reason:)``.
  static func read(_ url: URL) throws(SessionError) -> Data {
    try readSource(url).bytes
  }

  /// A file as it was read: where it is, which file it is (its device and inode), and its bytes.
  struct Source: Sendable {
    /// The path read, its symbolic links resolved.
    let path: String
    let identity: Identity
    let bytes: Data

    /// What the file held: to tell, when it is written over, whether it changed since.
    var fingerprint: Fingerprint {
      SessionFile.fingerprint(of: bytes, in: identity, at: path)
    }
  }

  /// What a file held when it was read or written, without its bytes: which file it is, its size and a digest of its
  /// bytes, to tell whether it changed since.
  ///
  /// The digest finds a change made by accident (another launch appending, saving or compacting), not one made to
  /// keep it.
  struct Fingerprint: Sendable, Equatable {
    /// The path, its symbolic links resolved.
    let path: String
    let device: UInt64
    let inode: UInt64
    let count: Int
    let digest: UInt64

    /// Whether `url`, or the open `descriptor`, is this file.
    func isFile(at url: URL, open descriptor: Int32) -> Bool {
      var status = stat()
      let same = fstat(descriptor, &status) == 0 && UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
      return same || path == resolvedPath(url)
    }

    /// Whether `url` is this file, by its resolved path.
    func isFile(at url: URL) -> Bool {
      path == resolvedPath(url)
    }

    /// The same file and bytes, named by `path`.
    func named(_ path: String) -> Fingerprint {
      Fingerprint(path: path, device: device, inode: inode, count: count, digest: digest)
    }
  }

  /// The fingerprint of `bytes`, held by the file `identity` at `path` (its symbolic links resolved).
  static func fingerprint(of bytes: Data, in identity: Identity, at path: String) -> Fingerprint {
    Fingerprint(
      path: path, device: identity.device, inode: identity.inode, count: bytes.count, digest: digest(bytes))
  }

  /// A 64-bit digest of `bytes`, eight at a time: its cost is a small part of reading them.
  static func digest(_ bytes: Data) -> UInt64 {
    bytes.withUnsafeBytes { raw in
      var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(raw.count)
      var offset = 0
      func mix(_ word: UInt64) {
        hash = (hash ^ word) &* 0x9e37_79b9_7f4a_7c15
        hash ^= hash >> 31
      }
      while offset + 8 <= raw.count {
        mix(raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        offset += 8
      }
      var last: UInt64 = 0
      for position in offset..<raw.count { last = last << 8 | UInt64(raw[position]) }
      mix(last)
      return hash
    }
  }

  /// ``read(_:)``, and which file was read.
  static func readSource(_ url: URL) throws(SessionError) -> Source {
    let descriptor = try openRegular(url.path, flags: O_RDONLY)
    defer { close(descriptor) }
    return Source(
      path: resolvedPath(url), identity: Identity(descriptor), bytes: try readAll(descriptor, path: url.path))
  }

  /// Opens `url` for appending, creating it with `initialContents` if there is none, and locks it; returns the open
  /// file and what it holds.
  ///
  /// The lock lasts until the returned handle is closed.
  /// - Throws: ``SessionError/inUse(path:)`` if another open file holds the lock, and the errors of ``read(_:)``.
  static func openForAppending(
    _ url: URL, creatingWith initialContents: Data
  ) throws(SessionError) -> (handle: FileHandle, contents: Data) {
    let path = url.path
    var attempts = 0
    while true {
      attempts += 1
      let descriptor: Int32
      do {
        descriptor = try openRegular(path, flags: O_RDWR)
      } catch .noFile {
        // None yet: create it whole, unless somebody else did meanwhile; then open what is there.
        try createWhole(path, initialContents)
        if attempts < 3 { continue }
        throw .cannotRead(path: path, reason: "it was removed while being opened")
      }
      let stillThere: Bool
      let contents: Data
      do throws(SessionError) {
        try lock(descriptor, path: path)
        // Locked: but the path may name another file by now (one renamed over it). Lock that one instead.
        stillThere = try isStillAtPath(descriptor, path: path)
        contents = stillThere ? try readAll(descriptor, path: path) : Data()
      } catch {
        close(descriptor)
        throw error
      }
      guard stillThere else {
        close(descriptor)
        if attempts < 3 { continue }
        throw .cannotRead(path: path, reason: "it was replaced while being opened")
      }
      return (FileHandle(fileDescriptor: descriptor, closeOnDealloc: true), contents)
    }
  }

  /// What a write may replace.
  enum Replaceable {
    /// A session file, or an empty one: a session being saved or compacted.
    case sessions
    /// Any regular file but a session: a page or an export written beside sessions.
    case anythingButSessions
  }

  /// Replaces the file at `url` with `bytes`: creates it whole if there is none; otherwise replaces the regular file
  /// there if `replaceable` allows, under its lock, by renaming a complete, synced copy over it (a symbolic link is
  /// followed, and its target replaced).
  /// - Throws: ``SessionError/missingHeader(path:)`` for a file that is not a session, when saving one;
  ///   ``SessionError/wouldReplaceSession(path:)`` for a session, when writing anything else;
  ///   ``SessionError/inUse(path:)`` and the errors of ``read(_:)``; ``SessionError/io(path:reason:)`` if writing
  ///   fails (the path is unchanged).
  /// - Returns: What the file at `url` holds now: `bytes`.
  @discardableResult
  static func replace(
    _ url: URL, with bytes: Data, replacing replaceable: Replaceable,
    unlessChangedSince loaded: Fingerprint? = nil
  ) throws(SessionError) -> Fingerprint {
    let written = try replace(url, replacing: replaceable, unlessChangedSince: loaded) {
      (output: inout Output) throws(SessionError) in
      try output.write(bytes)
    }
    return fingerprint(of: bytes, in: written, at: resolvedPath(url))
  }

  /// Which file a descriptor is open on: its device and inode.
  struct Identity: Sendable {
    let device: UInt64
    let inode: UInt64

    init(_ descriptor: Int32) {
      var status = stat()
      _ = fstat(descriptor, &status)
      (device, inode) = (UInt64(status.st_dev), UInt64(status.st_ino))
    }
  }

  /// What the file open at `descriptor`, reached at `url`, holds: read from its start.
  /// - Throws: ``SessionError/cannotRead(path:reason:)``.
  static func fingerprint(open descriptor: Int32, at url: URL) throws(SessionError) -> Fingerprint {
    fingerprint(of: try readAll(descriptor, path: url.path), in: Identity(descriptor), at: resolvedPath(url))
  }

  /// `url`'s path with its symbolic links resolved: the file a path leads to.
  static func resolvedPath(_ url: URL) -> String {
    url.standardizedFileURL.resolvingSymlinksInPath().path
  }

  /// A new file being written from its start, by the `contents` of ``replace(_:replacing:contents:)``.
  struct Output {
    fileprivate let descriptor: Int32
    fileprivate let path: String
    fileprivate var offset: off_t = 0

    /// Appends `bytes`.
    /// - Throws: ``SessionError/io(path:reason:)``.
    mutating func write(_ bytes: UnsafeRawBufferPointer) throws(SessionError) {
      var written = 0
      while written < bytes.count {
        let count = pwrite(descriptor, bytes.baseAddress! + written, bytes.count - written, offset)
        if count < 0 {
          if errno == EINTR { continue }
          throw .io(path: path, reason: describeErrno())
        }
        written += count
        offset += off_t(count)
      }
    }

    /// Appends `data`.
    /// - Throws: ``SessionError/io(path:reason:)``.
    mutating func write(_ data: Data) throws(SessionError) {
      var failure: SessionError?
      data.withUnsafeBytes { buffer in
        do throws(SessionError) {
          try write(buffer)
        } catch {
          failure = error
        }
      }
      if let failure { throw failure }
    }
  }

  /// Replaces the file at `url` with what `contents` writes, as ``replace(_:with:replacing:)`` does: without holding
  /// the new contents in memory.
  ///
  /// `contents` may be called more than once (if the file is created by somebody else meanwhile), each time for a
  /// new file.
  ///
  /// With `loaded`, the file a session was loaded from: if `url` leads to that file (by its resolved path, or its
  /// device and inode), it must still hold the bytes loaded, checked under its lock, or it is left as it is.
  /// - Throws: ``SessionError/fileChanged(path:)`` if it does not; the errors of ``replace(_:with:replacing:unlessChangedSince:)``.
  /// - Returns: The file written, now at `url`.
  @discardableResult
  static func replace(
    _ url: URL, replacing replaceable: Replaceable, unlessChangedSince loaded: Fingerprint? = nil,
    contents: (inout Output) throws(SessionError) -> Void
  ) throws(SessionError) -> Identity {
    let path = url.path
    var descriptor: Int32 = -1
    for attempt in 1...3 {
      do {
        descriptor = try openRegular(path, flags: O_RDWR)
      } catch .noFile {
        if let created = try createWhole(path, contents) { return created }
        // Somebody created it meanwhile: replace that one, as any other file there.
        if attempt == 3 { throw .io(path: path, reason: "it keeps appearing and disappearing") }
        continue
      }
      // Locked: but the path may name another file by now (one renamed over it), which is the one to check.
      let stillThere: Bool
      do throws(SessionError) {
        try lock(descriptor, path: path)
        stillThere = try isStillAtPath(descriptor, path: path)
      } catch {
        close(descriptor)
        throw error
      }
      if stillThere { break }
      close(descriptor)
      descriptor = -1
      if attempt == 3 { throw .io(path: path, reason: "it keeps being replaced while it is opened") }
    }
    defer { close(descriptor) }
    // Whether it is a session depends on its first line only: the rest is not read.
    let existing = try readAll(descriptor, path: path, firstLineOnly: true)
    switch replaceable {
    case .sessions:
      guard existing.isEmpty || SessionFormat.startsWithHeader(existing) else { throw .missingHeader(path: path) }
    case .anythingButSessions:
      guard !SessionFormat.startsWithHeader(existing) else { throw .wouldReplaceSession(path: path) }
    }
    // Lines another recorder appended since the session was loaded from this file would be lost.
    if let loaded, loaded.isFile(at: url, open: descriptor) {
      let now = try readAll(descriptor, path: path)
      guard now.count == loaded.count, digest(now) == loaded.digest else { throw .fileChanged(path: path) }
    }
    // Replace the file the path leads to, not a symbolic link on the way.
    let target = url.resolvingSymlinksInPath().path
    let (temporary, temporaryPath) = try temporaryFile(beside: target)
    var renamed = false
    defer {
      close(temporary)
      if !renamed { unlink(temporaryPath) }
    }
    var status = stat()
    if fstat(descriptor, &status) == 0 { fchmod(temporary, status.st_mode & 0o7777) }
    try write(contents, to: temporary, path: path)
    let written = Identity(temporary)
    try requireTarget(target, is: descriptor, path: path)
    guard rename(temporaryPath, target) == 0 else { throw .io(path: path, reason: describeErrno()) }
    renamed = true
    syncDirectory(of: target)
    return written
  }

  /// The new file, open and locked, that replaces the session file at `url` with `bytes`.
  ///
  /// The caller holds the old file open and locked as `descriptor`, and closes it after. The copy is written and synced beside the file and locked before it is renamed over it, so that no other
  /// process can lock it in between. One that opened the old file finds, once it has its lock, that the path names
  /// another file, and opens that (as ``openForAppending(_:creatingWith:)`` does).
  /// - Throws: ``SessionError/io(path:reason:)``; the file at `url` is then as it was.
  static func rewrite(_ url: URL, lockedAs descriptor: Int32, with bytes: Data) throws(SessionError) -> FileHandle {
    let path = url.path
    let target = url.resolvingSymlinksInPath().path
    let (temporary, temporaryPath) = try temporaryFile(beside: target)
    do throws(SessionError) {
      var status = stat()
      if fstat(descriptor, &status) == 0 { fchmod(temporary, status.st_mode & 0o7777) }
      try write({ (output: inout Output) throws(SessionError) in try output.write(bytes) }, to: temporary, path: path)
      try lock(temporary, path: path)
      try requireTarget(target, is: descriptor, path: path)
      guard rename(temporaryPath, target) == 0 else { throw .io(path: path, reason: describeErrno()) }
    } catch {
      close(temporary)
      unlink(temporaryPath)
      throw error
    }
    syncDirectory(of: target)
    return FileHandle(fileDescriptor: temporary, closeOnDealloc: true)
  }

  /// Throws unless `target` still names the file open as `descriptor`: checked just before a copy is renamed over it,
  /// so that a symbolic link pointed elsewhere meanwhile does not get another file replaced.
  /// - Throws: ``SessionError/fileChanged(path:)``.
  private static func requireTarget(_ target: String, is descriptor: Int32, path: String) throws(SessionError) {
    guard try isStillAtPath(descriptor, path: target) else { throw .fileChanged(path: path) }
  }

  /// Syncs the directory holding `path`, so that a name linked or renamed there survives a power loss.
  private static func syncDirectory(of path: String) {
    let directory = (path as NSString).deletingLastPathComponent
    let descriptor = systemOpen(directory.isEmpty ? "." : directory, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return }
    _ = fsync(descriptor)
    close(descriptor)
  }

  // MARK: - Descriptors

  /// Opens `path` without blocking and checks that it is a regular file.
  ///
  /// Something else at the path is refused before it is opened, where that can be told: opening a FIFO releases a
  /// writer blocked on it, and opening a terminal can reset the device on its other end. The type is checked again
  /// once open, against a swap in between; a terminal opened then does not become the process's (`O_NOCTTY`).
  private static func openRegular(_ path: String, flags: Int32) throws(SessionError) -> Int32 {
    var before = stat()
    if stat(path, &before) == 0, before.st_mode & S_IFMT != S_IFREG {
      throw .notARegularFile(path: path, kind: kind(of: before.st_mode))
    }
    let descriptor = systemOpen(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
    guard descriptor >= 0 else {
      switch errno {
      case ENOENT:
        // A symbolic link to nothing: creating the session there would fail, and keep failing.
        var link = stat()
        if lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK {
          throw .notARegularFile(path: path, kind: "a symbolic link to nothing")
        }
        throw .noFile(path: path)
      case EISDIR: throw .notARegularFile(path: path, kind: "a directory")
      default: throw .cannotRead(path: path, reason: describeErrno())
      }
    }
    var status = stat()
    guard fstat(descriptor, &status) == 0 else {
      let reason = describeErrno()
      close(descriptor)
      throw .cannotRead(path: path, reason: reason)
    }
    guard status.st_mode & S_IFMT == S_IFREG else {
      close(descriptor)
      throw .notARegularFile(path: path, kind: kind(of: status.st_mode))
    }
    // A regular file: reads and writes block as usual.
    _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
    return descriptor
  }

  /// Creates `path` with `contents`, whole; returns the file created, or `nil` if somebody else just created one.
  ///
  /// The contents are written and synced beside the path, then linked into place, which fails if anything is at the
  /// path by then.
  @discardableResult
  private static func createWhole(_ path: String, _ contents: Data) throws(SessionError) -> Identity? {
    try createWhole(path) { (output: inout Output) throws(SessionError) in try output.write(contents) }
  }

  /// Creates `path` with what `contents` writes, as ``createWhole(_:_:)`` does.
  private static func createWhole(
    _ path: String, _ contents: (inout Output) throws(SessionError) -> Void
  ) throws(SessionError) -> Identity? {
    let (temporary, temporaryPath) = try temporaryFile(beside: path)
    defer {
      close(temporary)
      unlink(temporaryPath)
    }
    try write(contents, to: temporary, path: path)
    if link(temporaryPath, path) == 0 {
      // The new name is on disk too: a power loss after the caller goes on does not lose the whole file.
      syncDirectory(of: path)
      return Identity(temporary)
    }
    guard errno == EEXIST else { throw .io(path: path, reason: "cannot create it: \(describeErrno())") }
    return nil
  }

  /// A new file beside `path` (in the same directory, so that it can be linked or renamed there), and its path.
  private static func temporaryFile(beside path: String) throws(SessionError) -> (Int32, String) {
    var template = Array("\(path).XXXXXX".utf8CString)
    let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard descriptor >= 0 else { throw .io(path: path, reason: "cannot create a file beside it: \(describeErrno())") }
    _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    return (descriptor, String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
  }

  private static func systemOpen(_ path: String, _ flags: Int32) -> Int32 {
    #if canImport(Glibc)
      Glibc.open(path, flags)
    #elseif canImport(Musl)
      Musl.open(path, flags)
    #else
      Darwin.open(path, flags)
    #endif
  }

  private static func lock(_ descriptor: Int32, path: String) throws(SessionError) {
    guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
      if errno == EWOULDBLOCK { throw .inUse(path: path) }
      throw .cannotRead(path: path, reason: "cannot lock it: \(describeErrno())")
    }
  }

  /// Whether `path` still names the file open as `descriptor`.
  private static func isStillAtPath(_ descriptor: Int32, path: String) throws(SessionError) -> Bool {
    var opened = stat()
    var named = stat()
    guard fstat(descriptor, &opened) == 0 else { throw .cannotRead(path: path, reason: describeErrno()) }
    guard stat(path, &named) == 0 else { return false }
    return opened.st_dev == named.st_dev && opened.st_ino == named.st_ino
  }

  /// The file's bytes from its start: all of them, or with `firstLineOnly` those up to its first newline (included).
  ///
  /// A session holds no zero byte: the first one ends what is read, kept as the start of an incomplete last line
  /// (which a writer drops). The zeros a crash can leave after the last line, or a hole in a sparse file, are passed
  /// over without being held in memory; anything else after them is refused.
  /// - Throws: ``SessionError/corruptLine(line:reason:)`` for a zero byte followed by other bytes.
  private static func readAll(
    _ descriptor: Int32, path: String, firstLineOnly: Bool = false
  ) throws(SessionError) -> Data {
    var data = Data()
    var chunk = [UInt8](repeating: 0, count: firstLineOnly ? 1 << 12 : 1 << 16)
    var offset: off_t = 0
    while true {
      let count = chunk.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
      if count < 0 {
        if errno == EINTR { continue }
        throw .cannotRead(path: path, reason: describeErrno())
      }
      if count == 0 { return data }
      if firstLineOnly, let newline = chunk[..<count].firstIndex(of: 0x0A) {
        data.append(contentsOf: chunk[...newline])
        return data
      }
      // `memchr`: a byte-by-byte search of every chunk costs more than reading it.
      let zeroAt = chunk.withUnsafeBytes { raw in
        memchr(raw.baseAddress!, 0, count).map { UnsafeRawPointer($0) - raw.baseAddress! }
      }
      if let zero = zeroAt {
        data.append(contentsOf: chunk[...zero])
        // A first line with a zero is no session's header; what follows does not matter.
        if firstLineOnly { return data }
        guard try onlyZeros(descriptor, from: offset + off_t(zero), path: path) else {
          let line = data.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
          throw .corruptLine(line: line, reason: "a zero byte, followed by more of the file: not a session's text")
        }
        return data
      }
      data.append(contentsOf: chunk[..<count])
      offset += off_t(count)
    }
  }

  /// Whether the file holds only zero bytes from `offset` on: its holes are skipped, its data read a chunk at a time
  /// and not kept.
  private static func onlyZeros(_ descriptor: Int32, from offset: off_t, path: String) throws(SessionError) -> Bool {
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    var position = offset
    while true {
      #if os(Linux)
        // The next data after `position` (`SEEK_DATA`, 3, which Glibc's module does not export); none (`ENXIO`)
        // means a hole to the end.
        let data = lseek(descriptor, position, 3)
        if data < 0, errno == ENXIO { return true }
        if data >= 0 { position = max(position, data) }
      #endif
      let count = chunk.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, position) }
      if count < 0 {
        if errno == EINTR { continue }
        throw .cannotRead(path: path, reason: describeErrno())
      }
      if count == 0 { return true }
      if chunk[..<count].contains(where: { $0 != 0 }) { return false }
      position += off_t(count)
    }
  }

  /// Writes what `contents` writes from the start of the file at `descriptor`, and syncs it.
  private static func write(
    _ contents: (inout Output) throws(SessionError) -> Void, to descriptor: Int32, path: String
  ) throws(SessionError) {
    var output = Output(descriptor: descriptor, path: path)
    try contents(&output)
    guard fsync(descriptor) == 0 else { throw .io(path: path, reason: describeErrno()) }
  }

  private static func kind(of mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFDIR: return "a directory"
    case S_IFIFO: return "a FIFO"
    case S_IFCHR: return "a character device"
    case S_IFBLK: return "a block device"
    case S_IFSOCK: return "a socket"
    default: return "not a regular file"
    }
  }

  private static func describeErrno() -> String {
    String(cString: strerror(errno))
  }
}

extension SessionFile {
  /// Whether two paths lead to one file, following symbolic links on the way (the same device and inode); `false`
  /// if either leads nowhere.
  static func leadToOneFile(_ first: URL, _ second: URL) -> Bool {
    var a = stat()
    var b = stat()
    guard stat(first.path, &a) == 0, stat(second.path, &b) == 0 else { return false }
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino
  }
}
