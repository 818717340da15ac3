import Foundation
import Testing

@testable import DispatchStore

/// Strings that break a page built by pasting text into it: markup that ends or escapes a script element, the old
/// title placeholder, quotes, an ampersand, and the line and paragraph separators.
let hostileStrings = [
  "<!--<script>", "</script><script>document.body.remove()</script>", "<!--TITLE-->", #"say "hi""#, "it's",
  "salt & pepper", "line\u{2028}separator", "paragraph\u{2029}separator",
]

/// A file name made of them (a file name cannot hold "/").
let hostileFileName = "<!--<script> <!--TITLE--> \"q\" 'a' & \u{2028}\u{2029}.jsonl"

/// A session's lines (the JSON objects, without their hashes) as a version 2 file, with the hash chain a recorder
/// writes.
func writeSession(_ objects: [String], to url: URL) {
  writeSession(objects.map { Array($0.utf8) }, to: url)
}

func writeSession(_ objects: [[UInt8]], to url: URL) {
  var data = Data()
  var previous: UInt64 = 0
  for object in objects {
    previous = object.withUnsafeBytes { SessionHash.line($0, previous: previous) }
    var line = Array(object.dropLast())
    SessionHash.appendSuffix(previous, to: &line)
    line.append(0x0A)
    data.append(contentsOf: line)
  }
  try! data.write(to: url)
}

@Suite("Session inspector", .timeLimit(.minutes(1)), .watchdog)
struct SessionInspectorTests {
  static let header =
    #"{"format":"DispatchStore.session","stores":[{"action":"A","identifier":"counter","model":"M"}],"version":2}"#
  static func record(_ index: Int, _ count: Int, extra: String = "") -> String {
    #"{"k":"r","i":\#(index),"t":\#(1_795_000_000_000_000_000 + index),"s":"counter","a":{"increase":{"_0":1}},"m":{"count":\#(count)}\#(extra)}"#
  }

  /// The text of the page's session data element.
  static func embeddedJSON(_ page: String) throws -> String {
    let start = try #require(page.range(of: #"<script type="application/json" id="session">"#))
    let end = try #require(page[start.upperBound...].range(of: "</script>"))
    return String(page[start.upperBound..<end.lowerBound])
  }

  static func embeddedSession(_ page: String) throws -> [String: Any] {
    let json = try embeddedJSON(page)
    return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
  }

  /// `text` as HTML text, written independently of the library's escaping.
  static func htmlText(_ text: String) -> String {
    text.map { character -> String in
      switch character {
      case "&": "&amp;"
      case "<": "&lt;"
      case ">": "&gt;"
      case "\"": "&quot;"
      case "'": "&#39;"
      default: String(character)
      }
    }.joined()
  }

  @Test func noStringOfTheSessionNorItsFileNameChangesThePagesStructure() throws {
    let file = TemporaryFile(hostileFileName)
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    for string in hostileStrings { app.send(TextAction.append(string)) }
    app.send(CounterAction.increase(1))
    app.recorder.flush()
    let page = try SessionInspector.page(forSessionAt: file.url)

    // Nothing to fetch: no external scripts, styles, fonts or images.
    for reference in ["src=", "href=", "@import", "url(", "http://", "https://"] {
      #expect(!page.contains(reference), "the page refers to \(reference)")
    }
    // The page is the template's parts, in order, with the title as HTML text; the session data between them
    // holds no character that could end or change its script element, wherever it comes from.
    let title = Self.htmlText(hostileFileName)
    let head =
      InspectorPage.beforeTitle + title + InspectorPage.afterTitle + title + InspectorPage.afterHeading
      + "Loading the session… (the page needs JavaScript)" + InspectorPage.beforeData
    #expect(page.hasPrefix(head))
    #expect(page.hasSuffix(InspectorPage.afterData))
    let data = page.dropFirst(head.count).dropLast(InspectorPage.afterData.count)
    for character in ["<", ">", "&", "\u{2028}", "\u{2029}"] {
      #expect(
        !data.contains(character), "the session data holds \(character.unicodeScalars.first!.escaped(asASCII: true))")
    }
    #expect(title.contains("&lt;!--&lt;script&gt;") && title.contains("&quot;q&quot; &#39;a&#39; &amp;"))

    // The data reads back as the session's own strings: none was replaced (the title placeholder included).
    let session = try Self.embeddedSession(page)
    #expect(session["title"] as? String == hostileFileName)
    let lines = try #require(session["lines"] as? [[String: Any]])
    let texts = lines.compactMap { (($0["a"] as? [String: Any])?["append"] as? [String: Any])?["_0"] as? String }
    #expect(texts == hostileStrings)
    #expect(page.components(separatedBy: "<script").count == 4, "the template's three script elements, no more")
    // Identifiers are strings, which JavaScript numbers could not hold exactly.
    #expect(lines.last?["t"] as? String == String(app.recorder.records.last!.transactionID.rawValue))
    #expect(session["stores"] as? [String] == ["counter", "text"])
  }

  @Test func aDivergenceIsEmbeddedWithItsFields() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(1))
    app.recorder.flush()
    let divergence = SessionError.diverged(
      index: 0, dispatchID: app.recorder.records[0].dispatchID, storeIdentifier: "counter", action: "increase(1)",
      differences: [FieldDifference(path: "count", expected: "</script>", actual: "2")])
    let page = try SessionInspector.page(forSessionAt: file.url, divergence: divergence)
    #expect(page.contains(#""fields":[{"path":"count","expected":"\u003c/script\u003e","actual":"2"}]"#))
    let embedded = try #require(try Self.embeddedSession(page)["divergence"] as? [String: Any])
    #expect(embedded["index"] as? Int == 0)
    #expect(embedded["message"] as? String == "\(divergence)")
  }

  @Test func aVersionOneFileMustBeUpgradedFirst() throws {
    let file = TemporaryFile()
    file.write(#"{"format":"DispatchStore.session","stores":[],"version":1}"# + "\n")
    #expect(throws: SessionError.unsupportedVersion(found: 1, supported: 3, line: 1)) {
      try SessionInspector.page(forSessionAt: file.url)
    }
  }

  /// Lines that are not the JSON object of their kind, as line 4 after two valid records, with valid hashes.
  static let forgeries: [(line: String, reason: String)] = [
    (
      #"{"k":"r","i":2,"t":1,"s":"counter","a":{"increase":{"_0":1}},"m":{"count":3},</script><!--<script>}"#,
      "not JSON"
    ),
    (#"{"k":"r","i":2,garbage}"#, "not JSON"),
    (#"{"k":"r","i":2,"t":"1795000000000000002","s":"counter","a":{},"m":{}}"#, #""t" of a record must be"#),
    (#"{"k":"r","i":2,"t":-1,"s":"counter","a":{},"m":{}}"#, #""t" of a record must be"#),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{}}"#, #"a record has no field "m""#),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{},"i":9}"#, #"the field "i" appears twice"#),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{},"h":"0"}"#, #"the field "h" appears twice"#),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{},"\u0074":"x"}"#, "a field name holds an escape"),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{"count":01}}"#, "not JSON"),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{"count":1.}}"#, "not JSON"),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{"text":"a\#u{01}b"}}"#, "control character"),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{"text":"a\qb"}}"#, "unknown escape"),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{"text":"\u12"}}"#, "hexadecimal"),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{"text":"open}}"#, "not JSON"),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":[1,2,]}"#, "not JSON"),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{"a" 1}}"#, "not JSON"),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":tru}"#, "not JSON"),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{},"e":7}"#, #""e" of a record must be a string"#),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":{},"c":"yes"}"#, #""c" of a record must be true or false"#),
    (#"{"k":"r","i":2,"t":1,"s":"counter","a":{},"m":\#(String(repeating: "[", count: 600))}"#, "nested deeper"),
    (#"{"k":"m","i":1.5}"#, #""i" of a move must be an integer"#),
    (#"{"k":"s","i":2,"m":[]}"#, #""m" of a snapshot must be an object"#),
    (#"{"k":"e","key":"user","v":1}"#, #"an effect has no field "d""#),
    (#"{"k":"e","d":1,"key":"user","v":1}}"#, "not JSON"),
    (#"{"k":"e","d":1,"t":"2","key":"user","v":1}"#, #""t" of an effect must be an unsigned integer"#),
  ]

  @Test(arguments: forgeries)
  func aLineWithAValidHashButOtherContentIsACorruptLine(_ forgery: (line: String, reason: String)) throws {
    let file = TemporaryFile()
    writeSession([Self.header, Self.record(0, 1), Self.record(1, 2), forgery.line], to: file.url)
    do {
      _ = try SessionInspector.page(forSessionAt: file.url)
      Issue.record("the page was made")
    } catch {
      guard case .corruptLine(4, let reason) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(reason.contains(forgery.reason), "\(reason)")
    }
  }

  @Test func stringsMustBeUTF8AndSnapshotsNameTheHeadersStores() throws {
    let file = TemporaryFile()
    let start = Array(#"{"k":"r","i":0,"t":1,"s":"counter","a":{},"m":{"text":""#.utf8)
    // 0xC3 starts a sequence of two bytes, but "(" does not continue one.
    writeSession([Array(Self.header.utf8), start + [0xC3, 0x28] + Array(#""}}"#.utf8)], to: file.url)
    #expect(throws: SessionError.corruptLine(line: 2, reason: "not UTF-8 at column \(start.count + 1)")) {
      try SessionInspector.page(forSessionAt: file.url)
    }
    writeSession([Self.header, #"{"k":"s","i":0,"m":{"counter":{},"other":{}},"a":{}}"#], to: file.url)
    #expect(throws: SessionError.unknownStore(identifier: "other", line: 2)) {
      try SessionInspector.page(forSessionAt: file.url)
    }
  }

  @Test func everyKindOfLineARecorderWritesIsAccepted() throws {
    let file = TemporaryFile()
    writeSession(
      [
        Self.header, #"{"k":"s","i":0,"m":{"counter":{"count":0}},"a":{}}"#, Self.record(0, 1),
        Self.record(1, 1, extra: #","e":"it failed: \"quoted\" \u00e9 \ud83d\ude00","f":1200"#),
        #"{"k":"e","d":1795000000000000002,"key":"user \"1\"","v":{"name":"Ada","n":-1.5e-3,"ok":[true,false,null]}}"#,
        Self.record(2, 1, extra: #","d":1795000000000000002,"e":"CancellationError()","c":true"#),
        #"{"k":"m","i":0}"#, #"{"k":"m","i":-1}"#, #"{"k":"m","i":2}"#,
        #"{"k":"s","i":3,"m":{"counter":{"count":1,"deep":[[[{"x":"é ✓"}]]]}},"a":{"counter":{"increase":{"_0":1}}}}"#,
      ], to: file.url)
    let session = try Self.embeddedSession(try SessionInspector.page(forSessionAt: file.url))
    let lines = try #require(session["lines"] as? [[String: Any]])
    #expect(lines.map { $0["k"] as? String } == ["r", "r", "r", "m", "m", "m"])
    #expect(lines[1]["e"] as? String == "it failed: \"quoted\" é 😀")
    #expect(lines[2]["d"] as? String == "1795000000000000002")
    #expect((session["effects"] as? [[String: Any]])?.first?["d"] as? String == "1795000000000000002")
    #expect((session["snapshots"] as? [[String: Any]])?.count == 2)
  }

  @Test func whatAnUndoLeavesIsEmbeddedInTheOrderOfTheFile() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    for count in 1...3 { app.send(CounterAction.increase(count)) }
    _ = try app.recorder.undo()
    _ = try app.recorder.undo()
    _ = try app.recorder.redo()
    app.send(CounterAction.increase(10))  // Replaces the third record, undone.
    app.recorder.flush()
    let fileLines = file.lines
    let session = try Self.embeddedSession(try SessionInspector.page(forSessionAt: file.url))
    let lines = try #require(session["lines"] as? [[String: Any]])
    // Every record and move of the file, numbered as the file's lines; the replaced record marked with the line of
    // the record that replaced it.
    let expected = fileLines.indices.filter {
      fileLines[$0].hasPrefix(#"{"k":"r""#) || fileLines[$0].hasPrefix(#"{"k":"m""#)
    }
    #expect(lines.map { $0["n"] as? Int } == expected.map { $0 + 1 })
    #expect(lines.map { $0["k"] as? String } == ["r", "r", "r", "m", "m", "m", "r"])
    #expect(lines.map { $0["i"] as? Int } == [0, 1, 2, 1, 0, 1, 2])
    #expect(lines.map { $0["x"] as? Int } == [nil, nil, expected.last! + 1, nil, nil, nil, nil])
    #expect(session["cursor"] as? Int == 2)
  }

  @Test func anEmptySessionHasAPageWithNoLines() throws {
    let file = TemporaryFile()
    writeSession([Self.header, #"{"k":"s","i":0,"m":{"counter":{"count":0}},"a":{}}"#], to: file.url)
    let session = try Self.embeddedSession(try SessionInspector.page(forSessionAt: file.url))
    #expect((session["lines"] as? [Any])?.isEmpty == true)
    #expect(session["error"] is NSNull)
  }

  @Test func aFileThatFailsACheckGetsAPageShowingTheErrorAndTheErrorIsThrown() throws {
    let file = TemporaryFile()
    writeSession([Self.header, Self.record(0, 1), #"{"k":"r","i":1,"t":1,</script>}"#], to: file.url)
    let output = file.directory.appendingPathComponent("page.html")
    try Data("an older page".utf8).write(to: output)
    let expected = SessionError.corruptLine(line: 3, reason: "not JSON: expected a field name at column 22")
    #expect(throws: expected) {
      try SessionInspector.writePage(forSessionAt: file.url, to: output)
    }
    let page = try String(contentsOf: output, encoding: .utf8)
    #expect(page.contains(Self.htmlText("The session file failed a check: \(expected)")))
    let session = try Self.embeddedSession(page)
    #expect((session["error"] as? [String: Any])?["message"] as? String == "\(expected)")
    #expect(session["lines"] == nil)
    // The file is left as it was, and is never replaced by its own error page.
    let before = file.data
    #expect(throws: expected) {
      try SessionInspector.writePage(forSessionAt: file.url, to: file.url)
    }
    #expect(file.data == before)
  }

  @Test func theInspectorsChecksLeaveLoadingAsItWas() throws {
    // Loading decodes a record only when it needs it; reading for the inspector checks every line.
    let file = TemporaryFile()
    writeSession([Self.header, Self.record(0, 1, extra: ",oops"), Self.record(1, 2)], to: file.url)
    let data = file.data
    #expect(try SessionIndex.read(data, path: "", codecs: nil).inspection == nil)
    #expect(throws: SessionError.self) { try SessionIndex.read(data, path: "", codecs: nil, inspecting: true) }
  }
}
