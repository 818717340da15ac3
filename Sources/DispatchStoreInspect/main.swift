// dispatchstore-inspect: writes a DispatchStore session file as one self-contained HTML page.
//
//   swift run dispatchstore-inspect SESSION.jsonl [-o PAGE.html]
//
// Without -o the page goes to standard output. It needs no codecs: it reads the file's JSON as it is. A file that
// fails a check (not a session, a line corrupt, out of place or failing its hash) is reported, with exit status 1;
// with -o, the page written shows the error.
import DispatchStore
import Foundation

let usage = "usage: dispatchstore-inspect SESSION.jsonl [-o PAGE.html]"

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("dispatchstore-inspect: \(message)\n".utf8))
  exit(1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
  print(usage)
  exit(0)
}
var output: URL?
if let flag = arguments.firstIndex(of: "-o") {
  guard flag + 1 < arguments.count else { fail(usage) }
  output = URL(fileURLWithPath: arguments[flag + 1])
  arguments.removeSubrange(flag...(flag + 1))
}
guard arguments.count == 1 else { fail(usage) }

let session = URL(fileURLWithPath: arguments[0])
do {
  if let output {
    // Never over a session file, the one read included.
    try SessionInspector.writePage(forSessionAt: session, to: output)
  } else {
    // Through a temporary file, copied in pieces: the page is never in memory as a whole, beside the session.
    let page = FileManager.default.temporaryDirectory.appendingPathComponent("dispatchstore-inspect-\(UUID()).html")
    defer { try? FileManager.default.removeItem(at: page) }
    try SessionInspector.writePage(forSessionAt: session, to: page)
    let reader = try FileHandle(forReadingFrom: page)
    while let piece = try reader.read(upToCount: 1 << 20), !piece.isEmpty {
      try FileHandle.standardOutput.write(contentsOf: piece)
    }
  }
} catch {
  fail("\(error)")
}
