// Top-level code that awaits, with the calls the compiler must refuse here. CI type-checks this file against the
// built module and expects exactly the refusals marked below, by line (see .ci/run). In top-level code Swift ranks a
// synchronous overload above an `async` one of the same shape, so these would pick a form that does not wait (or
// that blocks the thread the main queue needs) in spite of the `await`.
import DispatchStore

enum Tap: ActionType {
  case tap
}

let dispatcher = Dispatcher()
await dispatcher.drain()  // allowed: the one `drain()` is async, and waits
try await dispatcher.start(action: Tap.tap).value  // allowed: waits in every context
try await dispatcher.dispatch(action: Tap.tap)  // refused: fire and forget
try await dispatcher.dispatch(action: Tap.tap, mode: .serial)  // refused: fire and forget
try await dispatcher.dispatch(actions: [Tap.tap, Tap.tap])  // refused: fire and forget
dispatcher.waitUntilDrained()  // refused: blocks the thread
