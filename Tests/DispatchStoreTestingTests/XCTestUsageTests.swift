import DispatchStore
import DispatchStoreTesting
import XCTest

/// The kit used from XCTest: outside Swift Testing, its failures are reported with `XCTFail`, which this case
/// captures to check them (and to keep the expected ones from failing it).
final class XCTestUsageTests: XCTestCase {
  private var captured: [String] = []
  private var capturing = false

  override func recordFailure(
    withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool
  ) {
    if capturing {
      captured.append(description)
    } else {
      super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
    }
  }

  func testAFeatureAssertedExhaustivelyPasses() async throws {
    let test = TestDispatcher()
    let counter = try test.register(makeCounter())
    let log = try test.register(makeLog())

    await test.send(CountAction.addAndLog(2), .store(counter) { $0.value = 2 })
    await test.receive(LogAction.write("added 2"), .store(log) { $0.lines = ["added 2"] })
    await test.finish()
  }

  func testAWrongExpectationIsReportedWithXCTFail() async throws {
    let test = TestDispatcher()
    let counter = try test.register(makeCounter())
    capturing = true
    await test.send(CountAction.add(1), .store(counter) { $0.value = 5 })
    capturing = false

    XCTAssertEqual(captured.count, 1)
    XCTAssertTrue(captured.first?.contains("value: expected 5, actual 1") == true, "\(captured)")
  }
}
