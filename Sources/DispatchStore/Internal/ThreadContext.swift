#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Per-thread bookkeeping: which dispatchers are running an operation on this thread, and what else a dispatch
/// needs to know about its thread.
///
/// It keeps the running dispatchers (to refuse re-entrant `.sync` dispatch), the transaction identifiers the
/// thread hands out, and whether the thread is one of the library's run-loop threads. It retains nothing a user
/// registered beyond the call that set it (the operation whose block runs here is held by the block's caller;
/// the all-or-nothing dispatch whose stores the thread passes is cleared when its scope ends).
///
/// Each instance is reachable only from its own thread through a pthread key, so it needs no lock; it is not
/// `Sendable` and never leaves its thread. For the same reason its properties skip the runtime's dynamic exclusivity
/// checks (proposal 0004 has the measurements): only its own thread can reach an instance, and no accessor here
/// calls out while it accesses a property.
@usableFromInline
final class ThreadContext {
  /// Identifiers of the dispatchers whose operations are starting on this thread, innermost last.
  ///
  /// While user code that is not an operation runs inside one (an observer, middleware, a completion), a
  /// ``barrier`` hides the entries before it: pushing one costs no copy of the array.
  @exclusivity(unchecked) private var runningDispatchers = RunningStack()
  /// The transaction identifiers this thread hands out next.
  @exclusivity(unchecked) var transactionIDs = TransactionIDBlock()
  /// The run-loop thread this thread is, if it is one.
  @exclusivity(unchecked) var mainRunLoopThread: RunLoopThreadCore?
  /// Whether this thread is inside a dispatcher's `onUnheardFailure` (``Dispatcher/reportUnheard(_:of:)``).
  @exclusivity(unchecked) var reportingUnheard = false
  /// The all-or-nothing dispatch (its ``Reservation``) whose stores this thread is starting, if any: the stores it
  /// holds let its starts through (``StoreGate/stop()``).
  @exclusivity(unchecked) var reserving: Reservation?
  /// The lane whose job this thread is running, if any: a start of that job that parks behind an all-or-nothing
  /// dispatch tells it (``Lane/parked(behind:start:dispatcher:)``).
  @exclusivity(unchecked) var runningLane: Lane?
  /// The journal the changes to lists made on this thread are noted in, while a verify re-runs a transaction here
  /// (``ListJournal/recording(_:)``).
  @exclusivity(unchecked) var listJournal: ListJournal?

  /// Runs `body` with this thread's starts passing the stores `reserving` holds, if any
  /// (``ThreadContext/admission()``).
  static func withReserving<R>(_ reserving: Reservation?, _ body: () -> R) -> R {
    guard let reserving else { return body() }
    return withCurrent { context in
      let outer = context.reserving
      context.reserving = reserving
      defer { context.reserving = outer }
      return body()
    }
  }
  /// Marks the start of user code that is not an operation in `runningDispatchers`; no dispatcher has this
  /// identifier.
  private static var barrier: ObjectIdentifier {
    @inline(__always) get { ObjectIdentifier(ThreadContext.self) }
  }

  /// Calls `body` with the calling thread's context, without retaining it (the thread's key holds it).
  ///
  /// Preferred to ``current``, whose result is retained and released.
  @inline(__always)
  static func withCurrent<R>(_ body: (ThreadContext) throws -> R) rethrows -> R {
    if let pointer = pthread_getspecific(key) {
      return try Unmanaged<ThreadContext>.fromOpaque(pointer)._withUnsafeGuaranteedRef(body)
    }
    return try body(current)
  }

  /// The calling thread's context, created on first use and released when the thread exits.
  static var current: ThreadContext {
    if let pointer = pthread_getspecific(key) {
      return Unmanaged<ThreadContext>.fromOpaque(pointer).takeUnretainedValue()
    }
    let context = ThreadContext()
    pthread_setspecific(key, Unmanaged.passRetained(context).toOpaque())
    return context
  }

  /// A new transaction identifier (see ``TransactionID/next()``), from this thread's block where it can.
  @inline(__always)
  func nextTransactionID() -> TransactionID {
    TransactionID(rawValue: transactionIDs.take(now: TransactionID.now()))
  }

  /// Whether an operation of `dispatcher` is starting on this thread, outside any user code that is not an
  /// operation.
  func isRunning(_ dispatcher: ObjectIdentifier) -> Bool {
    var index = runningDispatchers.count
    while index > 0 {
      index -= 1
      let running = runningDispatchers[index]
      if running == Self.barrier { return false }
      if running == dispatcher { return true }
    }
    return false
  }

  /// The dispatcher whose operation is starting on this thread, innermost, even inside user code that is not an
  /// operation.
  var innermostRunning: ObjectIdentifier? {
    var index = runningDispatchers.count
    while index > 0 {
      index -= 1
      if runningDispatchers[index] != Self.barrier { return runningDispatchers[index] }
    }
    return nil
  }

  /// Whether this thread runs inside a dispatch of `dispatcher`: starting one of its stores, or running user code
  /// that such a start called (a reducer, an operation's start, the synchronous observers of the change it made).
  func isInside(_ dispatcher: ObjectIdentifier) -> Bool {
    var index = runningDispatchers.count
    while index > 0 {
      index -= 1
      if runningDispatchers[index] == dispatcher { return true }
    }
    return false
  }

  /// Runs `body` with `dispatcher` marked as running an operation on this thread.
  @inline(__always)
  func withRunning<R>(_ dispatcher: ObjectIdentifier, _ body: () throws -> R) rethrows -> R {
    runningDispatchers.append(dispatcher)
    defer { runningDispatchers.removeLast() }
    return try body()
  }

  /// How many synchronous observer notifications this thread is delivering, nested.
  @exclusivity(unchecked) private var synchronousDeliveries = 0

  /// The calling thread's identity (its context's), and whether it may wait for its turn to deliver a synchronous
  /// notification: not while it delivers one itself, so that no two threads can wait for each other's turn.
  ///
  /// The non-generic entry point for inlinable code (observer delivery).
  @usableFromInline
  static var currentDeliverer: (thread: ObjectIdentifier, mayWait: Bool) {
    withCurrent { (ObjectIdentifier($0), $0.synchronousDeliveries == 0) }
  }

  /// The stores (each a ``DeliveringStore``) whose synchronous notifications this thread is delivering, innermost
  /// last.
  ///
  /// Unretained, and not as `any DeliveringStore`: the callers of ``deliveringSynchronously(for:_:)`` and
  /// ``holdingTurns(of:_:)`` hold them, and making the existential of a generic store looks its conformance up at
  /// every notification.
  @exclusivity(unchecked) private var deliveringStores: [Unmanaged<AnyObject>] = []

  /// Runs `body`, which delivers `store`'s synchronous notifications, with no dispatcher marked as running.
  ///
  /// - Parameter store: A ``DeliveringStore``, which the caller holds while `body` runs.
  @usableFromInline
  static func deliveringSynchronously(for store: AnyObject, _ body: () -> Void) {
    withCurrent { context in
      context.synchronousDeliveries += 1
      context.deliveringStores.append(Unmanaged.passUnretained(store))
      defer {
        context.deliveringStores.removeLast()
        context.synchronousDeliveries -= 1
      }
      context.withoutRunningDispatchers(body)
    }
  }

  /// Runs `body` with the synchronous turns of `stores`, which this thread holds and delivers after it, counted as
  /// delivered here: a blocking wait in `body` lets their waiting threads go on too.
  static func holdingTurns(of stores: ArraySlice<any DeliveringStore>, _ body: () -> Void) {
    guard !stores.isEmpty else { return body() }
    withCurrent { context in
      context.deliveringStores.append(contentsOf: stores.map { Unmanaged.passUnretained($0) })
      defer { context.deliveringStores.removeLast(stores.count) }
      body()
    }
  }

  /// Runs `body`, which blocks the calling thread until another thread does something (a `.sync` dispatch waiting
  /// for its operations): if this thread is delivering synchronous notifications, the threads waiting for its turn
  /// there go on meanwhile, their changes queued for it (``ObserverLists/delivererBlocks()``).
  static func blocking<Result>(_ body: () -> Result) -> Result {
    // Held by the callers that pushed them, which are on this thread's stack below this call.
    let stores = withCurrent { $0.deliveringStores }.compactMap { $0.takeUnretainedValue() as? any DeliveringStore }
    guard !stores.isEmpty else { return body() }
    for store in stores { store.delivererBlocks() }
    defer { for store in stores { store.delivererUnblocked() } }
    return body()
  }

  /// Runs `body` on the calling thread with no dispatcher marked as running: the non-generic entry point for
  /// inlinable code (observer notification).
  @usableFromInline
  static func withoutRunningDispatchers(_ body: () -> Void) {
    withCurrent { $0.withoutRunningDispatchers(body) }
  }

  /// Runs `body` on the calling thread with no dispatcher marked as running; inlined, for the library's own hot
  /// paths.
  @inline(__always)
  static func withoutRunning<R>(_ body: () throws -> R) rethrows -> R {
    try withCurrent { try $0.withoutRunningDispatchers(body) }
  }

  /// Runs `body` on the calling thread with `dispatcher` marked as running an operation.
  @inline(__always)
  static func withRunning<R>(_ dispatcher: ObjectIdentifier, _ body: () throws -> R) rethrows -> R {
    try withCurrent { try $0.withRunning(dispatcher, body) }
  }

  /// Runs `body` with no dispatcher marked as running, for user callbacks that are not operations (observers).
  @inline(__always)
  func withoutRunningDispatchers<R>(_ body: () throws -> R) rethrows -> R {
    guard let innermost = runningDispatchers.last, innermost != Self.barrier else { return try body() }
    runningDispatchers.append(Self.barrier)
    defer { runningDispatchers.removeLast() }
    return try body()
  }

  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { pointer in
      #if canImport(Darwin)
        Unmanaged<ThreadContext>.fromOpaque(pointer).release()
      #else
        if let pointer { Unmanaged<ThreadContext>.fromOpaque(pointer).release() }
      #endif
    }
    precondition(status == 0, "DispatchStore: pthread_key_create failed with \(status)")
    return key
  }()
}

/// A stack of dispatcher identifiers in a buffer of its own.
///
/// Pushing and popping checks no uniqueness and retains nothing, which an array does on every change. Owned by one
/// ``ThreadContext``, so used by one thread only.
private struct RunningStack: ~Copyable {
  private var buffer: UnsafeMutablePointer<ObjectIdentifier>
  private var capacity: Int
  private(set) var count = 0

  init() {
    capacity = 8
    buffer = .allocate(capacity: capacity)
  }

  deinit {
    buffer.deallocate()
  }

  subscript(index: Int) -> ObjectIdentifier {
    precondition(index >= 0 && index < count)
    return buffer[index]
  }

  var last: ObjectIdentifier? { count == 0 ? nil : buffer[count - 1] }

  mutating func append(_ identifier: ObjectIdentifier) {
    if count == capacity {
      let grown = UnsafeMutablePointer<ObjectIdentifier>.allocate(capacity: capacity * 2)
      grown.initialize(from: buffer, count: count)
      buffer.deallocate()
      buffer = grown
      capacity *= 2
    }
    buffer[count] = identifier
    count += 1
  }

  mutating func removeLast() {
    precondition(count > 0)
    count -= 1
  }
}

extension ThreadContext {
  /// The all-or-nothing dispatch that a dispatch made here is part of, if any.
  ///
  /// A dispatch is part of one when its observers, middleware or operations make it, on a thread starting its stores
  /// (``ThreadContext/reserving``) or inside an operation's task (``OperationTaskScope``). Such a dispatch passes the
  /// stores it holds, as its own starts do, and is put back with them: waiting for it would wait for itself.
  static func admission() -> Reservation? {
    guard Reservation.running.load(ordering: .relaxed) > 0 else { return nil }
    return withCurrent { $0.reserving } ?? OperationTaskScope.current?.reserving
  }
}

/// A store whose synchronous notifications a thread is delivering: told when that thread blocks from inside an
/// observer, and when it goes on (``ThreadContext/blocking(_:)``).
@usableFromInline
protocol DeliveringStore: AnyObject {
  /// The delivering thread blocks: the threads waiting for its turn go on.
  func delivererBlocks()
  /// The delivering thread goes on.
  func delivererUnblocked()
}
