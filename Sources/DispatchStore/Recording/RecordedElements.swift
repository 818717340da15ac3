import Foundation

/// The JSON a session's change lines recorded for the elements of a store's lists, for verify to copy into a line of
/// whole lists instead of encoding those elements again (proposal 0017, step 7).
///
/// A line that holds a list whole (one in 1,001 of a store's records) is compared by encoding the re-run's list: the
/// elements unchanged since the list was last written whole are copied from that JSON, and those changed since are
/// encoded, about 1,000 of them. Each of those is in a change line of the session already: its latest `"~set"` in
/// the chain of lines before. That JSON is the element's, as the re-run has it, when:
/// - the chain's lines, from the store's last record compared (`previous.index`) back, hold the list as changes that
///   only set elements (no `"~remove"`, no `"~order"`, no list inside an element): the latest of an id's `"~set"` is
///   then its element in the model that record's line recorded, which verify compared with the re-run's (an error
///   there is thrown first, as it comes first in the session);
/// - the element did not change since that record (`previous.lists`; the caller encodes those).
///
/// The chain is read from its newest line back and stops at the first line that does not hold the list that way, or
/// is not as a writer makes it: the elements found before that line are still their latest. An element not found is
/// encoded, as before. Used on one thread at a time.
final class RecordedElements {
  /// The re-run's lists of the store's last record compared before the line of whole lists.
  let previous: (index: Int, lists: LineLists)
  private let session: Session
  /// Verify's steps, one per record line of the session, in order.
  private let steps: [Session.VerifyStep]
  private let store: String
  /// What was found at each path asked for.
  private var found: [[UInt8]: Elements] = [:]
  /// The most lines read back: a writer writes a list whole after at most 1,000 lines of its changes.
  private static let longestChain = 1_024

  /// The elements found at one list's path: the JSON of their ids and elements, one after another, and where each
  /// element's is, by the JSON of its id.
  struct Elements {
    let json: [UInt8]
    let byID: [ArraySlice<UInt8>: Range<Int>]
  }

  init(session: Session, steps: [Session.VerifyStep], store: String, previous: (index: Int, lists: LineLists)) {
    (self.session, self.steps, self.store, self.previous) = (session, steps, store, previous)
  }

  /// The elements recorded for the list at `path` (``ListPath/json(_:dropping:)`` of a path outside any list).
  func elements(at path: [UInt8]) -> Elements {
    if let known = found[path] { return known }
    let elements = read(at: path)
    found[path] = elements
    return elements
  }

  private func read(at path: [UInt8]) -> Elements {
    // Newest first: an id's first pair is its latest.
    var json: [UInt8] = []
    var ranges: [(id: Range<Int>, element: Range<Int>)] = []
    let index = session.index
    guard steps.count == index.records.count else { return Elements(json: [], byID: [:]) }
    path.withUnsafeBytes { path in
      guard let components = JSONBytes.elements(of: path, in: 0..<path.count) else { return }
      index.data.withUnsafeBytes { bytes in
        steps.withUnsafeBufferPointer { steps in
          var record = previous.index
          for _ in 0..<Self.longestChain {
            let offset = record - index.firstIndex
            guard offset >= 0, offset < steps.count else { return }
            let step = steps.baseAddress! + offset
            guard step.pointee.index == record, step.pointee.store == store, let base = step.pointee.base,
              let model = step.pointee.modelBytes, let lists = step.pointee.listsBytes, !step.pointee.fieldsFromEnd,
              Self.holdsOnly(path, in: lists, bytes),
              Self.appendSetPairs(at: components, path: path, in: model, bytes, to: &json, ranges: &ranges)
            else { return }
            record = base
          }
        }
      }
    }
    var byID: [ArraySlice<UInt8>: Range<Int>] = [:]
    byID.reserveCapacity(ranges.count)
    // Oldest first, so that an id's latest pair is the one kept.
    for range in ranges.reversed() { byID[json[range.id]] = range.element }
    return Elements(json: json, byID: byID)
  }

  /// Whether the line's `"l"` (`lists`) holds `path`, once, and no path inside the list there.
  private static func holdsOnly(
    _ path: UnsafeRawBufferPointer, in lists: Range<Int>, _ bytes: UnsafeRawBufferPointer
  ) -> Bool {
    // As a writer writes a line that changes this one list: `[` the path `]`.
    if lists.count == path.count + 2, bytes[lists.lowerBound] == UInt8(ascii: "["),
      bytes[lists.upperBound - 1] == UInt8(ascii: "]"),
      JSONBytes.equal(UnsafeRawBufferPointer(rebasing: bytes[(lists.lowerBound + 1)..<(lists.upperBound - 1)]), path)
    {
      return true
    }
    guard let paths = JSONBytes.elements(of: bytes, in: lists) else { return false }
    var count = 0
    for entry in paths {
      let entryBytes = UnsafeRawBufferPointer(rebasing: bytes[entry])
      if JSONBytes.equal(entryBytes, path) {
        count += 1
      } else if entryBytes.count > path.count, entryBytes.prefix(path.count - 1).elementsEqual(path.dropLast()),
        entryBytes[path.count - 1] == UInt8(ascii: ",")
      {
        return false
      }
    }
    return count == 1
  }

  /// Appends to `json` the ids and elements that the model at `model` sets in the list form at the list path
  /// `components` (the elements of `path`'s JSON: keys as strings, indices as numbers), and their places to `ranges`;
  /// `false`, having appended nothing, unless the form there only sets elements (`{"~set":[[id,element]…]}`, or
  /// `{}`), each id once, and every key on the way is there once.
  private static func appendSetPairs(
    at components: [Range<Int>], path: UnsafeRawBufferPointer, in model: Range<Int>, _ bytes: UnsafeRawBufferPointer,
    to json: inout [UInt8], ranges: inout [(id: Range<Int>, element: Range<Int>)]
  ) -> Bool {
    let (jsonCount, rangesCount) = (json.count, ranges.count)
    var pairs: [(id: Range<Int>, element: Range<Int>)] = []
    var reader = JSONBytes.Reader(bytes: bytes, position: model.lowerBound, end: model.upperBound)
    if !reader.onlySetPairs(at: path, into: &pairs) {
      pairs.removeAll()
      reader.position = model.lowerBound
      let fits = reader.value(at: components[...], path: path, then: { reader in reader.setPairs(into: &pairs) })
      guard fits, reader.atEnd else { return false }
    }
    for pair in pairs {
      let id = UnsafeRawBufferPointer(rebasing: bytes[pair.id])
      // An id set twice in one line: not as a writer writes it.
      for earlier in ranges[rangesCount...] where json[earlier.id].elementsEqual(id) {
        json.removeSubrange(jsonCount...)
        ranges.removeSubrange(rangesCount...)
        return false
      }
      let idRange = json.count..<(json.count + id.count)
      json.append(contentsOf: id)
      let elementRange = json.count..<(json.count + pair.element.count)
      json.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[pair.element]))
      ranges.append((idRange, elementRange))
    }
    return true
  }
}
