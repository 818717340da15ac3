// todo: a todo list whose state lives only in a DispatchStore session file.
//
// Each run loads the session, restores the list from it (no reducer runs: from the last snapshot and the records
// after it), applies the new command and appends it to the file. `undo` is time travel: it moves the recorder back
// one dispatch. `verify` re-runs every recorded change and checks each state.
import DispatchStore
import Foundation
import Synchronization

let usage = """
  usage: todo [--session PATH] <command>

  commands:
    add TEXT     add an item
    import FILE  add an item for each line of FILE, one change each
    done N       mark item N as done
    list         show the list (the default)
    undo         go back one change (time travel; the next change replaces what was undone)
    history      show every recorded change; > marks where the list is now
    verify       re-run every recorded change and check each recorded state
    inspect      write the session as an HTML page (--output PATH, else the session's path followed by
                 .html), with the first divergence of a verify run highlighted

  The list lives only in a session file (JSON Lines, one line per change):
    --session PATH, else $TODO_SESSION, else ~/.todo-session.jsonl
  list, history, verify and inspect only read it. Each change is on disk before todo says it is done. A corrupt
  session file, or a path that is not a regular file, is reported and left untouched; while one todo changes the
  session, another that tries to is refused.
  """

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("todo: \(message)\n".utf8))
  exit(1)
}

// MARK: - Arguments

var arguments = Array(CommandLine.arguments.dropFirst())
var sessionPath = ProcessInfo.processInfo.environment["TODO_SESSION"]
if let flag = arguments.firstIndex(of: "--session") {
  guard flag + 1 < arguments.count else { fail("--session needs a path\n\(usage)") }
  sessionPath = arguments[flag + 1]
  arguments.removeSubrange(flag...(flag + 1))
}
if arguments.contains("--help") || arguments.contains("-h") {
  print(usage)
  exit(0)
}
let sessionURL =
  sessionPath.map { URL(fileURLWithPath: $0) }
  ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".todo-session.jsonl")
let command = arguments.first ?? "list"

// MARK: - Load and restore the session

let dispatcher = Dispatcher()
let todos = makeTodoStore()
try! dispatcher.register(store: todos)
let recorder = RecorderMiddleware(maxNumberOfRecords: 1_000_000)
dispatcher.register(middleware: recorder)
var codecs = SessionCodecs()
codecs.register(storeIdentifier: "todos", model: TodoList.self, action: TodoAction.self)

/// The commands that change the list, and so write the session; the others only read it.
let changingCommands: Set = ["add", "import", "done", "undo"]
let changes = changingCommands.contains(command)

var session: Session?
do {
  session = try Session.load(from: sessionURL, codecs: codecs)
} catch .noFile {
  // A new session: only a change creates the file.
  if !changes { fail("no session file at \(sessionURL.path) yet (todo add TEXT starts one)") }
} catch {
  fail("cannot use the session file \(sessionURL.path): \(error)\nThe file was left untouched.")
}
if changes, let loaded = session, loaded.formatVersion < 2 {
  // A file of an earlier release: rewritten in the current format, which is appended to.
  do {
    try loaded.save(to: sessionURL)
    session = try Session.load(from: sessionURL, codecs: codecs)
  } catch {
    fail("cannot upgrade the session file \(sessionURL.path): \(error)")
  }
}
if let session {
  if changes, let line = session.truncatedLine {
    FileHandle.standardError.write(
      Data("todo: note: line \(line) of \(sessionURL.path) was incomplete (an interrupted write); dropped it\n".utf8))
  }
  do {
    try recorder.resume(session, in: dispatcher)
  } catch {
    fail("the session does not restore: \(error)\nThe file was left untouched.")
  }
}
if changes {
  do {
    // Each change is on disk before the command reports it.
    try recorder.attach(appendingTo: sessionURL, codecs: codecs, syncEachRecord: true)
  } catch .inUse, .historyMismatch {
    fail("the session \(sessionURL.path) is being changed by another todo; nothing was changed, try again")
  } catch {
    fail("cannot write the session file \(sessionURL.path): \(error)\nThe file was left untouched.")
  }
}

// MARK: - Commands

/// Every this many changes, a run writes a snapshot, so that the next run restores from it instead of reading the
/// whole history.
let snapshotInterval = 50

/// The position of the session's last snapshot when it was loaded.
let lastSnapshot = session?.snapshotIndices.last ?? 0

/// Writes a snapshot when the changes since the last one reach the interval.
func snapshotIfDue() {
  if recorder.cursor + 1 - lastSnapshot >= snapshotInterval { recorder.snapshot() }
}

/// Re-runs the session against a fresh list; the divergence, if it diverged.
func verifySession(_ session: Session) -> SessionError? {
  let fresh = Dispatcher()
  try! fresh.register(store: makeTodoStore())
  do {
    try session.verify(against: fresh)
    return nil
  } catch {
    return error
  }
}

func printList() {
  let items = todos.model.items
  if items.isEmpty { print("Nothing to do.") }
  for item in items { print("\(item.done ? "[x]" : "[ ]") \(item.id). \(item.title)") }
}

func apply(_ action: TodoAction) {
  do {
    try dispatcher.dispatchSync(action: action)
  } catch .operationsFailed(let failures) where !failures.isEmpty {
    fail("\(failures[0].error)")
  } catch {
    fail("\(error)")
  }
  snapshotIfDue()
  // `syncEachRecord`: the change's line was written and synced before the dispatch returned; no flush needed.
  if let error = recorder.persistenceError { fail("the change was made but not saved: \(error)") }
}

switch command {
case "add":
  let title = arguments.dropFirst().joined(separator: " ")
  apply(.add(title))
  print("Added \(todos.model.nextID - 1). \(title)")
case "import":
  guard arguments.count == 2 else { fail("usage: todo import FILE") }
  let text: String
  do {
    text = try String(contentsOfFile: arguments[1], encoding: .utf8)
  } catch {
    fail("cannot read \(arguments[1]): \(error.localizedDescription)")
  }
  for title in text.split(separator: "\n", omittingEmptySubsequences: true) {
    apply(.add(String(title)))
    // Unbuffered: each line says that its add is on disk, also if the process is killed right after.
    FileHandle.standardOutput.write(Data("Added \(todos.model.nextID - 1). \(title)\n".utf8))
  }
case "done":
  guard arguments.count == 2, let id = Int(arguments[1]) else { fail("usage: todo done N") }
  apply(.complete(id))
  print("Done: \(id).")
case "list":
  printList()
case "undo":
  guard let undone = recorder.records.last(where: { $0.index <= recorder.cursor }) else { fail("nothing to undo") }
  do { try recorder.undo() } catch { fail("\(error)") }
  // Not flushed here: the recorder flushes its file when the process exits normally (CI's next `todo list`
  // checks that the undo was written).
  print("Undid: \(undone.dispatchedAction)")
  printList()
case "history":
  let records = recorder.records
  if records.isEmpty { print("No changes yet.") }
  if recorder.cursor < (records.first?.index ?? 0) { print("> (start)") }
  for record in records {
    let marker = record.index == recorder.cursor ? ">" : " "
    // A transaction identifier is its start, in nanoseconds since 1970.
    let started = Date(timeIntervalSince1970: Double(record.transaction.id.rawValue) / 1e9)
    print(
      "\(marker) #\(record.index) \(record.dispatchedAction)  (\(started.formatted(date: .numeric, time: .standard)))")
  }
case "verify":
  guard let session else { fail("nothing recorded yet") }  // Unreachable: a missing file failed above.
  if let divergence = verifySession(session) { fail("\(divergence)") }
  print("Re-ran \(session.recordCount) changes from \(sessionURL.path): every recorded state matched.")
  printList()
case "inspect":
  guard let session else { fail("nothing recorded yet") }  // Unreachable: a missing file failed above.
  var output = URL(fileURLWithPath: sessionURL.path + ".html")
  if let flag = arguments.firstIndex(of: "--output") {
    guard flag + 1 < arguments.count else { fail("--output needs a path") }
    output = URL(fileURLWithPath: arguments[flag + 1])
  }
  let divergence = verifySession(session)
  do {
    // Never over a session file, this one included.
    try SessionInspector.writePage(forSessionAt: sessionURL, to: output, divergence: divergence)
  } catch {
    fail("cannot write the page: \(error)")
  }
  print("Wrote \(output.path)" + (divergence.map { "; verify diverged: \($0)" } ?? "; verify matched every state."))
default:
  fail("unknown command \"\(command)\"\n\(usage)")
}
