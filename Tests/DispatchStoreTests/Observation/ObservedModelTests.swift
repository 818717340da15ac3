import Foundation
import Observation
import Testing

@testable import DispatchStore

/// A model of ten fields, one of them a struct, and one that is not `Equatable`.
struct Dashboard: ModelType, Equatable {
  struct Address: Equatable, Sendable {
    var city = ""
    var street = ""
  }

  var fields = [Int](repeating: 0, count: 10)
  var address = Address()
  var title = ""
  var count = 0
}

enum DashboardAction: ActionType {
  case set(field: Int, to: Int)
  /// Sets fields 0, 1 and 2 in one transaction.
  case setFirstThree(Int)
  case city(String)
  case title(String)
}

func makeDashboardStore() -> Store<Dashboard, DashboardAction> {
  Store(identifier: "dashboard", model: Dashboard()) { action, model in
    switch action {
    case .set(let field, let value): model.fields[field] = value
    case .setFirstThree(let value): for field in 0..<3 { model.fields[field] = value }
    case .city(let city): model.address.city = city
    case .title(let title): model.title = title
    }
  }
}

/// Counts how often each tracker fired; `track` re-arms nothing: each tracker fires at most once, as Observation's.
final class Trackers: Sendable {
  let fired = Locked<[String: Int]>([:])

  func track(_ name: String, _ read: @escaping @Sendable () -> Void) {
    withObservationTracking(read) { [fired] in fired.withLock { $0[name, default: 0] += 1 } }
  }

  var counts: [String: Int] { fired.withLock { $0 } }
}

/// Ten named fields, as the figure asks.
struct TenFields: ModelType, Equatable {
  var f0 = 0, f1 = 0, f2 = 0, f3 = 0, f4 = 0, f5 = 0, f6 = 0, f7 = 0, f8 = 0, f9 = 0
}

enum TenFieldsAction: ActionType {
  case setSixth(Int)
}

@Suite("ObservedModel", .timeLimit(.minutes(1)), .watchdog)
struct ObservedModelTests {
  @Test func oneUpdateOfOneOfTenFieldsFiresExactlyOneOfTenTrackers() throws {
    // An operation store: one `update` (the operation's `updateModel`) of one field.
    let store = Store(identifier: "ten", model: TenFields()) { (action: TenFieldsAction, context) in
      guard case .setSixth(let value) = action else { return }
      context.updateModel { $0.f6 = value }
    }
    let observed = store.observable(synchronously: true)
    let trackers = Trackers()
    trackers.track("f0") { _ = observed.f0 }
    trackers.track("f1") { _ = observed.f1 }
    trackers.track("f2") { _ = observed.f2 }
    trackers.track("f3") { _ = observed.f3 }
    trackers.track("f4") { _ = observed.f4 }
    trackers.track("f5") { _ = observed.f5 }
    trackers.track("f6") { _ = observed.f6 }
    trackers.track("f7") { _ = observed.f7 }
    trackers.track("f8") { _ = observed.f8 }
    trackers.track("f9") { _ = observed.f9 }
    let dispatcher = Dispatcher()
    try dispatcher.register(store: store)
    try dispatcher.dispatchSync(action: TenFieldsAction.setSixth(1))

    #expect(trackers.counts == ["f6": 1])
    #expect(observed.f6 == 1)
  }

  @Test func aChangeToOneFieldFiresOnlyTheTrackersThatReadIt() throws {
    let dispatcher = Dispatcher()
    let store = makeDashboardStore()
    try dispatcher.register(store: store)
    let observed = store.observable(synchronously: true)
    let trackers = Trackers()
    for field in 0..<10 { trackers.track("field\(field)") { _ = observed.fields[field] } }
    // `fields` is one key path: trackers of single elements read through the subscript.
    let elementTrackers = Trackers()
    for field in 0..<10 { elementTrackers.track("element\(field)") { _ = observed[\.fields[field]] } }

    try dispatcher.dispatchSync(action: DashboardAction.set(field: 4, to: 7))

    #expect(elementTrackers.counts == ["element4": 1])
    // Ten trackers of the whole array all read `fields`, which changed.
    #expect(trackers.counts.count == 10)
    #expect(observed[\.fields[4]] == 7)
  }

  @Test func trackersOfUnchangedFieldsAreNotFired() throws {
    let dispatcher = Dispatcher()
    let store = makeDashboardStore()
    try dispatcher.register(store: store)
    let observed = store.observable(synchronously: true)
    let trackers = Trackers()
    trackers.track("city") { _ = observed[\.address.city] }
    trackers.track("street") { _ = observed[\.address.street] }
    trackers.track("title") { _ = observed.title }

    try dispatcher.dispatchSync(action: DashboardAction.city("Lyon"))
    // A change that leaves the value equal fires nobody.
    try dispatcher.dispatchSync(action: DashboardAction.title(""))

    #expect(trackers.counts == ["city": 1])
    #expect(observed.address.city == "Lyon")
  }

  @Test func aTransactionChangingSeveralFieldsFiresEachTrackerOnce() throws {
    let dispatcher = Dispatcher()
    let store = makeDashboardStore()
    try dispatcher.register(store: store)
    let observed = store.observable(synchronously: true)
    let trackers = Trackers()
    trackers.track("first three") { for field in 0..<3 { _ = observed[\.fields[field]] } }
    trackers.track("field0") { _ = observed[\.fields[0]] }
    trackers.track("field5") { _ = observed[\.fields[5]] }

    try dispatcher.dispatchSync(action: DashboardAction.setFirstThree(9))

    #expect(trackers.counts == ["first three": 1, "field0": 1])
  }

  @Test func readingTheWholeModelIsToldOfEveryChange() throws {
    let dispatcher = Dispatcher()
    let store = makeDashboardStore()
    try dispatcher.register(store: store)
    let observed = store.observable(synchronously: true)
    let trackers = Trackers()
    trackers.track("model") { _ = observed.model }

    try dispatcher.dispatchSync(action: DashboardAction.title("new"))

    #expect(trackers.counts == ["model": 1])
    #expect(observed.model.title == "new")
  }

  @Test func theObservedModelStopsFollowingTheStoreWhenReleased() throws {
    let dispatcher = Dispatcher()
    let store = makeDashboardStore()
    try dispatcher.register(store: store)
    var observed: ObservedModel<Dashboard>? = store.observable(synchronously: true)
    #expect(store.observerCount == 1)
    #expect(observed?.title == "")
    observed = nil
    #expect(store.observerCount == 0)
  }

  @Test func mainThreadDeliveryUpdatesTheModelOnTheMainQueue() throws {
    // A run-loop thread of its own, which the drain below waits for, and no other test uses.
    let dispatcher = Dispatcher(mainQueue: .runLoopThread(MainRunLoopThread(name: "observed", idlePolling: .zero)))
    let store = makeDashboardStore()
    try dispatcher.register(store: store)
    let observed = store.observable()
    let trackers = Trackers()
    let firedOnMainQueue = Locked<Bool?>(nil)
    withObservationTracking {
      _ = observed.title
    } onChange: {
      firedOnMainQueue.withLock { $0 = dispatcher.mainQueue.isCurrent }
    }

    try dispatcher.dispatchSync(action: DashboardAction.title("main"))
    dispatcher.waitUntilDrained()

    #expect(firedOnMainQueue.withLock { $0 } == true)
    #expect(observed.title == "main")
    withExtendedLifetime(trackers) {}
  }

  @Test func concurrentChangesLeaveTheObservedModelAtTheStoresModel() async throws {
    let dispatcher = Dispatcher()
    let store = makeDashboardStore()
    try dispatcher.register(store: store)
    let observed = store.observable(synchronously: true)
    await onThreads(4) { thread in
      for value in 1...200 {
        _ = dispatchSync(dispatcher, DashboardAction.set(field: thread, to: value))
        _ = observed[\.fields[thread]]
      }
    }
    #expect(observed.model == store.model)
    #expect(observed[\.fields[0]] == 200)
  }
}
