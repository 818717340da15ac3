import Foundation

/// Writes a session file as one self-contained HTML page: a timeline of its dispatches, the models of every store
/// at the selected point, the field changes of each transaction, and a verification's divergence.
///
/// ```swift
/// try SessionInspector.writePage(forSessionAt: url, to: URL(fileURLWithPath: url.path + ".html"))
/// ```
///
/// The page works offline (its styles and script are inline, with no fonts or scripts to fetch) and keeps long
/// sessions responsive: the timeline draws only the rows in view. No codecs are needed: the page reads the file's
/// JSON as it is. `swift run dispatchstore-inspect SESSION.jsonl` writes it from the command line.
public enum SessionInspector {
  /// The page for the session file at `url`.
  /// - Parameters:
  ///   - url: A session file, format version 2.
  ///   - divergence: The error a ``Session/verify(against:mode:)`` run threw, to highlight where it diverged.
  /// - Returns: The HTML page.
  /// - Throws: ``SessionError`` if the file does not load (as ``Session/load(from:codecs:)`` checks it, without
  ///   codecs); a version 1 file must be saved as version 2 first (``Session/save(to:)``).
  public static func page(forSessionAt url: URL, divergence: ReplayError? = nil) throws(SessionError) -> String {
    let index = try SessionIndex.read(try SessionFile.read(url), path: url.path, codecs: nil)
    return page(for: index, title: url.lastPathComponent, divergence: divergence)
  }

  /// Writes the page for the session file at `url` to `output`, never over a session file.
  ///
  /// `output` is created, or the regular file there replaced (by renaming a complete copy over it); a session file,
  /// the one read included, or anything but a regular file is left as it is.
  /// - Parameters:
  ///   - url: A session file, format version 2.
  ///   - output: Where to write the page.
  ///   - divergence: The error a ``Session/verify(against:mode:)`` run threw, to highlight where it diverged.
  /// - Throws: The errors of ``page(forSessionAt:divergence:)``; ``SessionError/wouldReplaceSession(path:)`` if
  ///   `output` is a session file, ``SessionError/notARegularFile(path:kind:)``, or an I/O error.
  public static func writePage(
    forSessionAt url: URL, to output: URL, divergence: ReplayError? = nil
  ) throws(SessionError) {
    let page = try page(forSessionAt: url, divergence: divergence)
    try SessionFile.replace(output, with: Data(page.utf8), replacing: .anythingButSessions)
  }

  static func page(for index: SessionIndex, title: String, divergence: ReplayError?) -> String {
    var json: [UInt8] = []
    json.append(contentsOf: "{\"title\":".utf8)
    JSONText.append(title, to: &json)
    json.append(contentsOf: ",\"stores\":[".utf8)
    for (offset, store) in index.storeIdentifiers.enumerated() {
      if offset > 0 { json.append(UInt8(ascii: ",")) }
      JSONText.append(store, to: &json)
    }
    json.append(contentsOf: "],\"cursor\":\(index.cursor),\"firstIndex\":\(index.firstIndex)".utf8)
    // The lines as written: records of the kept history, snapshots and effects, each a JSON object.
    appendLines("records", index.records.map(\.line), of: index, to: &json)
    appendLines("snapshots", index.snapshots.map(\.line), of: index, to: &json)
    appendLines("effects", index.effects.values.flatMap { $0 }, of: index, to: &json)
    json.append(contentsOf: ",\"divergence\":".utf8)
    appendDivergence(divergence, to: &json)
    json.append(UInt8(ascii: "}"))
    // Inside a <script> element, "</" would end it early: JSON allows "<\/" for it.
    var embedded = String(decoding: json, as: UTF8.self)
    embedded = embedded.replacingOccurrences(of: "</", with: "<\\/")
    return InspectorPage.html.replacingOccurrences(of: "/*SESSION*/null", with: embedded)
      .replacingOccurrences(of: "<!--TITLE-->", with: escapeHTML(title))
  }

  private static func appendLines(
    _ name: String, _ lines: [SessionIndex.Line], of index: SessionIndex, to json: inout [UInt8]
  ) {
    json.append(contentsOf: ",\"\(name)\":[".utf8)
    for (offset, line) in lines.sorted(by: { $0.number < $1.number }).enumerated() {
      if offset > 0 { json.append(UInt8(ascii: ",")) }
      if name == "snapshots" {
        json.append(contentsOf: index.data[line.range])
      } else {
        appendQuotingIdentifiers(index.data[line.range], to: &json)
      }
    }
    json.append(UInt8(ascii: "]"))
  }

  /// Appends a line with its transaction and dispatch identifiers (`"t"`, `"d"`) as strings.
  ///
  /// They exceed the integers a JavaScript number holds exactly. They come before the store or key; nothing after
  /// is touched.
  private static func appendQuotingIdentifiers(_ line: Data, to json: inout [UInt8]) {
    let bytes = Array(line)
    let keys = [Array("\"t\":".utf8), Array("\"d\":".utf8)]
    let ends = [Array(",\"s\":".utf8), Array(",\"key\":".utf8)]
    var position = 0
    while position < bytes.count {
      if ends.contains(where: { bytes[position...].starts(with: $0) }) { break }
      if let key = keys.first(where: { bytes[position...].starts(with: $0) }) {
        json.append(contentsOf: key)
        position += key.count
        json.append(UInt8(ascii: "\""))
        while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
          json.append(bytes[position])
          position += 1
        }
        json.append(UInt8(ascii: "\""))
        continue
      }
      json.append(bytes[position])
      position += 1
    }
    json.append(contentsOf: bytes[position...])
  }

  private static func appendDivergence(_ divergence: ReplayError?, to json: inout [UInt8]) {
    switch divergence {
    case .diverged(let index, let dispatch, let store, let action, let differences):
      json.append(contentsOf: "{\"index\":\(index),\"dispatch\":\(dispatch.rawValue),\"store\":".utf8)
      JSONText.append(store, to: &json)
      json.append(contentsOf: ",\"action\":".utf8)
      JSONText.append(action, to: &json)
      json.append(contentsOf: ",\"fields\":[".utf8)
      for (offset, difference) in differences.enumerated() {
        if offset > 0 { json.append(UInt8(ascii: ",")) }
        json.append(contentsOf: "{\"path\":".utf8)
        JSONText.append(difference.path, to: &json)
        json.append(contentsOf: ",\"expected\":".utf8)
        JSONText.append(difference.expected ?? "(absent)", to: &json)
        json.append(contentsOf: ",\"actual\":".utf8)
        JSONText.append(difference.actual ?? "(absent)", to: &json)
        json.append(UInt8(ascii: "}"))
      }
      json.append(contentsOf: "],\"message\":".utf8)
      JSONText.append("\(divergence!)", to: &json)
      json.append(UInt8(ascii: "}"))
    case .some(let error):
      json.append(contentsOf: "{\"message\":".utf8)
      JSONText.append("\(error)", to: &json)
      json.append(UInt8(ascii: "}"))
    case .none:
      json.append(contentsOf: "null".utf8)
    }
  }

  private static func escapeHTML(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
      .replacingOccurrences(of: ">", with: "&gt;")
  }
}
