import DispatchStore
import Foundation

/// Replays a recorded session in verify mode against `dispatcher` and fails the test at the first divergence: a
/// session file as a golden test.
///
/// ```swift
/// @Test func checkoutStillBehaves() throws {
///   let dispatcher = makeAppDispatcher()
///   assertSessionReplays(at: Bundle.module.url(forResource: "checkout", withExtension: "jsonl")!,
///                        codecs: appCodecs, against: dispatcher)
/// }
/// ```
/// - Parameters:
///   - url: The session file.
///   - codecs: How each store's actions and models decode.
///   - dispatcher: A dispatcher with the stores the session was recorded with registered (their models do not
///     matter: the re-run starts each store from the model its history starts from).
///   - fileID: The file a failure is reported in: the caller's, by default.
///   - filePath: The path of that file: the caller's, by default.
///   - line: The line a failure is reported at: the caller's, by default.
///   - column: The column a failure is reported at: the caller's, by default.
public func assertSessionReplays(
  at url: URL, codecs: SessionCodecs, against dispatcher: Dispatcher, fileID: String = #fileID,
  filePath: StaticString = #filePath, line: UInt = #line, column: UInt = #column
) {
  let site = CallSite(fileID: fileID, filePath: filePath, line: line, column: column)
  let session: Session
  do {
    session = try Session.load(from: url, codecs: codecs)
  } catch {
    TestReporter.fail("The session \(url.lastPathComponent) does not load: \(error)", at: site)
    return
  }
  do {
    try session.verify(against: dispatcher)
  } catch {
    TestReporter.fail("The session \(url.lastPathComponent) no longer replays: \(error)", at: site)
  }
}
