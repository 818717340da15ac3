// A process whose main thread calls `dispatchMain()`, as a server or a tool built on Dispatch does. Its dispatcher's
// main queue is the process main thread (`DispatchQueue.main`): `.mainThread` dispatches and main-thread observers
// run there, in order, and `drain()` waits for them before the process exits.
//
// `.processMainThread` is the default on Apple platforms; on Linux the default is the library's own thread. CI also
// builds this file with `-D DISPATCHSTORE_PROCESS_MAIN_THREAD`, which makes the Apple platforms' default the default
// on Linux too, and checks what it prints.
import Dispatch
import DispatchStore
import Foundation
import Synchronization

struct Log: ModelType {
  var entries: [Int] = []
}

enum LogAction: ActionType {
  case append(Int)
}

let dispatcher = Dispatcher(mainQueue: .processMainThread)
let log = Store(identifier: "log", model: Log()) { (action: LogAction, model) in
  if case .append(let entry) = action { model.entries.append(entry) }
}
try dispatcher.register(store: log)

/// What the main-thread observer heard, and whether it always ran as the main queue's work.
let heard = Mutex<(entries: [Int], onMainQueue: Bool)>(([], true))
let token = log.observe { change in
  let onMainQueue = MainQueue.processMainThread.isCurrent
  heard.withLock {
    $0.entries.append(change.model.entries.last ?? 0); $0.onMainQueue = $0.onMainQueue && onMainQueue
  }
}

// Work for after `dispatchMain()` has taken the main thread over.
DispatchQueue.main.async {
  print("the default main queue is the process main thread: \(Dispatcher().mainQueue.isCurrent)")
  // Fire and forget, from the main queue's own work: they run after this block, in order.
  for entry in 1...3 { dispatcher.dispatch(action: LogAction.append(entry), mode: .mainThread) }
  // Then from another thread, once they ran.
  DispatchQueue.main.async {
    Thread.detachNewThread(dispatchFromAnotherThread)
  }
}

@Sendable func dispatchFromAnotherThread() {
  dispatcher.dispatch(action: LogAction.append(4), mode: .sync)
  dispatcher.dispatch(action: LogAction.append(5), mode: .mainThread)
  Task {
    // Everything scheduled on the main queue so far has run, and what it scheduled in turn.
    let drained = await dispatcher.drain()
    let (entries, onMainQueue) = heard.withLock { $0 }
    print("drained: \(drained)")
    print("model: \(log.model.entries.map(String.init).joined(separator: ","))")
    print("observer heard, on the main queue: \(entries.map(String.init).joined(separator: ",")) (\(onMainQueue))")
    withExtendedLifetime(token) {}
    exit(0)
  }
}

dispatchMain()
