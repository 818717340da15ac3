/// The order in which one dispatch's stores may start, from their wait lists, and, while the dispatch runs, how
/// many stores each one still waits for.
///
/// Everything is in one `[Int]`, whatever the number of stores: each array a dispatch allocates costs a generic
/// metadata lookup in the runtime (proposal 0004 has the measurements). Its sections:
///
/// - `[0, count)`: for each node, how many nodes it (still) waits for;
/// - `[count, 2 * count + 2)`: where each node's group of waiting nodes starts in the next section (one spare
///   element at the end, left over from building it);
/// - `[2 * count + 2, ...)`: the waiting nodes, grouped by the node they wait for, each group in node order.
struct WaitGraph: Sendable {
  private var storage: [Int]
  let count: Int

  private var startsOffset: Int { count }
  private var waitingOffset: Int { 2 * count + 2 }

  /// How many nodes `node` waits for (until they finish: see ``finishWait(of:)``).
  func waitCount(of node: Int) -> Int {
    storage[node]
  }

  /// Counts down the waits of the nodes waiting for `node`, which finished, and queues in `ready` each that waits
  /// for nothing more, in node order; with `takeFirst`, returns the first such node instead of queueing it if
  /// `ready` is empty.
  /// - Returns: The node taken, and whether any was queued.
  @inline(__always)
  mutating func nodeFinished(_ node: Int, into ready: inout ReadyQueue, takeFirst: Bool) -> (taken: Int?, queued: Bool)
  {
    var taken: Int?
    var queued = false
    // By position, not through `dependents(of:)`: a slice would share the storage and make this copy it.
    let first = waitingOffset + storage[startsOffset + node]
    let end = waitingOffset + storage[startsOffset + node + 1]
    for position in first..<end {
      let dependent = storage[position]
      storage[dependent] -= 1
      guard storage[dependent] == 0 else { continue }
      if takeFirst && taken == nil && ready.isEmpty {
        taken = dependent
      } else {
        ready.append(dependent)
        queued = true
      }
    }
    return (taken, queued)
  }

  /// The nodes that wait for `node`.
  func dependents(of node: Int) -> ArraySlice<Int> {
    storage[(waitingOffset + storage[startsOffset + node])..<(waitingOffset + storage[startsOffset + node + 1])]
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
    var listed = 0
    for waitList in waitLists { listed += waitList.count }
    // The edges (waited for, waiting), packed one per `Int`, are gathered in a scratch section at the end.
    var graph = WaitGraph(storage: Array(repeating: 0, count: 2 * count + 2 + 2 * listed), count: count)
    let scratch = 2 * count + 2 + listed
    var edgeCount = 0
    for (node, waitList) in waitLists.enumerated() {
      let first = edgeCount
      for awaited in waitList {
        guard let awaitedNode = index[awaited, searchingBackFrom: node] else {
          if isRegistered(awaited) { continue }  // Registered but not handling this action: satisfied at once.
          return .failure(.unknownWaitTarget(storeIdentifier: identifiers[node], waitsFor: awaited))
        }
        // Listed twice: waited for once.
        let isDuplicate = graph.storage[(scratch + first)..<(scratch + edgeCount)].contains {
          Edge($0).awaited == awaitedNode
        }
        guard !isDuplicate else { continue }
        graph.storage[scratch + edgeCount] = Edge(awaited: awaitedNode, node: node).packed
        edgeCount += 1
        graph.storage[node] += 1
      }
    }
    // Group by the node waited for: a counting sort, shifted by one so that it needs no second array. Afterwards
    // the starts section holds where each node's group starts.
    let starts = graph.startsOffset
    var onlyWaitsForEarlier = true
    for position in scratch..<(scratch + edgeCount) {
      graph.storage[starts + Edge(graph.storage[position]).awaited + 2] += 1
    }
    for position in 2..<(count + 2) { graph.storage[starts + position] += graph.storage[starts + position - 1] }
    for position in scratch..<(scratch + edgeCount) {
      let edge = Edge(graph.storage[position])
      graph.storage[graph.waitingOffset + graph.storage[starts + edge.awaited + 1]] = edge.node
      graph.storage[starts + edge.awaited + 1] += 1
      onlyWaitsForEarlier = onlyWaitsForEarlier && edge.awaited < edge.node
    }
    graph.storage.removeLast(graph.storage.count - (graph.waitingOffset + edgeCount))  // Keeps the capacity.
    // Stores that only wait for stores registered before them cannot form a cycle: the usual case needs no search.
    if !onlyWaitsForEarlier, let cycle = graph.findCycle() {
      return .failure(.waitCycle(cycle.map { identifiers[$0] }))
    }
    return .success(graph)
  }

  /// A cycle as a node path whose first node is repeated at the end, or `nil` if the graph is acyclic.
  func findCycle() -> [Int]? {
    // Kahn's algorithm removes every node not on or behind a cycle.
    var counts = (0..<count).map { waitCount(of: $0) }
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

  /// The node of `identifier`.
  ///
  /// Compared one by one, the nodes before `node` come first, nearest first: stores usually wait for stores
  /// registered just before them.
  subscript(identifier: String, searchingBackFrom node: Int) -> Int? {
    if let dictionary { return dictionary[identifier] }
    var candidate = node - 1
    while candidate >= 0 {
      if identifiers[candidate] == identifier { return candidate }
      candidate -= 1
    }
    return identifiers[node...].firstIndex(of: identifier)
  }
}
