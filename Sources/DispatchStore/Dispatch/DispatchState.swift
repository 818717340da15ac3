/// Where a dispatch is: waiting to run, running, or finished one of three ways.
///
/// A dispatch moves forward only: `pending`, then `started`, then one final state; or from `pending` or `started`
/// straight to a final state (it failed before a store ran, or it was cancelled). See ``DispatchHandle``.
public enum DispatchState: Sendable, CustomStringConvertible {
  /// Made, and waiting to run: queued for a lane or a background thread.
  case pending
  /// Running: its stores are handling the action.
  case started
  /// Every store finished successfully.
  case completed
  /// It failed, with this error; nothing more runs for it.
  case failed(DispatchError)
  /// It was cancelled; stores that had not started did not start, running operations were told.
  case cancelled

  /// Whether this is a final state: `completed`, `failed` or `cancelled`.
  package var isFinished: Bool {
    switch self {
    case .pending, .started: false
    case .completed, .failed, .cancelled: true
    }
  }

  /// The dispatch's result, once it finished: success, or the error it failed with (``DispatchError/cancelled``
  /// if it was cancelled); `nil` while it runs.
  package var result: Result<Void, DispatchError>? {
    switch self {
    case .pending, .started: nil
    case .completed: .success(())
    case .failed(let error): .failure(error)
    case .cancelled: .failure(.cancelled)
    }
  }

  /// A short name of the state, with the error if it failed.
  public var description: String {
    switch self {
    case .pending: "pending"
    case .started: "started"
    case .completed: "completed"
    case .failed(let error): "failed: \(error)"
    case .cancelled: "cancelled"
    }
  }
}
