import Testing

#if canImport(XCTest)
  import XCTest
#endif

/// Where a public call of the kit was made, for failures reported there.
struct CallSite: Sendable {
  let fileID: String
  let filePath: StaticString
  let line: UInt
  let column: UInt

  var location: SourceLocation {
    SourceLocation(fileID: fileID, filePath: "\(filePath)", line: Int(line), column: Int(column))
  }
}

/// Where a failure of the kit is reported: to Swift Testing inside one of its tests, otherwise to XCTest.
enum TestReporter {
  static func fail(_ message: String, at site: CallSite) {
    if Test.current != nil {
      Issue.record(Comment(rawValue: message), sourceLocation: site.location)
      return
    }
    #if canImport(XCTest)
      XCTFail(message, file: site.filePath, line: site.line)
    #else
      Issue.record(Comment(rawValue: message), sourceLocation: site.location)
    #endif
  }
}
