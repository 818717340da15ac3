import Foundation
import Testing

@testable import DispatchStore

@Suite("Session inspector", .timeLimit(.minutes(1)))
struct SessionInspectorTests {
  @Test func thePageIsSelfContainedAndEmbedsTheSessionSafely() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(TextAction.append("</script><script>alert(1)</script>"))
    app.send(CounterAction.increase(1))
    app.recorder.flush()
    let page = try SessionInspector.page(forSessionAt: file.url)
    // Nothing to fetch: no external scripts, styles, fonts or images.
    for reference in ["src=", "href=", "@import", "url(", "http://", "https://"] {
      #expect(!page.contains(reference), "the page refers to \(reference)")
    }
    // The embedded session cannot end its script element early.
    let embedded = try #require(page.range(of: "<script type=\"application/json\" id=\"session\">"))
    let rest = page[embedded.upperBound...]
    let end = try #require(rest.range(of: "</script>"))
    let json = String(rest[..<end.lowerBound])
    #expect(json.contains(#"<\/script><script>alert(1)<\/script>"#))
    // Identifiers are strings, which JavaScript numbers could not hold exactly.
    let session = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    let records = try #require(session["records"] as? [[String: Any]])
    #expect(records.count == 2)
    #expect(records[1]["t"] as? String == String(app.recorder.records[1].transactionID.rawValue))
    #expect(session["stores"] as? [String] == ["counter", "text"])
  }

  @Test func aDivergenceIsEmbeddedWithItsFields() throws {
    let file = TemporaryFile()
    let app = RecordedApp()
    try app.recorder.attach(appendingTo: file.url, codecs: appCodecs())
    app.send(CounterAction.increase(1))
    app.recorder.flush()
    let divergence = ReplayError.diverged(
      index: 0, dispatchID: app.recorder.records[0].dispatchID, storeIdentifier: "counter", action: "increase(1)",
      differences: [FieldDifference(path: "count", expected: "1", actual: "2")])
    let page = try SessionInspector.page(forSessionAt: file.url, divergence: divergence)
    #expect(page.contains(#""fields":[{"path":"count","expected":"1","actual":"2"}]"#))
  }

  @Test func aVersionOneFileMustBeUpgradedFirst() throws {
    let file = TemporaryFile()
    file.write(#"{"format":"DispatchStore.session","stores":[],"version":1}"# + "\n")
    #expect(throws: SessionError.unsupportedVersion(found: 1, supported: 2, line: 1)) {
      try SessionInspector.page(forSessionAt: file.url)
    }
  }
}
