import Foundation
import Testing

@testable import DispatchStore

struct Account: ModelType, Codable, Equatable {
  var user = ""
  var token = ""
}

enum AccountAction: ActionType, Codable, Equatable {
  case signIn(user: String, password: String)
}

/// An app with an account store holding a secret, a keychain store, and a counter.
private struct PrivateApp {
  static let secret = "hunter2-SECRET"
  let dispatcher = Dispatcher()
  let account = Store(identifier: "account", model: Account()) { (action: AccountAction, context) in
    guard case .signIn(let user, let password) = action else { return }
    let token = try context.effect("token") { "token-for-\(password)" }
    context.updateModel {
      $0.user = user
      $0.token = token
    }
  }
  let keychain = Store(identifier: "keychain", model: Text()) { (action: TextAction, model) in
    guard case .append(let text) = action else { return }
    model.value += text
  }
  let counter = Store(identifier: "counter", model: Counter(), reducer: CounterSynchronousReducer())
  let recorder: RecorderMiddleware

  init(privacy: SessionPrivacy = PrivateApp.privacy()) throws {
    recorder = RecorderMiddleware(privacy: privacy)
    try dispatcher.register(store: account)
    try dispatcher.register(store: keychain)
    try dispatcher.register(store: counter)
    dispatcher.register(middleware: recorder)
  }

  static func privacy() -> SessionPrivacy {
    var privacy = SessionPrivacy()
    privacy.exclude(storeIdentifier: "keychain")
    privacy.redactModels(of: "account") { (account: Account) in
      var account = account
      account.token = "redacted"
      return account
    }
    privacy.redactActions(of: "account") { (action: AccountAction) in
      guard case .signIn(let user, _) = action else { return action }
      return .signIn(user: user, password: "redacted")
    }
    return privacy
  }

  static func codecs() -> SessionCodecs {
    var codecs = SessionCodecs()
    codecs.register(storeIdentifier: "account", model: Account.self, action: AccountAction.self)
    codecs.register(storeIdentifier: "keychain", model: Text.self, action: TextAction.self)
    codecs.register(storeIdentifier: "counter", model: Counter.self, action: CounterAction.self)
    return codecs
  }

  /// Attaches the recorder to `file`, uses the app (``use()``) and flushes; returns the file.
  @discardableResult
  func record(to file: TemporaryFile = TemporaryFile()) throws -> TemporaryFile {
    try recorder.attach(appendingTo: file.url, codecs: Self.codecs())
    use()
    recorder.flush()
    return file
  }

  /// Signs in, stores the secret in the keychain, counts twice.
  func use() {
    #expect(dispatchSync(dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(dispatchSync(dispatcher, AccountAction.signIn(user: "ada", password: Self.secret)).isSuccess)
    #expect(dispatchSync(dispatcher, TextAction.append(Self.secret)).isSuccess)
    #expect(dispatchSync(dispatcher, CounterAction.increase(2)).isSuccess)
  }
}

@Suite("Session privacy", .timeLimit(.minutes(1)), .watchdog)
struct SessionPrivacyTests {
  @Test func noSecretReachesTheFileTheSavedCopyOrThePage() throws {
    let app = try PrivateApp()
    let file = try app.record()
    #expect(app.recorder.persistenceError == nil)
    let saved = TemporaryFile()
    try app.recorder.save(to: saved.url, codecs: PrivateApp.codecs())
    let page = try SessionInspector.page(forSessionAt: file.url)
    for text in [
      try String(contentsOf: file.url, encoding: .utf8), try String(contentsOf: saved.url, encoding: .utf8), page,
    ] {
      #expect(!text.contains(PrivateApp.secret))
      #expect(!text.contains("keychain"))  // Not even named in the header.
    }
    let lines = try String(contentsOf: file.url, encoding: .utf8).split(separator: "\n")
    // Marked: the account's record, and its first snapshot.
    #expect(lines.contains { $0.contains(#""s":"account","p":"am""#) })
    #expect(lines.contains { $0.contains(#""k":"s""#) && $0.contains(#""p":{"account":"am"}"#) })
    #expect(!lines.contains { $0.contains(#""k":"e""#) })  // The account's effect is not written.
    #expect(page.contains("redacted"))
  }

  @Test func theHistoryInMemoryKeepsTheRealModelsSoUndoRestoresThem() throws {
    let app = try PrivateApp()
    app.use()
    #expect(app.recorder.records.map(\.storeIdentifier) == ["counter", "account", "counter"])
    try app.recorder.undo()
    try app.recorder.undo()
    #expect(app.account.model == Account())
    try app.recorder.redo()
    #expect(app.account.model.token == "token-for-\(PrivateApp.secret)")
    // The excluded store is left as it is.
    #expect(app.keychain.model.value == PrivateApp.secret)
  }

  /// `records` and the record a move returns show a redacted store's values as the file holds them.
  ///
  /// Undo and redo still restore the real models. A redaction of the wrong type shows "unredactable", never the value.
  @Test func whatTheRecorderShowsTheAppIsRedactedAsTheFileIs() throws {
    let app = try PrivateApp()
    app.use()
    let account = try #require(app.recorder.records.first { $0.storeIdentifier == "account" })
    #expect(account.model as? Account == Account(user: "ada", token: "redacted"))
    #expect(account.transaction.action as? AccountAction == .signIn(user: "ada", password: "redacted"))
    #expect(account.dispatchedAction as? AccountAction == .signIn(user: "ada", password: "redacted"))
    #expect(!app.recorder.records.map(\.description).joined().contains(PrivateApp.secret))
    // Back to the account's record: the model restored is the real one, the record returned is redacted.
    let current = try app.recorder.undo()
    #expect(current?.storeIdentifier == "account")
    #expect((current?.model as? Account)?.token == "redacted")
    #expect(app.account.model.token == "token-for-\(PrivateApp.secret)")

    var wrongType = SessionPrivacy()
    wrongType.redactModels(of: "account") { (text: Text) in text }
    let other = try PrivateApp(privacy: wrongType)
    other.use()
    let shown = try #require(other.recorder.records.first { $0.storeIdentifier == "account" })
    #expect(shown.model as? Account == nil)
    #expect("\(shown.model)".contains("unredactable"))
  }

  @Test func restoreAndVerifySayWhichStoresTheyLeaveOutAndResumeRefuses() throws {
    let app = try PrivateApp()
    let file = try app.record()
    let session = try Session.load(from: file.url, codecs: PrivateApp.codecs())
    #expect(session.redactedStores == ["account"])

    let restored = try PrivateApp()
    #expect(try session.restore(into: restored.dispatcher) == ["account"])
    #expect(restored.counter.model.count == 3)
    #expect(restored.account.model == Account())  // Left as it was, not given the redacted model.

    let verified = try PrivateApp()
    #expect(try session.verify(against: verified.dispatcher) == ["account"])
    #expect(verified.counter.model.count == 3)
    #expect(verified.account.model == Account())

    // The other stores are still checked.
    let broken = Dispatcher()
    try broken.register(store: Store(identifier: "account", model: Account()) { (_: AccountAction, _) in })
    try broken.register(
      store: Store(identifier: "counter", model: Counter()) { (_: CounterAction, model) in
        model.count += 100
      })
    #expect(throws: SessionError.self) { try session.verify(against: broken) }

    let resumed = try PrivateApp()
    #expect(throws: SessionError.redacted(storeIdentifiers: ["account"])) {
      try resumed.recorder.resume(session, in: resumed.dispatcher)
    }
  }

  @Test func aRedactedStoresErrorAndAFollowUpToAnExcludedStoreLeakNothing() throws {
    struct Rejected: Error { let password: String }
    var privacy = PrivateApp.privacy()
    privacy.redactActions(of: "vault") { (_: TextAction) in .append("redacted") }
    /// The private app, with a redacted store whose operation fails with the secret in its error, and a store whose
    /// operation sends the secret to the excluded keychain.
    func app() throws -> PrivateApp {
      let app = try PrivateApp(privacy: privacy)
      try app.dispatcher.register(
        store: Store(identifier: "vault", model: Text()) { (action: TextAction, _) in
          guard case .append(let text) = action else { return }
          throw Rejected(password: text)
        })
      try app.dispatcher.register(
        store: Store(identifier: "notes", model: PurchaseLog()) { (action: PurchaseLogAction, context) in
          guard case .note(let text) = action else { return }
          context.updateModel { $0.notes.append("saved") }
          context.dispatcher?.start(action: TextAction.append(text), to: "keychain", mode: .sync)
        })
      return app
    }
    let recorded = try app()
    var codecs = PrivateApp.codecs()
    codecs.register(storeIdentifier: "vault", model: Text.self, action: TextAction.self)
    codecs.register(storeIdentifier: "notes", model: PurchaseLog.self, action: PurchaseLogAction.self)
    let file = TemporaryFile()
    try recorded.recorder.attach(appendingTo: file.url, codecs: codecs)
    #expect(dispatchSync(recorded.dispatcher, CounterAction.increase(1)).isSuccess)
    #expect(
      !dispatchSync(recorded.dispatcher, TextAction.append(PrivateApp.secret), storeIdentifier: "vault").isSuccess)
    #expect(dispatchSync(recorded.dispatcher, PurchaseLogAction.note("pin 1234")).isSuccess)
    #expect(recorded.keychain.model.value == "pin 1234")
    recorded.recorder.flush()
    let text = try String(contentsOf: file.url, encoding: .utf8)
    #expect(!text.contains(PrivateApp.secret))
    #expect(text.contains("Rejected (description redacted)"))
    let session = try Session.load(from: file.url, codecs: codecs)
    #expect(session.redactedStores == ["vault"])  // No account record in this session.
    // The follow-up to the excluded keychain is absorbed unchecked: no record of it was ever written.
    let verified = try app()
    #expect(try session.verify(against: verified.dispatcher) == ["vault"])
    #expect(verified.keychain.model.value == "")
  }

  @Test func aLaterRunAppendsToASessionWithoutRedactedModels() throws {
    var privacy = SessionPrivacy()
    privacy.exclude(storeIdentifier: "keychain")
    privacy.redactActions(of: "account") { (_: AccountAction) in .signIn(user: "redacted", password: "redacted") }
    let file = TemporaryFile()
    do {
      let first = try PrivateApp(privacy: privacy)
      try first.record(to: file)
      // The first run lets go of the file as a process that ends would: attaching elsewhere closes it, and its lock,
      // at once. (Released instead, the recorder can outlive this block while its last operation's task ends: the
      // second recorder then found the file in use, once in CI and twice in nine local runs.)
      let scratch = TemporaryFile()
      try first.recorder.attach(appendingTo: scratch.url, codecs: PrivateApp.codecs())
    }
    // Resumed, then appended to: the header, which does not name the keychain, is the one the recorder expects.
    let second = try PrivateApp(privacy: privacy)
    let session = try Session.load(from: file.url, codecs: PrivateApp.codecs())
    try second.recorder.resume(session, in: second.dispatcher)
    #expect(second.counter.model.count == 3)
    try second.recorder.attach(appendingTo: file.url, codecs: PrivateApp.codecs())
    #expect(dispatchSync(second.dispatcher, CounterAction.increase(4)).isSuccess)
    second.recorder.flush()
    #expect(second.recorder.persistenceError == nil)
    #expect(try Session.load(from: file.url, codecs: PrivateApp.codecs()).recordCount == 4)
    // The action's password is redacted (the model, holding a token made from it, is not, as configured).
    let text = try String(contentsOf: file.url, encoding: .utf8)
    #expect(!text.contains(#""password":"\#(PrivateApp.secret)""#))
    #expect(text.contains(#""password":"redacted""#))
  }

  @Test func aCompactedSessionKeepsItsMarks() throws {
    let app = try PrivateApp()
    let file = try app.record()
    let session = try Session.load(from: file.url, codecs: PrivateApp.codecs())
    let compacted = TemporaryFile()
    try session.compact(before: session.recordCount - 1, to: compacted.url)
    #expect(try Session.load(from: compacted.url, codecs: PrivateApp.codecs()).redactedStores == ["account"])
  }

  @Test func aRedactionOfTheWrongTypeWritesNothingUnredacted() throws {
    var privacy = SessionPrivacy()
    privacy.redactModels(of: "account") { (counter: Counter) in counter }  // The wrong store's type.
    let app = try PrivateApp(privacy: privacy)
    let file = try app.record()
    guard case .encodingFailed(let store, let reason) = app.recorder.persistenceError else {
      Issue.record("expected encodingFailed, got \(String(describing: app.recorder.persistenceError))")
      return
    }
    #expect(store == "account")
    #expect(reason.contains("nothing was written unredacted"))
    #expect(!(try String(contentsOf: file.url, encoding: .utf8)).contains(PrivateApp.secret))
    _ = try Session.load(from: file.url, codecs: PrivateApp.codecs())  // A loadable prefix.
  }
}
