import Dispatch
import Testing

@testable import DispatchStore

/// The decisions of a dispatch, event by event, with no threads, locks or stores.
@Suite("DispatchStateMachine", .watchdog)
struct DispatchStateMachineTests {
  /// Two thread identities, as a run sees them.
  private final class Thread {}
  private let first = Thread()
  private let second = Thread()

  /// A started machine for stores s0, s1 and so on, with these wait lists.
  private func makeMachine(_ waits: [[String]] = [[], ["s0"], []]) throws -> DispatchStateMachine {
    let identifiers = waits.indices.map { "s\($0)" }
    let graph = try WaitGraph.make(identifiers: identifiers, waitLists: waits, isRegistered: { _ in false }).get()
    var machine = DispatchStateMachine.start(count: waits.count, graph: graph)
    machine.runStarted()
    return machine
  }

  /// Stores start in the order they became ready: s1, made ready by s0, after s2, which was ready from the start.
  @Test func oneStarterStartsTheReadyStoresInTheOrderTheyBecameReady() throws {
    var machine = try makeMachine()
    #expect(machine.startRequested(by: ObjectIdentifier(first)) == 0)
    // Another thread finds a starter at work: it starts nothing.
    #expect(machine.startRequested(by: ObjectIdentifier(second)) == nil)

    let afterFirst = machine.storeFinished(0, failure: nil, on: nil, mayHandOff: true)
    #expect(afterFirst.handedOff == nil)
    #expect(!afterFirst.startsReady)
    #expect(afterFirst.completion == nil)
    #expect(machine.starterNeedsNext() == 2)
    #expect(machine.storeFinished(2, failure: nil, on: nil, mayHandOff: true).completion == nil)
    #expect(machine.starterNeedsNext() == 1)

    let last = machine.storeFinished(1, failure: nil, on: nil, mayHandOff: true)
    guard case .success = last.completion?.result else {
      Issue.record("expected the run to complete with success, got \(String(describing: last.completion?.result))")
      return
    }
    #expect(machine.starterNeedsNext() == nil)
  }

  /// In a chain, the store a finished store made ready is handed to the starter, which needs no lock for it.
  @Test func starterIsHandedTheStoreItMadeReadyWhenNoneWaitsBeforeIt() throws {
    var machine = try makeMachine([[], ["s0"], ["s1"]])
    #expect(machine.startRequested(by: ObjectIdentifier(first)) == 0)
    #expect(machine.storeFinished(0, failure: nil, on: nil, mayHandOff: true).handedOff == 1)
    // A store finishing on the starter's own thread later (a late finish there) is handed over too.
    #expect(machine.storeFinished(1, failure: nil, on: ObjectIdentifier(first), mayHandOff: true).handedOff == 2)
    // Not while the starter still has one handed to it: then it is queued.
    var other = try makeMachine([[], ["s0"], ["s1"]])
    #expect(other.startRequested(by: ObjectIdentifier(first)) == 0)
    #expect(other.storeFinished(0, failure: nil, on: nil, mayHandOff: false).handedOff == nil)
    #expect(other.starterNeedsNext() == 1)
  }

  /// A store that finishes on another thread while nobody starts stores makes that thread start the ready ones.
  @Test func storeFinishingElsewhereWithNoStarterAsksThatThreadToStartTheReadyOnes() throws {
    var machine = try makeMachine()
    #expect(machine.startRequested(by: ObjectIdentifier(first)) == 0)
    #expect(machine.starterNeedsNext() == 2)
    #expect(machine.storeFinished(2, failure: nil, on: nil, mayHandOff: true).completion == nil)
    #expect(machine.starterNeedsNext() == nil)

    let after = machine.storeFinished(0, failure: nil, on: ObjectIdentifier(second), mayHandOff: true)
    #expect(after.handedOff == nil)
    #expect(after.startsReady)
    #expect(machine.startRequested(by: ObjectIdentifier(second)) == 1)
  }

  /// Failures are reported in node order, and a caller that waited before the end is woken by the completion.
  @Test func failuresAreReportedInNodeOrderToTheCallerWaiting() throws {
    var machine = try makeMachine()
    guard case .wait(let semaphore) = machine.resultAwaited() else {
      Issue.record("a run that has not completed must make its caller wait")
      return
    }
    #expect(machine.startRequested(by: ObjectIdentifier(first)) == 0)
    let failure = { (store: String) in
      OperationFailure(
        storeIdentifier: store, transactionID: TransactionID(rawValue: 1), error: TestFailure(reason: store))
    }
    _ = machine.storeFinished(2, failure: failure("s2"), on: ObjectIdentifier(second), mayHandOff: true)
    _ = machine.storeFinished(0, failure: nil, on: nil, mayHandOff: true)
    let last = machine.storeFinished(1, failure: failure("s1"), on: nil, mayHandOff: true)

    #expect(last.completion?.waiter === semaphore)
    guard case .failure(.operationsFailed(let failures)) = last.completion?.result else {
      Issue.record("expected the run to fail, got \(String(describing: last.completion?.result))")
      return
    }
    #expect(failures.map(\.storeIdentifier) == ["s1", "s2"])
    guard case .done = machine.resultAwaited() else {
      Issue.record("a completed run must not make its caller wait")
      return
    }
  }
}
