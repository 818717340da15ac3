import Dispatch
import Synchronization

/// Compares records of a verify on a thread of its own, in the order they are handed over, while the re-running
/// thread goes on (``ModelComparison``).
///
/// It takes the records that hold their lists whole, and runs of the others while few wait: encoding the models to
/// compare them is most of verifying a long session, and the re-running thread, which also dispatches, then compares
/// the runs it keeps. A record's lists are the base of the changes of its store's next record: a run's first record
/// comes with the lists it rests on (``Job/base``), found by the re-running thread without encoding them.
///
/// `@unchecked Sendable`: `comparison` is used only by the jobs of `queue`, a serial queue, one after another, and
/// read by ``finish()`` after them; `failure` and `batches` are behind their locks, and `failed` set after `failure`;
/// `slots` bounds the batches not yet compared, holding their models (with those compared and not yet taken back, at
/// most twice as many); `pending` counts them; `found` is a `Sendable` closure, set once.
final class BackgroundComparison: @unchecked Sendable {
  /// A record to compare: the model its transaction's re-run made, the transaction's first and last steps, and the
  /// lists of its store's previous record if this thread does not have them.
  struct Job: Sendable {
    let actual: any ModelType
    let step: Session.VerifyStep
    let last: Session.VerifyStep
    let base: (index: Int, lists: LineLists)?
    /// For a line of whole lists, what checks it by its bytes against the lines before it.
    let whole: WholeLineSplice.Input?
  }

  private let queue = DispatchQueue(label: "DispatchStore.Session.verify.comparison")
  private var comparison: ModelComparison
  private let failure = LockedValue<SessionError?>(nil)
  /// Whether `failure` is set: read by the re-running thread at each step, without the lock.
  private let failed = Atomic(false)
  private let pending = Atomic(0)
  private let slots = DispatchSemaphore(value: 16)
  /// The batches handed over and not yet taken by `queue`, in order, and those compared, which the re-running thread
  /// takes back and releases at its next hand-over.
  ///
  /// A batch's models share the nodes of their lists with the models the re-running thread goes on changing. Released
  /// on this thread, they would change the reference counts of the nodes the other thread copies, and the two threads
  /// would keep taking those cache lines from each other (verify of 100,000 records of 10,000 rows: about 7% more
  /// records a second with them released there). A batch moves through here, so that no closure keeps it.
  private let batches = LockedValue<(waiting: [[Job]], compared: [[Job]])>(([], []))
  /// Called on this thread when a record differed, after ``hasFailed`` is set (a test waits for it).
  private let found: (@Sendable () -> Void)?

  /// What the two threads note of the records whose re-run lists the re-running thread may take as a base before this
  /// thread compared them.
  let unconfirmed = UnconfirmedBases()

  init(session: Session, found: (@Sendable () -> Void)? = nil) {
    comparison = ModelComparison(session: session, background: nil, unconfirmed: unconfirmed)
    self.found = found
  }

  /// Whether a record handed over differed from its re-run; the caller stops handing more over.
  var hasFailed: Bool { failed.load(ordering: .acquiring) }

  /// How many batches handed over are not compared yet.
  var waitingBatches: Int { pending.load(ordering: .acquiring) }

  /// Compares `jobs`, in order, after the batches handed over before.
  ///
  /// Waits while 16 batches are not yet compared. Records after one that differed are not compared.
  func compare(_ jobs: [Job]) {
    slots.wait()
    pending.add(1, ordering: .relaxed)
    // Taken out under the lock, released after it: a model's deinit may be a user's.
    var done: [[Job]] = []
    batches.withLock { batches in
      swap(&done, &batches.compared)
      batches.waiting.append(jobs)
    }
    done = []
    queue.async { [self] in
      var jobs = batches.withLock { $0.waiting.removeFirst() }
      defer {
        // Let go of under the lock, after `compared` holds it: not the last reference, so nothing is released here,
        // and the re-running thread cannot take the batch back in between and leave the last one to this thread.
        batches.withLock {
          $0.compared.append(jobs)
          jobs = []
        }
        pending.subtract(1, ordering: .releasing)
        slots.signal()
      }
      for job in jobs {
        guard !hasFailed else { return }
        if let base = job.base { comparison.rest(job.step.store, at: base.index, on: base.lists) }
        do throws(SessionError) {
          try comparison.compare(job.actual, after: job.step, with: job.last, whole: job.whole)
        } catch {
          failure.withLock { $0 = $0 ?? error }
          failed.store(true, ordering: .releasing)
          found?()
        }
      }
    }
  }

  /// Waits until the batches handed over are compared; returns what the first record that differed threw, if one did,
  /// and how the records were compared.
  ///
  /// Every record handed over comes before the record the caller is at: an error of its own is thrown only if this
  /// returns no failure.
  func finish() -> (failure: SessionError?, counts: Session.VerifyCounts) {
    queue.sync {}
    return (failure.withLock { $0 }, comparison.counts)
  }
}
