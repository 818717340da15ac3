import DispatchStore

/// The whole state of the todo list.
struct TodoList: ModelType, Codable, Equatable {
  struct Item: Identifiable, Codable, Equatable {
    let id: Int
    var title: String
    var done = false
  }

  /// An `IdentifiedList`: a record of a change to one item holds that item, however many there are.
  var items: IdentifiedList<Item> = []
  var nextID = 1
}

enum TodoAction: ActionType, Codable, Equatable, CustomStringConvertible {
  case add(String)
  case complete(Int)

  var description: String {
    switch self {
    case .add(let title): return "add \"\(title)\""
    case .complete(let id): return "done \(id)"
    }
  }
}

enum TodoError: Error, Equatable, CustomStringConvertible {
  case noSuchItem(Int)
  case alreadyDone(Int)
  case emptyTitle

  var description: String {
    switch self {
    case .noSuchItem(let id): return "there is no item \(id)"
    case .alreadyDone(let id): return "item \(id) is already done"
    case .emptyTitle: return "an item needs a title"
    }
  }
}

/// Makes the todo store: every todo action is an immediate change of the list, so it is changed in place.
func makeTodoStore() -> Store<TodoList, TodoAction> {
  Store(identifier: "todos", model: TodoList()) { (action: TodoAction, list) in
    switch action {
    case .add(let title):
      guard !title.isEmpty else { throw TodoError.emptyTitle }
      list.items.append(TodoList.Item(id: list.nextID, title: title))
      list.nextID += 1
    case .complete(let id):
      guard let item = list.items[id: id] else { throw TodoError.noSuchItem(id) }
      guard !item.done else { throw TodoError.alreadyDone(id) }
      list.items[id: id]?.done = true
    }
  }
}
