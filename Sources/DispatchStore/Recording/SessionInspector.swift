import Foundation

/// Writes a session file as one self-contained HTML page: a timeline of its dispatches and of the moves of its
/// cursor (undo, redo), the models of every store at the selected point, the field changes of each transaction,
/// the branches an undo left behind, and a verification's divergence.
///
/// ```swift
/// try SessionInspector.writePage(forSessionAt: url, to: URL(fileURLWithPath: url.path + ".html"))
/// ```
///
/// The page works offline (its styles and script are inline, with no fonts or scripts to fetch) and keeps long
/// sessions responsive: the timeline draws only the rows in view. No codecs are needed: the page reads the file's
/// JSON as it is, after checking every line (its hash, its position, and that it is the JSON object of its kind).
/// No string of the session, nor its file name, can change the page's structure: each is escaped for where it
/// lands. `swift run dispatchstore-inspect SESSION.jsonl` writes it from the command line.
public enum SessionInspector {
  /// The page for the session file at `url`.
  /// - Parameters:
  ///   - url: A session file, format version 2 or 3.
  ///   - divergence: The error a ``Session/verify(against:mode:)`` run threw, to highlight where it diverged.
  /// - Returns: The HTML page.
  /// - Throws: ``SessionError`` if the file does not load (as ``Session/load(from:codecs:)`` checks it, without
  ///   codecs), or if a line is not the JSON object of its kind (``SessionError/corruptLine(line:reason:)``, also
  ///   for a line whose hash is valid); a version 1 file must be saved in the current version first
  ///   (``Session/save(to:)``).
  public static func page(forSessionAt url: URL, divergence: SessionError? = nil) throws(SessionError) -> String {
    let data: Data
    do {
      // The session is released before the page is made a string.
      let index = try SessionIndex.read(try SessionFile.read(url), path: url.path, codecs: nil, inspecting: true)
      var page = PageWriter(output: Data(capacity: index.data.count + index.data.count / 8 + (1 << 16)))
      writePage(for: index, title: url.lastPathComponent, divergence: divergence, to: &page)
      data = try page.finish()
    }
    return String(decoding: data, as: UTF8.self)
  }

  /// Writes the page for the session file at `url` to `output`, never over a session file.
  ///
  /// `output` is created, or the regular file there replaced (by renaming a complete copy over it); a session file,
  /// the one read included, or anything but a regular file is left as it is. If the file read fails a check (it is
  /// not a session, or a line is corrupt, out of place or fails its hash), the page written shows that error, so
  /// that an older page is not taken for this file's, and the error is thrown.
  /// - Parameters:
  ///   - url: A session file, format version 2 or 3.
  ///   - output: Where to write the page.
  ///   - divergence: The error a ``Session/verify(against:mode:)`` run threw, to highlight where it diverged.
  /// - Throws: The errors of ``page(forSessionAt:divergence:)``; ``SessionError/wouldReplaceSession(path:)`` if
  ///   `output` is a session file, ``SessionError/notARegularFile(path:kind:)``, or an I/O error.
  public static func writePage(
    forSessionAt url: URL, to output: URL, divergence: SessionError? = nil
  ) throws(SessionError) {
    let index: SessionIndex
    do {
      index = try SessionIndex.read(try SessionFile.read(url), path: url.path, codecs: nil, inspecting: true)
    } catch {
      if isAboutContents(error), !SessionFile.leadToOneFile(url, output) {
        // If even this page cannot be written, the file's error is the one to report.
        _ = try? SessionFile.replace(
          output, with: errorPage(error, title: url.lastPathComponent), replacing: .anythingButSessions)
      }
      throw error
    }
    // Written as it is made: only the session file is in memory, not the page too.
    try SessionFile.replace(output, replacing: .anythingButSessions) {
      (file: inout SessionFile.Output) throws(SessionError) in
      var page = PageWriter(output: file)
      writePage(for: index, title: url.lastPathComponent, divergence: divergence, to: &page)
      file = try page.finish()
    }
  }

  /// Writes the page for a session read for the inspector (``SessionIndex/read(_:path:codecs:inspecting:)``).
  static func writePage<Output: PageOutput>(
    for index: SessionIndex, title: String, divergence: SessionError?, to page: inout PageWriter<Output>
  ) {
    page.start(title: title, placeholder: "Loading the session… (the page needs JavaScript)")
    page.raw("{\"title\":")
    page.json(title)
    page.raw(",\"stores\":[")
    for (offset, store) in index.storeIdentifiers.enumerated() {
      if offset > 0 { page.raw(",") }
      page.json(store)
    }
    page.raw("],\"cursor\":")
    page.number(index.cursor)
    page.raw(",\"firstIndex\":")
    page.number(index.firstIndex)
    let inspection = index.inspection ?? SessionIndex.Inspection()
    index.data.withUnsafeBytes { bytes in
      // Records, those replaced after an undo included, and moves, in the order of the file.
      var others: [(line: SessionIndex.Line, replacedBy: Int?, isMove: Bool)] =
        inspection.replacedRecords.map { ($0.record.line, $0.replacedBy, false) }
        + inspection.moves.map { ($0.line, nil, true) }
      others.sort { $0.line.number < $1.line.number }
      page.raw(",\"lines\":[")
      var next = 0
      var written = 0
      func write(_ line: SessionIndex.Line, isMove: Bool, replacedBy: Int?) {
        if written > 0 { page.raw(",") }
        written += 1
        page.line(bytes, line, quotingIdentifiers: !isMove, replacedBy: replacedBy)
      }
      for record in index.records {
        while next < others.count, others[next].line.number < record.line.number {
          write(others[next].line, isMove: others[next].isMove, replacedBy: others[next].replacedBy)
          next += 1
        }
        write(record.line, isMove: false, replacedBy: nil)
      }
      for other in others[next...] { write(other.line, isMove: other.isMove, replacedBy: other.replacedBy) }
      // Snapshots, those dropped with replaced records included, and effects, in the order of the file.
      let snapshots =
        (index.snapshots.map { ($0.line, Int?.none) } + inspection.droppedSnapshots.map { ($0.line, $0.droppedBy) })
        .sorted { $0.0.number < $1.0.number }
      page.raw("],\"snapshots\":[")
      for (offset, snapshot) in snapshots.enumerated() {
        if offset > 0 { page.raw(",") }
        page.line(bytes, snapshot.0, quotingIdentifiers: false, replacedBy: snapshot.1)
      }
      page.raw("],\"effects\":[")
      for (offset, effect) in index.effects.values.joined().sorted(by: { $0.number < $1.number }).enumerated() {
        if offset > 0 { page.raw(",") }
        page.line(bytes, effect, quotingIdentifiers: true, replacedBy: nil)
      }
      // Reads of other stores' models, by transaction: the page shows them with the dispatch.
      page.raw("],\"reads\":[")
      for (offset, read) in index.reads.values.joined().sorted(by: { $0.line.number < $1.line.number }).enumerated() {
        if offset > 0 { page.raw(",") }
        page.line(bytes, read.line, quotingIdentifiers: true, replacedBy: nil)
      }
      // Outcomes of operations that failed after their changes were recorded: the page gives them to the records.
      page.raw("],\"outcomes\":[")
      for (offset, outcome) in index.outcomeLines.enumerated() {
        if offset > 0 { page.raw(",") }
        page.line(bytes, outcome, quotingIdentifiers: true, replacedBy: nil)
      }
    }
    page.raw("],\"divergence\":")
    appendDivergence(divergence, to: &page)
    page.raw(",\"error\":null}")
  }

  /// The page for a file that failed a check: it shows the error, and no session.
  static func errorPage(_ error: SessionError, title: String) -> Data {
    var page = PageWriter(output: Data())
    page.start(title: title, placeholder: "The session file failed a check: \(error)")
    page.raw("{\"title\":")
    page.json(title)
    page.raw(",\"error\":{\"message\":")
    page.json("\(error)")
    page.raw("}}")
    // In memory: nothing to fail.
    return (try? page.finish()) ?? Data()
  }

  /// Whether `error` is about what the file holds, rather than about reaching it.
  private static func isAboutContents(_ error: SessionError) -> Bool {
    switch error {
    case .missingHeader, .unsupportedVersion, .corruptLine, .unknownStore, .typeMismatch, .invalidIndex,
      .integrityCheckFailed:
      return true
    default:
      return false
    }
  }

  private static func appendDivergence<Output>(_ divergence: SessionError?, to page: inout PageWriter<Output>) {
    switch divergence {
    case .diverged(let index, let dispatch, let store, let action, let differences):
      page.raw("{\"index\":")
      page.number(index)
      page.raw(",\"dispatch\":\"")
      page.number(dispatch.rawValue)
      page.raw("\",\"store\":")
      page.json(store)
      page.raw(",\"action\":")
      page.json(action)
      page.raw(",\"fields\":[")
      for (offset, difference) in differences.enumerated() {
        if offset > 0 { page.raw(",") }
        page.raw("{\"path\":")
        page.json(difference.path)
        page.raw(",\"expected\":")
        page.json(difference.expected ?? "(absent)")
        page.raw(",\"actual\":")
        page.json(difference.actual ?? "(absent)")
        page.raw("}")
      }
      page.raw("],\"message\":")
      page.json("\(divergence!)")
      page.raw("}")
    case .some(let error):
      page.raw("{\"message\":")
      page.json("\(error)")
      page.raw("}")
    case .none:
      page.raw("null")
    }
  }
}

/// Where a page is written: a file (``SessionFile/Output``), or memory.
protocol PageOutput {
  /// Appends `bytes`.
  mutating func write(_ bytes: UnsafeRawBufferPointer) throws(SessionError)
}

extension SessionFile.Output: PageOutput {}

extension Data: PageOutput {
  mutating func write(_ bytes: UnsafeRawBufferPointer) {
    append(contentsOf: bytes)
  }
}

/// Writes the page's parts in order (``InspectorPage``), each escaped for where it lands: the template as it is,
/// the title and placeholder as HTML text, the session as JSON that cannot end its script element.
///
/// Nothing is replaced in the page once written. The page goes to its output in pieces of about 64 KiB; the first
/// error writing them is thrown by ``finish()``, and nothing is written after it.
struct PageWriter<Output: PageOutput> {
  private var output: Output
  /// Small pieces, gathered before they are written to `output`.
  private var pending: [UInt8] = []
  private var started = false
  private var failure: SessionError?

  init(output: Output) {
    self.output = output
    pending.reserveCapacity(1 << 17)
  }

  /// The page up to its session data: the title (twice) and the placeholder shown until the script has run, as
  /// HTML text.
  mutating func start(title: String, placeholder: String) {
    precondition(!started)
    started = true
    raw(InspectorPage.beforeTitle)
    html(title)
    raw(InspectorPage.afterTitle)
    html(title)
    raw(InspectorPage.afterHeading)
    html(placeholder)
    raw(InspectorPage.beforeData)
  }

  /// Ends the page, its session data written since ``start(title:placeholder:)``; returns its output.
  /// - Throws: The first error writing to the output.
  mutating func finish() throws(SessionError) -> Output {
    raw(InspectorPage.afterData)
    flush()
    if let failure { throw failure }
    return output
  }

  /// Template text or JSON punctuation: written as it is.
  mutating func raw(_ text: String) {
    var text = text
    text.withUTF8 { pending.append(contentsOf: $0) }
    if pending.count >= 1 << 16 { flush() }
  }

  mutating func number<Integer: BinaryInteger>(_ value: Integer) {
    JSONText.append(value, to: &pending)
  }

  /// `text` as HTML text: `&`, `<`, `>`, `"` and `'` as character references.
  mutating func html(_ text: String) {
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "&"): pending.append(contentsOf: "&amp;".utf8)
      case UInt8(ascii: "<"): pending.append(contentsOf: "&lt;".utf8)
      case UInt8(ascii: ">"): pending.append(contentsOf: "&gt;".utf8)
      case UInt8(ascii: "\""): pending.append(contentsOf: "&quot;".utf8)
      case UInt8(ascii: "'"): pending.append(contentsOf: "&#39;".utf8)
      default: pending.append(byte)
      }
    }
  }

  /// `text` as a JSON string in the session data.
  mutating func json(_ text: String) {
    var quoted: [UInt8] = []
    JSONText.append(text, to: &quoted)
    quoted.withUnsafeBytes { json($0) }
  }

  /// JSON text in the session data, with `<`, `>`, `&`, U+2028 and U+2029 escaped (`\u003c`…).
  ///
  /// In JSON these appear only inside strings, where the escapes mean the same; in the page, the script element
  /// then cannot be ended (`</script>`) or turned into an escaped one (`<!--<script>`) by the data, and no line
  /// separator can trouble a script that would read the text as JavaScript.
  mutating func json(_ bytes: UnsafeRawBufferPointer) {
    let count = bytes.count
    var run = 0
    var position = 0
    while position < count {
      let byte = bytes[position]
      let escape: StaticString
      var length = 1
      switch byte {
      case UInt8(ascii: "<"): escape = "\\u003c"
      case UInt8(ascii: ">"): escape = "\\u003e"
      case UInt8(ascii: "&"): escape = "\\u0026"
      case 0xE2 where position + 2 < count && bytes[position + 1] == 0x80 && bytes[position + 2] & 0xFE == 0xA8:
        escape = bytes[position + 2] == 0xA8 ? "\\u2028" : "\\u2029"
        length = 3
      default:
        position += 1
        continue
      }
      append(UnsafeRawBufferPointer(rebasing: bytes[run..<position]))
      pending.append(contentsOf: UnsafeRawBufferPointer(start: escape.utf8Start, count: escape.utf8CodeUnitCount))
      position += length
      run = position
    }
    append(UnsafeRawBufferPointer(rebasing: bytes[run..<count]))
  }

  /// A line of the file as a JSON object of the session data: as written, less its hash, with `"n"`, its line
  /// number, and `"x"`, the line of the record that replaced or dropped it, if one did.
  ///
  /// With `quotingIdentifiers`, the transaction and dispatch identifiers (`"t"`, `"d"`) become strings: they
  /// exceed the integers a JavaScript number holds exactly.
  mutating func line(
    _ bytes: UnsafeRawBufferPointer, _ line: SessionIndex.Line, quotingIdentifiers: Bool, replacedBy: Int?
  ) {
    // The object without its hash suffix, `,"h":"…"}`, and so without its closing brace.
    let end = line.range.upperBound - SessionHash.suffixLength
    var start = line.range.lowerBound
    if quotingIdentifiers, let fields = RecordFields(bytes, range: line.range) {
      let identifiers = [fields.transaction, fields.dispatch].compactMap { $0 }
        .filter { RecordFields.unsigned(bytes, $0) != nil && $0.upperBound <= end }
        .sorted { $0.lowerBound < $1.lowerBound }
      for value in identifiers {
        json(UnsafeRawBufferPointer(rebasing: bytes[start..<value.lowerBound]))
        pending.append(UInt8(ascii: "\""))
        append(UnsafeRawBufferPointer(rebasing: bytes[value]))
        pending.append(UInt8(ascii: "\""))
        start = value.upperBound
      }
    }
    json(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
    raw(",\"n\":")
    number(line.number)
    if let replacedBy {
      raw(",\"x\":")
      number(replacedBy)
    }
    raw("}")
  }

  /// Appends bytes that need no escape.
  private mutating func append(_ bytes: UnsafeRawBufferPointer) {
    pending.append(contentsOf: bytes)
    if pending.count >= 1 << 16 { flush() }
  }

  private mutating func flush() {
    var chunk: [UInt8] = []
    swap(&chunk, &pending)
    if failure == nil {
      chunk.withUnsafeBytes { bytes in
        do throws(SessionError) {
          try output.write(bytes)
        } catch {
          failure = error
        }
      }
    }
    chunk.removeAll(keepingCapacity: true)
    swap(&chunk, &pending)
  }
}
