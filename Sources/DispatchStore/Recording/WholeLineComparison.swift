import Dispatch
import Synchronization

/// Compares the lines of a verify that hold their lists whole, on a thread of its own, in the order they are handed
/// over (``ModelComparison``).
///
/// Such a line encodes each list of its model again, element by element where they changed since the last such line:
/// in a long session of large lists, the largest share of verifying it. The lines between need only its lists as the
/// base of their changes, which the re-running thread finds without encoding them, so it goes on while this thread
/// encodes.
///
/// `@unchecked Sendable`: `comparison` is used only by the jobs of `queue`, a serial queue, one after another;
/// `failure` is behind its lock, and `failed` set after it; `slots` bounds the lines not yet compared, holding their
/// models.
final class WholeLineComparison: @unchecked Sendable {
  private let queue = DispatchQueue(label: "DispatchStore.Session.verify.wholeLines")
  private var comparison: ModelComparison
  private let failure = LockedValue<SessionError?>(nil)
  /// Whether `failure` is set: read by the re-running thread at each step, without the lock.
  private let failed = Atomic(false)
  private let slots = DispatchSemaphore(value: 4)

  init(session: Session) {
    comparison = ModelComparison(session: session, wholeLines: nil)
  }

  /// Whether a line handed over differed from its re-run; the caller stops handing more over.
  var hasFailed: Bool { failed.load(ordering: .acquiring) }

  /// Compares `actual` with the model of `last`, a line that holds its lists whole, after those handed over before.
  ///
  /// Waits while four lines are not yet compared. Lines handed over after one that differed are not compared.
  func compare(_ actual: any ModelType, after step: Session.VerifyStep, with last: Session.VerifyStep) {
    slots.wait()
    queue.async { [self] in
      defer { slots.signal() }
      guard !hasFailed else { return }
      do throws(SessionError) {
        try comparison.compare(actual, after: step, with: last)
      } catch {
        failure.withLock { $0 = $0 ?? error }
        failed.store(true, ordering: .releasing)
      }
    }
  }

  /// Waits until the lines handed over are compared, and returns what the first that differed threw, if one did.
  ///
  /// Every line handed over comes before the line the caller is at: an error of its own is thrown only if this
  /// returns `nil`.
  func finish() -> SessionError? {
    queue.sync {}
    return failure.withLock { $0 }
  }
}
