import Testing

@testable import DispatchStore

@Suite("WaitGraph", .watchdog)
struct WaitGraphTests {
  private func graph(_ waits: [[String]], registered: Set<String> = []) -> Result<WaitGraph, DispatchError> {
    let identifiers = waits.indices.map { "s\($0)" }
    return WaitGraph.make(identifiers: identifiers, waitLists: waits, isRegistered: { registered.contains($0) })
  }

  private func dependents(_ graph: WaitGraph) -> [[Int]] {
    (0..<graph.count).map { Array(graph.dependents(of: $0)) }
  }

  @Test func groupsWhoWaitsForWhomInNodeOrder() throws {
    // s1 and s3 wait for s0; s2 waits for s3 (registered after it) and, twice, for s1.
    let made = try graph([[], ["s0"], ["s3", "s1", "s1"], ["s0"]]).get()
    #expect(dependents(made) == [[1, 3], [2], [], [2]])
    #expect((0..<made.count).map(made.waitCount(of:)) == [0, 1, 2, 1])
  }

  @Test func countsDownAsStoresFinishAndReportsEachReadyNodeOnce() throws {
    var made = try graph([[], ["s0"], ["s0", "s1"], ["s2"]]).get()
    var ready: [[Int]] = []
    for node in 0..<4 {
      var queue = ReadyQueue()
      let (taken, queued) = made.nodeFinished(node, into: &queue, takeFirst: false)
      #expect(taken == nil)
      var now: [Int] = []
      while let next = queue.popFirst() { now.append(next) }
      #expect(queued == !now.isEmpty)
      ready.append(now)
    }
    #expect(ready == [[1], [2], [3], []])
    #expect((0..<made.count).map(made.waitCount(of:)) == [0, 0, 0, 0])
  }

  @Test func takesTheFirstReadyNodeOnlyWhenNoneIsQueued() throws {
    // s1, s2 and s3 all wait only for s0.
    var made = try graph([[], ["s0"], ["s0"], ["s0"]]).get()
    var queue = ReadyQueue()
    let (taken, queued) = made.nodeFinished(0, into: &queue, takeFirst: true)
    #expect(taken == 1 && queued)
    #expect([queue.popFirst(), queue.popFirst(), queue.popFirst()] == [2, 3, nil])

    // With a node already queued, the new ones queue behind it: nodes start in the order they became ready.
    var other = try graph([[], ["s0"]]).get()
    var busy = ReadyQueue()
    busy.append(7)
    let (none, queuedBehind) = other.nodeFinished(0, into: &busy, takeFirst: true)
    #expect(none == nil && queuedBehind)
    #expect([busy.popFirst(), busy.popFirst(), busy.popFirst()] == [7, 1, nil])
  }

  @Test func findsACycleWhateverTheRegistrationOrder() {
    for waits in [[["s1"], ["s0"]], [["s2"], [], ["s0"]], [[], ["s2"], ["s1"]], [["s0"]]] {
      guard case .failure(.waitCycle(let cycle)) = graph(waits) else {
        Issue.record("no cycle found in \(waits)")
        continue
      }
      #expect(cycle.first == cycle.last && cycle.count >= 2, "\(cycle)")
    }
  }

  @Test func skipsRegisteredStoresThatDoNotRespondAndRejectsUnknownOnes() throws {
    let made = try graph([["idle"], ["s0", "idle"]], registered: ["idle"]).get()
    #expect(dependents(made) == [[1], []])
    #expect((0..<made.count).map(made.waitCount(of:)) == [0, 1])
    guard case .failure(.unknownWaitTarget(let store, let missing)) = graph([[], ["nobody"]]) else {
      Issue.record("expected unknownWaitTarget")
      return
    }
    #expect(store == "s1" && missing == "nobody")
  }

  @Test func indexesManyStoresByDictionary() throws {
    // More than 16 stores: identifiers are looked up in a dictionary rather than compared one by one.
    let count = 40
    let waits = (0..<count).map { $0 == 0 ? [] : ["s\($0 - 1)"] }
    let made = try graph(waits).get()
    #expect(dependents(made) == (0..<count).map { $0 == count - 1 ? [] : [$0 + 1] })
  }
}
