// dispatchstore-inspect: writes a DispatchStore session file as one self-contained HTML page.
//
//   swift run dispatchstore-inspect SESSION.jsonl [-o PAGE.html]
//
// Without -o the page goes to standard output. It needs no codecs: it reads the file's JSON as it is.
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
    FileHandle.standardOutput.write(Data(try SessionInspector.page(forSessionAt: session).utf8))
  }
} catch {
  fail("\(error)")
}
