/// Compares the models a verify's re-run made with the models its session recorded, record after record, in the
/// session's order (``Session/verify(against:mode:)``).
///
/// A model is encoded as the writer encoded it, its lists as the changes from the lists this comparison encoded for
/// the record the line rests on, and compared with the line's bytes. Only when they differ is the record decoded and
/// compared as a value, and the fields that differ named. A line that holds its lists whole is handed to `wholeLines`,
/// if there is one, once its lists are found. Used on one thread at a time.
struct ModelComparison {
  let session: Session
  /// Where the lines that hold their lists whole are compared, on another thread; `nil` to compare them here.
  let wholeLines: WholeLineComparison?
  private let encoder = JSONStreamEncoder()
  private var encoded: [UInt8] = []
  /// How the records were compared so far.
  private(set) var counts = Session.VerifyCounts()
  /// What this comparison keeps per store, found once by the store's identifier.
  private var stores: [String: StoreLines] = [:]

  /// One store's codec, its list encoding for the whole run (which keeps the JSON of the elements of the lists it
  /// wrote whole), and the lists this comparison encoded for the store's last record compared: the next record's
  /// list changes are encoded against them, as the writer encoded them against the lists it had written.
  private final class StoreLines {
    let codec: SessionCodecs.Codec
    let listEncoding = ListEncoding()
    var encodedLists: (index: Int, lists: LineLists)?

    init(codec: SessionCodecs.Codec) {
      self.codec = codec
    }
  }

  init(session: Session, wholeLines: WholeLineComparison?) {
    self.session = session
    self.wholeLines = wholeLines
  }

  /// Compares `actual`, the model a transaction's re-run made, with the model of its last record.
  ///
  /// - Parameters:
  ///   - actual: The re-run model.
  ///   - step: The transaction's first step, the one re-run: its dispatch, action and store name a divergence.
  ///   - last: The transaction's last record.
  /// - Throws: ``SessionError/diverged(index:dispatchID:storeIdentifier:action:differences:)`` naming the fields that
  ///   differ; ``SessionError/unregisteredStore(index:storeIdentifier:)`` for a store without a codec; what reading
  ///   the record throws.
  mutating func compare(
    _ actual: any ModelType, after step: Session.VerifyStep, with last: Session.VerifyStep
  ) throws(SessionError) {
    let store: StoreLines
    if let known = stores[step.store] {
      store = known
    } else {
      guard let codec = session.codecs.codecs[step.store] else {
        throw .unregisteredStore(index: step.index, storeIdentifier: step.store)
      }
      store = StoreLines(codec: codec)
      stores[step.store] = store
    }
    let encodedLists = store.encodedLists
    store.encodedLists = nil
    if let wholeLines, last.modelBytes != nil, last.hasListForms, last.base == nil, !wholeLines.hasFailed,
      let encodable = actual as? any Encodable, let lists = try? store.listEncoding.lists(in: encodable)
    {
      // The next lines' base, found without encoding the lists; the line itself is encoded on the other thread.
      store.encodedLists = (last.index, LineLists(lists: lists))
      wholeLines.compare(actual, after: step, with: last)
      counts.handedOver += 1
      return
    }
    if let bytes = last.modelBytes {
      // Lists in their session forms: the changes from the lists this run encoded for the line's base.
      let lists: ListEncoding?
      if !last.hasListForms {
        lists = nil
      } else if let base = last.base {
        lists = encodedLists.flatMap { $0.index == base ? store.listEncoding : nil }
        if let encodedLists, lists != nil { store.listEncoding.begin(base: encodedLists.lists) }
      } else {
        lists = store.listEncoding
        store.listEncoding.begin(base: .none)
      }
      if lists != nil || !last.hasListForms {
        encoded.removeAll(keepingCapacity: true)
        encoder.lists = lists
        let written = (try? store.codec.encodeModel(step.store, actual, encoder, &encoded)) != nil
        encoder.lists = nil
        if written, let lists { store.encodedLists = (last.index, LineLists(lists: lists.written)) }
        if written, session.index.data.elementsEqual(encoded, in: bytes) {
          counts.byBytes += 1
          return
        }
      }
    }
    counts.decoded += 1
    let codec = store.codec
    let recorded: Record
    if let decoded = last.record {
      recorded = decoded
    } else {
      recorded = try session.record(at: last.index)
    }
    guard !codec.modelsEqual(recorded.model, actual) else { return }
    var differences = JSONValue.differences(
      expected: codec.modelTree(recorded.model), actual: codec.modelTree(actual))
    if differences.isEmpty {
      // Equal as JSON, unequal with `==`: the difference is in what the encoding leaves out.
      differences = [FieldDifference(path: "", expected: "\(recorded.model)", actual: "\(actual)")]
    }
    throw .diverged(
      index: last.index, dispatchID: step.dispatchID, storeIdentifier: step.store, action: "\(step.action)",
      differences: differences)
  }
}
