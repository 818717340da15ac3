import Foundation
import Synchronization
import Testing

@testable import DispatchStore

/// A store touched from inside its own reduction: the thread holds the store's lock, so it would wait for itself.
@Suite("Re-entrant reduction", .watchdog)
struct ReentrantReductionTests {
  #if compiler(>=6.2)
    @Test func readingAStoreFromInsideItsOwnReductionEndsTheProcessWithAMessage() async {
      let exit = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        // If the read waits for the lock instead of trapping, the child process ends at its deadline, successfully,
        // which the expectation does not accept.
        Deadlines.shared.after(.seconds(20)) {
          FileHandle.standardError.write(Data("the read inside the reduction was still waiting at its deadline\n".utf8))
          Foundation.exit(EXIT_SUCCESS)
        }
        // The store the reduction reads, set once it exists.
        let own = Mutex<Store<Counter, CounterAction>?>(nil)
        let store = Store<Counter, CounterAction>(identifier: "own", model: Counter()) { _, model in
          let store = own.withLock { $0 }
          model.count = (store?.model.count ?? 0) + 1
        }
        own.withLock { $0 = store }
        let dispatcher = Dispatcher()
        try dispatcher.register(store: store)
        try? dispatcher.dispatchSync(action: CounterAction.increase(1))
      }
      #if !DISPATCHSTORE_MUTEX_LOCK && !canImport(Darwin)
        // The library's own message (the `Mutex` of Apple platforms traps with the system's).
        let message = String(decoding: exit?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("a thread took a lock it already holds"))
        #expect(message.contains("from inside its own reduction"))
      #endif
    }
  #endif
}
