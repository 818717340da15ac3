/// The records of a verify whose re-run lists one thread took as the base of their store's next line before the
/// other thread compared them (``ModelComparison``).
///
/// The re-running thread hands a line that holds its lists whole to the other thread and goes on with the next line,
/// taking the re-run's lists as its base; and starts a run of its own after lines compared there. That base is the
/// reader's only if the line passes by its bytes. A line that passes by decoding may leave the reader other lists (a
/// dictionary's key spelt otherwise, a list the model's `init(from:)` tidies, lists in a `Set`, whose order differs
/// between processes): a line passed by its bytes against the re-run's list at a path where the reader's differs does
/// not load as it was compared. Whichever thread comes second, the one that passed such a line or the one that found
/// the reader's lists differ, throws.
final class UnconfirmedBases: Sendable {
  /// Per record: the paths of its re-run lists that a line passed by its bytes was written against, and the paths
  /// where the reader's lists differ from them (`nil` until the other thread compared it, if it was decoded).
  private struct Marks {
    var read: Set<[UInt8]> = []
    var differing: Set<[UInt8]>?
  }

  private let marks = LockedValue<[Int: Marks]>([:])

  /// A line was passed by its bytes against the re-run's lists of record `index` (on line `line`) at `paths`; the
  /// other thread compares that record.
  /// - Throws: ``SessionError/corruptLine(line:reason:)`` if that thread found the reader's lists differ at one of
  ///   `paths`.
  func used(_ index: Int, paths: [[UInt8]], line: Int) throws(SessionError) {
    let conflict = marks.withLock { marks -> Bool in
      marks[index, default: Marks()].read.formUnion(paths)
      return marks[index]?.differing.map { !$0.isDisjoint(with: paths) } ?? false
    }
    if conflict { throw Self.error(line: line) }
  }

  /// Record `index` (on line `line`) passed by decoding, and the reader's lists are not the re-run's at `paths`.
  /// - Throws: ``SessionError/corruptLine(line:reason:)`` if a line was passed by its bytes against the re-run's lists
  ///   at one of `paths`.
  func differ(_ index: Int, paths: Set<[UInt8]>, line: Int) throws(SessionError) {
    let conflict = marks.withLock { marks -> Bool in
      marks[index, default: Marks()].differing = paths
      return !(marks[index]?.read.isDisjoint(with: paths) ?? true)
    }
    if conflict { throw Self.error(line: line) }
  }

  /// The error of a line whose lists the reader reads otherwise than its model holds them, where the next line was
  /// compared against the model's.
  static func error(line: Int) -> SessionError {
    .corruptLine(
      line: line,
      reason: "the reader reads its lists otherwise than its model holds them, and the next line changes them")
  }
}
