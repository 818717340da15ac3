/// The order in which one dispatch's stores may start, from their wait lists.
///
/// Edges are kept in one flat array, grouped by the node waited for, so that a dispatch allocates the same few
/// arrays whatever the number of stores.
struct WaitGraph: Sendable {
  /// The nodes waiting for node `i` are `waiting[waitingStart[i]..<waitingStart[i + 1]]` (`waitingStart` has one
  /// spare element at the end, left over from building it).
  private var waiting: [Int]
  private var waitingStart: [Int]
  /// For each node, how many nodes it waits for.
  private(set) var waitCounts: [Int]

  var count: Int { waitCounts.count }

  /// The nodes that wait for `node`.
  func dependents(of node: Int) -> ArraySlice<Int> {
    waiting[waitingStart[node]..<waitingStart[node + 1]]
  }

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
    let index = NodeIndex(identifiers)
    let count = identifiers.count
    // Edges as (waited for, waiting) packed in one `Int` (an array of tuples would be built by unspecialised
    // library code), each node's together; a store listed twice is waited for once.
    var edges: [Int] = []
    edges.reserveCapacity(waitLists.reduce(0) { $0 + $1.count })
    var waitCounts = Array(repeating: 0, count: count)
    for (node, waitList) in waitLists.enumerated() {
      let first = edges.count
      for awaited in waitList {
        guard let awaitedNode = index[awaited] else {
          if isRegistered(awaited) { continue }  // Registered but not handling this action: satisfied at once.
          return .failure(.unknownWaitTarget(storeIdentifier: identifiers[node], waitsFor: awaited))
        }
        guard !edges[first...].contains(where: { Edge($0).awaited == awaitedNode }) else { continue }
        edges.append(Edge(awaited: awaitedNode, node: node).packed)
        waitCounts[node] += 1
      }
    }
    // Group by the node waited for: a counting sort, shifted by one so that it needs no second array, that keeps
    // each group in node order. Afterwards `waitingStart[node]` is where `node`'s group starts.
    var waitingStart = Array(repeating: 0, count: count + 2)
    for edge in edges.lazy.map(Edge.init) { waitingStart[edge.awaited + 2] += 1 }
    for position in 2..<(count + 2) { waitingStart[position] += waitingStart[position - 1] }
    var waiting = Array(repeating: 0, count: edges.count)
    var onlyWaitsForEarlier = true
    for edge in edges.lazy.map(Edge.init) {
      waiting[waitingStart[edge.awaited + 1]] = edge.node
      waitingStart[edge.awaited + 1] += 1
      onlyWaitsForEarlier = onlyWaitsForEarlier && edge.awaited < edge.node
    }
    let graph = WaitGraph(waiting: waiting, waitingStart: waitingStart, waitCounts: waitCounts)
    // Stores that only wait for stores registered before them cannot form a cycle: the usual case needs no search.
    if !onlyWaitsForEarlier, let cycle = graph.findCycle() {
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
      for dependent in dependents(of: node) {
        counts[dependent] -= 1
        if counts[dependent] == 0 { ready.append(dependent) }
      }
    }
    guard removed < counts.count else { return nil }
    // Walk backwards along "waits for" edges among the remaining nodes until a node repeats.
    var waitsFor = Array(repeating: [Int](), count: counts.count)
    for node in 0..<count where counts[node] > 0 {
      for dependent in dependents(of: node) where counts[dependent] > 0 { waitsFor[dependent].append(node) }
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

/// One "waits for" edge, packed into an `Int`: the node waited for in the high half, the waiting node in the low.
private struct Edge {
  let awaited: Int
  let node: Int

  init(awaited: Int, node: Int) {
    self.awaited = awaited
    self.node = node
  }

  init(_ packed: Int) {
    awaited = packed >> 32
    node = packed & 0xFFFF_FFFF
  }

  var packed: Int { awaited << 32 | node }
}

/// The node of each store identifier in one dispatch.
///
/// A few stores are found by comparing identifiers, which costs less than hashing them; many by a dictionary.
private struct NodeIndex {
  private let identifiers: [String]
  private let dictionary: [String: Int]?

  init(_ identifiers: [String]) {
    self.identifiers = identifiers
    guard identifiers.count > 16 else {
      dictionary = nil
      return
    }
    var dictionary = [String: Int](minimumCapacity: identifiers.count)
    for (node, identifier) in identifiers.enumerated() { dictionary[identifier] = node }
    self.dictionary = dictionary
  }

  subscript(identifier: String) -> Int? {
    if let dictionary { return dictionary[identifier] }
    return identifiers.firstIndex(of: identifier)
  }
}
