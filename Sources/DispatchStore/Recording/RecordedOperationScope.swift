import Synchronization

// How `Store.updateModel`, which does not know the operation calling it, finds the recorded operation whose change
// it makes, so that the change is filed as that operation's record in its own critical section (proposal 0014,
// section 2).

/// The recorded operation whose work runs here: on this thread while its block runs, and in the task of an
/// operation made with an `async` body.
@usableFromInline
enum RecordedOperationScope {
  /// A recorded operation and the identity of its store.
  struct Entry: Sendable {
    let store: ObjectIdentifier
    let operation: any AnyObject & Sendable
  }

  /// How many recorded operations' blocks and tasks are running, anywhere: while none is, `Store.updateModel` looks
  /// no further.
  ///
  /// Each thread sees its own increments, which is all a look needs: a thread or task finds an entry only where it
  /// set one, after counting it.
  @usableFromInline static let running = Atomic<Int>(0)

  /// The recorded operation of an `async` body's task.
  @TaskLocal static var task: Entry?

  /// The recorded operation of `store` whose work runs on the calling thread or task, if any.
  @usableFromInline
  static func operation(of store: AnyObject) -> AnyObject? {
    let identity = ObjectIdentifier(store)
    if let entry = ThreadContext.withCurrent({ $0.recordedOperation }), entry.store == identity {
      return entry.operation.takeUnretainedValue()
    }
    if let entry = task, entry.store == identity { return entry.operation }
    return nil
  }

  /// Runs `body`, an operation's block, with `operation` as the calling thread's recorded operation.
  static func run(_ operation: AnyObject, of store: AnyObject, _ body: () -> Void) {
    running.add(1, ordering: .relaxed)
    ThreadContext.withCurrent { context in
      let previous = context.recordedOperation
      // Unretained: the caller holds the operation while `body` runs.
      context.recordedOperation = (ObjectIdentifier(store), Unmanaged.passUnretained(operation))
      body()
      context.recordedOperation = previous
    }
    running.subtract(1, ordering: .relaxed)
  }

  /// Runs `body`, an operation's `async` work, with `operation` as its task's recorded operation.
  static func run(
    _ operation: any AnyObject & Sendable, of store: AnyObject, _ body: () async throws -> Void
  ) async throws {
    running.add(1, ordering: .relaxed)
    defer { running.subtract(1, ordering: .relaxed) }
    try await $task.withValue(Entry(store: ObjectIdentifier(store), operation: operation), operation: body)
  }
}
