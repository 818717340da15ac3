/// The order in which one dispatch's stores may start, from their wait lists.
struct WaitGraph {
  /// For each node, the nodes that wait for it.
  var dependents: [[Int]]
  /// For each node, how many nodes it waits for.
  var waitCounts: [Int]

  /// Builds the graph, or the error that forbids running any operation.
  /// - Parameters:
  ///   - identifiers: The responding stores' identifiers, one per node.
  ///   - waitLists: Each node's wait list.
  ///   - isRegistered: Whether an identifier belongs to any registered store.
  static func make(
    identifiers: [String],
    waitLists: [[String]],
    isRegistered: (String) -> Bool
  ) -> Result<WaitGraph, DispatchError> {
    var index: [String: Int] = [:]
    for (node, identifier) in identifiers.enumerated() { index[identifier] = node }
    var graph = WaitGraph(
      dependents: Array(repeating: [], count: identifiers.count),
      waitCounts: Array(repeating: 0, count: identifiers.count))
    for (node, waitList) in waitLists.enumerated() {
      var seen: Set<Int> = []
      for awaited in waitList {
        guard let awaitedNode = index[awaited] else {
          if isRegistered(awaited) { continue }  // Registered but not handling this action: satisfied at once.
          return .failure(.unknownWaitTarget(storeIdentifier: identifiers[node], waitsFor: awaited))
        }
        guard seen.insert(awaitedNode).inserted else { continue }
        graph.dependents[awaitedNode].append(node)
        graph.waitCounts[node] += 1
      }
    }
    if let cycle = graph.findCycle() {
      return .failure(.waitCycle(cycle.map { identifiers[$0] }))
    }
    return .success(graph)
  }

  /// A cycle as a node path whose first node is repeated at the end, or `nil` if the graph is acyclic.
  func findCycle() -> [Int]? {
    // Kahn's algorithm removes every node not on or behind a cycle.
    var counts = waitCounts
    var ready = counts.indices.filter { counts[$0] == 0 }
    var removed = 0
    while let node = ready.popLast() {
      removed += 1
      for dependent in dependents[node] {
        counts[dependent] -= 1
        if counts[dependent] == 0 { ready.append(dependent) }
      }
    }
    guard removed < counts.count else { return nil }
    // Walk backwards along "waits for" edges among the remaining nodes until a node repeats.
    var waitsFor = Array(repeating: [Int](), count: counts.count)
    for (node, nodeDependents) in dependents.enumerated() where counts[node] > 0 {
      for dependent in nodeDependents where counts[dependent] > 0 { waitsFor[dependent].append(node) }
    }
    var node = counts.indices.first { counts[$0] > 0 }!
    var path: [Int] = []
    var position: [Int: Int] = [:]
    while position[node] == nil {
      position[node] = path.count
      path.append(node)
      node = waitsFor[node][0]
    }
    // `path[position[node]...]` lists each store then the one it waits for; report it in "waits for" order.
    return Array(path[position[node]!...]) + [node]
  }
}
