import DispatchStore
import Foundation
import Testing

// The code of the DocC article "Large collections", as written there, used as a reader would.
private struct Message: Identifiable, Codable, Equatable, Sendable {
  let id: UUID
  var text: String
  var isRead = false
}

private struct Inbox: ModelType, Codable, Equatable {
  var messages: IdentifiedList<Message> = []
}

private enum InboxAction: ActionType {
  case received(Message)
  case read(UUID)
  case deleted(UUID)
}

@Suite("Large collections article", .watchdog)
struct LargeCollectionsArticleTests {
  @Test func theInboxStoreAddsReadsAndDeletesByID() throws {
    let inbox = Store(identifier: "inbox", model: Inbox()) { (action: InboxAction, model) in
      switch action {
      case .received(let message): model.messages.append(message)
      case .read(let id): model.messages[id: id]?.isRead = true
      case .deleted(let id): model.messages.remove(id: id)
      }
    }
    let dispatcher = Dispatcher()
    try dispatcher.register(store: inbox)
    let first = Message(id: UUID(), text: "Hello")
    let second = Message(id: UUID(), text: "Bye")
    try dispatcher.dispatchSync(action: InboxAction.received(first))
    try dispatcher.dispatchSync(action: InboxAction.received(second))
    try dispatcher.dispatchSync(action: InboxAction.read(first.id))
    try dispatcher.dispatchSync(action: InboxAction.deleted(second.id))

    #expect(inbox.model.messages.map(\.text) == ["Hello"])
    #expect(inbox.model.messages[id: first.id]?.isRead == true)
    // Its JSON is the array of its messages, as an array's would be.
    let json = try JSONEncoder().encode(inbox.model.messages)
    #expect(try JSONDecoder().decode([Message].self, from: json) == Array(inbox.model.messages))
  }
}
