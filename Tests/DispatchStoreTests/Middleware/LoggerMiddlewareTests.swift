import Foundation
import Testing

@testable import DispatchStore

struct Profile: ModelType, Codable, Equatable {
  struct User: Codable, Equatable {
    var name = "A"
    var tags: [String] = []
  }

  var user = User()
  var visits = 0
}

enum ProfileAction: ActionType, Codable {
  case rename(String)
  case tag(String)
  case visit
}

final class ProfileReducer: Reducer<Profile, ProfileAction>, @unchecked Sendable {
  override func operation(
    for action: ProfileAction, in store: Store<Profile, ProfileAction>
  ) -> ActionOperation<Profile, ProfileAction> {
    ActionOperation(action: action, store: store) { operation, action, store in
      operation.updateModel { profile in
        switch action {
        case .rename(let name): profile.user.name = name
        case .tag(let tag): profile.user.tags.append(tag)
        case .visit: break
        }
      }
      operation.finish()
    }
  }
}

@Suite("LoggerMiddleware", .timeLimit(.minutes(1)))
struct LoggerMiddlewareTests {
  @Test func writesOneLinePerTransactionWithTheChangedFieldsAsKeyPaths() throws {
    let lines = Locked<[String]>([])
    let dispatcher = Dispatcher()
    let store = Store(identifier: "profile", model: Profile(), reducer: ProfileReducer())
    try dispatcher.register(store: store)
    let recorder = RecordingMiddleware()
    dispatcher.register(middleware: recorder)
    dispatcher.register(middleware: LoggerMiddleware { line in lines.withLock { $0.append(line) } })

    #expect(dispatchSync(dispatcher, ProfileAction.rename("B")).isSuccess)
    #expect(dispatchSync(dispatcher, ProfileAction.tag("x")).isSuccess)
    #expect(dispatchSync(dispatcher, ProfileAction.visit).isSuccess)

    let logged = lines.withLock { $0 }
    let ids = recorder.transactions.withLock { $0.map(\.id) }
    #expect(logged.count == 3)
    let first = logged[0].split(separator: "\n").map(String.init)
    #expect(first[0].hasPrefix("[\(ids[0])] profile <- rename(\"B\") ("))
    #expect(first[0].hasSuffix(" µs)"))
    #expect(first.dropFirst() == ["  user/name: \"A\" -> \"B\""])
    #expect(logged[1].hasSuffix("\n  user/tags/0: (none) -> \"x\""))
    #expect(logged[2].hasSuffix(" no change"))
  }

  @Test func failuresAreLoggedWithTheirErrorAndOpaqueModelsWithoutFields() throws {
    struct Opaque: ModelType { var count = 0 }
    final class OpaqueReducer: Reducer<Opaque, CounterAction>, @unchecked Sendable {
      override func operation(for action: CounterAction, in store: Store<Opaque, CounterAction>) -> ActionOperation<
        Opaque, CounterAction
      > {
        ActionOperation(action: action, store: store) { operation, action, store in
          operation.updateModel { $0.count += 1 }
          if action == .fail { return operation.finish(throwing: TestFailure(reason: "no")) }
          operation.finish()
        }
      }
    }
    let lines = Locked<[String]>([])
    let dispatcher = Dispatcher()
    try dispatcher.register(store: Store(identifier: "opaque", model: Opaque(), reducer: OpaqueReducer()))
    dispatcher.register(middleware: LoggerMiddleware { line in lines.withLock { $0.append(line) } })
    #expect(dispatchSync(dispatcher, CounterAction.noop).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.fail).dispatchError != nil)
    let logged = lines.withLock { $0 }
    #expect(logged.count == 2)
    #expect(logged[0].contains("opaque <- noop ("))
    #expect(!logged[0].contains("\n"))  // Not Codable: no field lines, and no claim of "no change".
    #expect(!logged[0].contains("no change"))
    #expect(logged[1].contains("opaque <- fail ("))
    #expect(logged[1].contains("failed: TestFailure(reason: \"no\")"))
  }

  @Test func aCancelledTransactionIsLoggedAsCancelledNotFailed() async throws {
    let dispatcher = Dispatcher()
    let gate = Gate()
    try dispatcher.register(store: Store(identifier: "gated", model: Counter(), reducer: GatedReducer(gate: gate)))
    let lines = Locked<[String]>([])
    dispatcher.register(middleware: LoggerMiddleware { line in lines.withLock { $0.append(line) } })
    let handle = dispatcher.start(action: CounterAction.increase(1), mode: .async)
    _ = await gate.waitForOperations(1)
    handle.cancel()  // The gate finishes the operation with CancellationError.
    _ = await handle.result
    let logged = lines.withLock { $0 }
    #expect(logged.count == 1)
    #expect(logged.first?.contains("gated <- increase(1) (") == true)
    #expect(logged.first?.contains(" cancelled") == true)
    #expect(logged.first?.contains("failed") == false)
  }
}
