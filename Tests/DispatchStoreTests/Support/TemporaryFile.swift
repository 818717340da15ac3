import Foundation

/// A path in a fresh temporary directory, removed when the value is released.
final class TemporaryFile {
  let directory: URL
  let url: URL

  init(_ name: String = "session.jsonl") {
    directory = FileManager.default.temporaryDirectory.appendingPathComponent("DispatchStoreTests-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    url = directory.appendingPathComponent(name)
  }

  deinit {
    try? FileManager.default.removeItem(at: directory)
  }

  var data: Data { (try? Data(contentsOf: url)) ?? Data() }
  var lines: [String] { String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init) }

  func write(_ text: String) {
    try! Data(text.utf8).write(to: url)
  }
}
