// The feature behind the SwiftUI example (Examples/SearchApp) and its Linux twin (Examples/SearchCLI): two stores,
// one waiting for the other, a debounced search whose newest query cancels the one in flight, and undo.
import DispatchStore

/// What the user typed, as the search last took it.
public struct Query: ModelType {
  /// The text searched for.
  public var text = ""

  /// An empty query.
  public init() {}
}

/// The search's results.
public struct Results: ModelType {
  /// The text these results are for.
  public var query = ""
  /// The catalogue entries that start with the query.
  public var hits: [String] = []

  /// No results.
  public init() {}

  /// The results of a search.
  /// - Parameters:
  ///   - query: The text searched for.
  ///   - hits: What was found.
  public init(query: String, hits: [String]) {
    self.query = query
    self.hits = hits
  }
}

/// The one action of the feature.
public enum SearchAction: ActionType {
  /// Searches for the text.
  case search(String)
}

/// The two stores, their dispatcher and the recorder that undoes.
public final class SearchFeature: Sendable {
  /// The dispatcher the stores are registered with.
  public let dispatcher: Dispatcher
  /// The query store: takes the text of each search.
  public let query: Store<Query, SearchAction>
  /// The results store: waits for the query store, then searches.
  public let results: Store<Results, SearchAction>
  /// Records every transaction, for undo.
  public let recorder = RecorderMiddleware()

  /// Makes the stores and registers them and the recorder.
  /// - Parameters:
  ///   - catalogue: What the search looks through.
  ///   - dispatcher: The dispatcher the stores are registered with.
  /// - Throws: `DispatchError` if the dispatcher already has stores with these identifiers.
  public init(catalogue: [String], dispatcher: Dispatcher = Dispatcher()) throws {
    self.dispatcher = dispatcher
    query = Store(identifier: "query", model: Query()) { action, model in
      guard case .search(let text) = action else { return }
      model.text = text
    }
    // Waits for the query store, then searches with the text it took.
    results = Store(identifier: "results", model: Results(), waitFor: ["query"]) { action, operation in
      let text = operation.model(of: "query", as: Query.self)?.text ?? ""
      let hits = await Self.search(text, in: catalogue)
      try Task.checkCancellation()  // a newer search cancelled this one: change nothing
      operation.updateModel { $0 = Results(query: text, hits: hits) }
    }
    try dispatcher.register(store: query)
    try dispatcher.register(store: results)
    dispatcher.register(middleware: recorder)
  }

  /// Searches for `text` once typing pauses: only the last of quick keystrokes runs, and it cancels a search still
  /// running.
  /// - Parameter text: The text typed so far.
  /// - Returns: The search's handle, to await or cancel.
  @discardableResult
  public func type(_ text: String) -> DispatchHandle {
    dispatcher.start(
      action:
        SearchAction.search(text), options: DispatchOptions(cancellationID: "search", debounce: .milliseconds(150)))
  }

  /// Goes back to the results before the last search.
  /// - Throws: `SessionError.atStartOfHistory` when there is nothing to undo.
  public func undo() throws {
    try recorder.undo()
  }

  /// The search "service": asynchronous, as a network call would be.
  static func search(_ text: String, in catalogue: [String]) async -> [String] {
    await Task.yield()
    return text.isEmpty ? [] : catalogue.filter { $0.hasPrefix(text) }
  }
}
