/// The records of a verify whose re-run lists one thread took as the base of their store's next line before the
/// other thread compared them (``ModelComparison``).
///
/// The re-running thread hands a line that holds its lists whole to the other thread and goes on with the next line,
/// taking the re-run's lists as its base; and starts a run of its own after lines compared there. That base is the
/// reader's only if the line passes by its bytes. A line that passes by decoding may leave the reader other lists (a
/// dictionary's key spelt otherwise, a list the model's `init(from:)` tidies): a line passed by its bytes against the
/// re-run's then does not load as it was compared. Whichever thread comes second, the one that passed a line on such
/// a base or the one that found the reader's lists differ, throws.
final class UnconfirmedBases: Sendable {
  private enum Mark {
    /// A line was passed by its bytes resting on the re-run's lists.
    case used
    /// The line passed by decoding, and the reader's lists are not the re-run's.
    case differs
  }

  private let marks = LockedValue<[Int: Mark]>([:])

  /// A line was passed by its bytes against the re-run's lists of record `index` (on line `line`), which the other
  /// thread compares.
  /// - Throws: ``SessionError/corruptLine(line:reason:)`` if that thread found the reader's lists differ.
  func used(_ index: Int, line: Int) throws(SessionError) {
    try note(.used, at: index, line: line)
  }

  /// Record `index` (on line `line`) passed by decoding, and the reader's lists are not the re-run's.
  /// - Throws: ``SessionError/corruptLine(line:reason:)`` if a line was passed by its bytes against the re-run's.
  func differ(_ index: Int, line: Int) throws(SessionError) {
    try note(.differs, at: index, line: line)
  }

  private func note(_ mark: Mark, at index: Int, line: Int) throws(SessionError) {
    let both = marks.withLock { marks -> Bool in
      if let other = marks[index], other != mark { return true }
      marks[index] = mark
      return false
    }
    if both { throw Self.error(line: line) }
  }

  /// The error of a line whose lists the reader reads otherwise than the re-run's model holds them.
  static func error(line: Int) -> SessionError {
    .corruptLine(
      line: line,
      reason: "the reader reads its lists otherwise than its model holds them: the next line does not load as written")
  }
}
