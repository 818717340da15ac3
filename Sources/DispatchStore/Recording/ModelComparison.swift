import Foundation

/// Compares the models a verify's re-run made with the models its session recorded, record after record, in the
/// session's order (``Session/verify(against:mode:)``).
///
/// A model is encoded as the writer encoded it, its lists as the changes from the lists this comparison encoded for
/// the record the line rests on, and compared with the line's bytes. Only when they differ is the record decoded and
/// compared as a value, and the fields that differ named. With a `background`, the lines that hold their lists whole,
/// and runs of records while few wait there, are compared there instead. Used on one thread at a time.
struct ModelComparison {
  let session: Session
  /// Where records are compared on another thread; `nil` to compare every record here.
  let background: BackgroundComparison?
  /// The records whose re-run lists became a base before the other thread compared them; shared with it.
  let unconfirmed: UnconfirmedBases?
  private let encoder = JSONStreamEncoder()
  private var encoded: [UInt8] = []
  /// How the records were compared so far.
  private(set) var counts = Session.VerifyCounts()
  /// What this comparison keeps per store, found once by the store's identifier.
  private var stores: [String: StoreLines] = [:]
  private var lastStore: (identifier: String, lines: StoreLines)?
  /// The records of the run being handed to `background`, not yet handed over.
  private var run: [BackgroundComparison.Job] = []
  /// How many more records the current run has, and whether `background` compares it.
  private var runLeft = 0
  private var runInBackground = false
  /// Whether ``finish()`` counted the records compared in `background`.
  private var finished = false
  /// The records of a run: enough that the two threads take turns rarely, few enough that they take turns often.
  private static let runLength = 32
  /// The most batches waiting on the other thread for a run to go there too: enough that it does not run out of
  /// records while this thread compares a run of its own, which takes longer, as this thread also dispatches; few
  /// enough that a divergence there is found at most 6 batches (96 records) after the re-run made it.
  private static let waitingBatches = 4
  /// The records handed over at once: enough that handing them over costs little per record, few enough that a
  /// divergence there is found soon after the re-run made it.
  private static let batchLength = 16
  /// The most change lines a line of whole lists is checked against by its bytes: more than a writer writes between
  /// two (``SessionFormat/Encoder/maximumChain``).
  private static let longestChain = 4_096

  /// One store's codec, its list encoding for the whole run (which keeps the JSON of the elements of the lists it
  /// wrote whole), and the lists this comparison encoded for the store's last record compared: the next record's
  /// list changes are encoded against them, as the writer encoded them against the lists it had written.
  private final class StoreLines {
    let codec: SessionCodecs.Codec
    let listEncoding = ListEncoding()
    /// The base of the store's next record: its lists, and whether they were `derived`, taken from the re-run's model
    /// of a record the other thread compares before it did (``UnconfirmedBases``).
    var encodedLists: (index: Int, lists: LineLists, derived: Bool)?
    /// The lists the reader has for the store's last record compared here by decoding it: what its next line rests
    /// on, handed to the other thread in its place.
    var readLists: (index: Int, lists: LineLists)?
    /// The store's last record compared here or handed over, its re-run model and where its line's `"l"` is: the
    /// lists its next record rests on are found from it when the comparison that takes that record does not have them.
    var lastModel: (index: Int, model: any ModelType, listPaths: Range<Int>?)?
    /// The store's last record handed over: `background` has its lists.
    var handedOver: Int?
    /// The store's record lines since its last line of whole lists, each resting on the one before: what the next
    /// line of whole lists is checked against (``WholeLineSplice``); `nil` once one did not, or after too many.
    var chain: (start: Int, links: [WholeLineSplice.Link])?
    /// The lines of whole lists compared here, checked by their bytes against the lines before them.
    ///
    /// Only the other thread checks (the re-running thread hands its lines of whole lists over); here it is only
    /// restarted and forgotten.
    var splice = WholeLineSplice()

    init(codec: SessionCodecs.Codec) {
      self.codec = codec
    }

    /// The lists of ``lastModel`` if it is the model of record `index` and its line names them (`data`, the session's
    /// bytes); the reader's, if the record was decoded here.
    func lists(at index: Int, in data: Data) -> LineLists? {
      if let readLists, readLists.index == index { return readLists.lists }
      guard let lastModel, lastModel.index == index else { return nil }
      return lists(of: lastModel.model, namedAt: lastModel.listPaths, in: data)
    }

    /// The lists of `model` as a line that holds them whole writes them, found without encoding them; `nil` if the
    /// encoder does not follow the model, or if the line's `"l"` at `listPaths` does not name each of them.
    ///
    /// The record's line is compared, here or on the other thread, with the model, not yet with these lists: one that
    /// decodes to the model but does not hold a list in its form, where `"l"` does not name it, leaves the reader no
    /// list to rest the next line on. That line is then decoded, not passed by its bytes against these lists.
    func lists(of model: any ModelType, namedAt listPaths: Range<Int>?, in data: Data) -> LineLists? {
      guard let lists = lists(in: model) else { return nil }
      return data.namesEveryList(lists, in: listPaths) ? lists : nil
    }

    /// The lists of `model` as a line that holds them whole writes them; `nil` if the encoder does not follow the
    /// model.
    func lists(in model: any ModelType) -> LineLists? {
      guard let encodable = model as? any Encodable, let found = try? listEncoding.lists(in: encodable) else {
        return nil
      }
      return LineLists(lists: found)
    }
  }

  /// Whether the runs of lines that change their lists are all compared here (``Session/verify(against:mode:)``'s
  /// `keepingRuns`).
  private let keepingRuns: Bool

  init(
    session: Session, background: BackgroundComparison?, unconfirmed: UnconfirmedBases?, keepingRuns: Bool = false
  ) {
    self.session = session
    self.background = background
    self.unconfirmed = unconfirmed
    self.keepingRuns = keepingRuns
  }

  /// Makes `lists` the lists of `store`'s record `index`, which its next record's changes rest on.
  mutating func rest(_ store: String, at index: Int, on lists: LineLists) {
    guard let lines = try? storeLines(store, index: index) else { return }
    lines.encodedLists = (index, lists, false)
  }

  /// Hands the records kept for `background` over, waits until it compared them all, and returns what the first
  /// that differed threw, if one did; `counts` then counts the records compared there too.
  mutating func finish() -> SessionError? {
    guard let background else { return nil }
    handOverRun()
    let (failure, counts) = background.finish()
    if !finished {
      finished = true
      self.counts.byBytes += counts.byBytes
      self.counts.decoded += counts.decoded
      self.counts.spliced += counts.spliced
    }
    return failure
  }

  private mutating func storeLines(_ store: String, index: Int) throws(SessionError) -> StoreLines {
    // The store of the record before: sessions dispatch to one store many times in a row.
    if let last = lastStore, last.identifier == store { return last.lines }
    if let known = stores[store] {
      lastStore = (store, known)
      return known
    }
    guard let codec = session.codecs.codecs[store] else {
      throw .unregisteredStore(index: index, storeIdentifier: store)
    }
    let lines = StoreLines(codec: codec)
    stores[store] = lines
    lastStore = (store, lines)
    return lines
  }

  /// Compares `actual`, the model a transaction's re-run made, with the model of its last record, here or on the
  /// other thread.
  ///
  /// - Parameters:
  ///   - actual: The re-run model.
  ///   - step: The transaction's first step, the one re-run: its dispatch, action and store name a divergence.
  ///   - last: The transaction's last record.
  /// - Throws: ``SessionError/diverged(index:dispatchID:storeIdentifier:action:differences:)`` naming the fields that
  ///   differ; ``SessionError/unregisteredStore(index:storeIdentifier:)`` for a store without a codec; what reading
  ///   the record throws. A record handed over throws from ``finish()`` instead.
  mutating func compare(
    _ actual: any ModelType, after step: Session.VerifyStep, with last: Session.VerifyStep,
    whole: WholeLineSplice.Input? = nil
  ) throws(SessionError) {
    let store = try storeLines(step.store, index: step.index)
    // Kept only for a model with list forms, whose next record may rest on its lists: a model kept is shared, and
    // the next reducer copies the arrays and dictionaries it then changes.
    defer { store.lastModel = last.hasListForms ? (last.index, actual, last.listPaths) : nil }
    // Followed where lines are handed over from: the other thread checks the lines of whole lists with them.
    let chain = background == nil ? nil : follow(last, in: store)
    // Only models with list forms: a large model without them is written whole in each record, and one kept for
    // the other thread would make the next reducer copy the arrays it changes; a small one costs less to compare
    // than to hand over.
    guard let background, last.modelBytes != nil, last.hasListForms, !background.hasFailed else {
      return try compareHere(actual, after: step, with: last, store: store, whole: whole)
    }
    if last.base == nil {
      // A line of whole lists: the next lines' base found here without encoding the lists; the line compared there.
      guard let lists = store.lists(of: actual, namedAt: last.listPaths, in: session.index.data) else {
        return try compareHere(actual, after: step, with: last, store: store)
      }
      let input = chain.flatMap { spliceInput(actual, store: step.store, chain: $0, lists: lists, lines: store) }
      store.encodedLists = (last.index, lists, true)
      hand(actual, step, last, base: nil, whole: input, store: store, now: true)
      return
    }
    if runLeft == 0 {
      handOverRun()
      runInBackground = !keepingRuns && background.waitingBatches <= Self.waitingBatches
      runLeft = Self.runLength
    }
    runLeft -= 1
    // The lists this record rests on, found where the comparison that takes it does not have them.
    var base: (index: Int, lists: LineLists)?
    if let index = last.base {
      if runInBackground {
        if store.handedOver != index { base = store.lists(at: index, in: session.index.data).map { (index, $0) } }
      } else if store.encodedLists?.index != index, let lists = store.lists(at: index, in: session.index.data) {
        store.encodedLists = (index, lists, store.readLists?.index != index)
      }
    }
    guard runInBackground, store.handedOver == last.base || base != nil else {
      return try compareHere(actual, after: step, with: last, store: store)
    }
    hand(actual, step, last, base: base, store: store, now: false)
  }

  /// Notes `last`, the store's record compared next, in its chain of change lines since its last line of whole lists;
  /// returns the chain a line of whole lists ends, which starts the next.
  private func follow(
    _ last: Session.VerifyStep, in store: StoreLines
  ) -> (start: Int, links: [WholeLineSplice.Link])? {
    guard let model = last.modelBytes, let listPaths = last.listPaths else {
      store.chain = nil
      return nil
    }
    guard let base = last.base else {
      defer { store.chain = (last.index, []) }
      return store.chain
    }
    guard var chain = store.chain, base == chain.links.last?.index ?? chain.start,
      chain.links.count < Self.longestChain
    else {
      store.chain = nil
      return nil
    }
    // Taken out while it grows: appended in place, not copied.
    store.chain = nil
    chain.links.append(WholeLineSplice.Link(index: last.index, model: model, listPaths: listPaths))
    store.chain = chain
    return nil
  }

  /// What the other thread needs to check a line of whole lists by its bytes (``WholeLineSplice``): the store's
  /// change lines since its previous one, and the re-run model encoded as a change line resting on the last of them.
  private mutating func spliceInput(
    _ actual: any ModelType, store identifier: String, chain: (start: Int, links: [WholeLineSplice.Link]),
    lists: LineLists, lines store: StoreLines
  ) -> WholeLineSplice.Input? {
    let baseIndex = chain.links.last?.index ?? chain.start
    let base: LineLists
    if let encodedLists = store.encodedLists, encodedLists.index == baseIndex {
      base = encodedLists.lists
    } else if let found = store.lists(at: baseIndex, in: session.index.data) {
      base = found
    } else {
      return nil
    }
    store.listEncoding.begin(base: base)
    encoded.removeAll(keepingCapacity: true)
    encoder.lists = store.listEncoding
    defer { encoder.lists = nil }
    guard (try? store.codec.encodeModel(identifier, actual, encoder, &encoded)) != nil else { return nil }
    return WholeLineSplice.Input(
      start: chain.start, links: chain.links, change: encoded, paths: store.listEncoding.paths, lists: lists)
  }

  /// Hands the record to `background`, in a batch of ``batchLength`` or, `now`, at once with those gathered.
  private mutating func hand(
    _ actual: any ModelType, _ step: Session.VerifyStep, _ last: Session.VerifyStep,
    base: (index: Int, lists: LineLists)?, whole: WholeLineSplice.Input? = nil, store: StoreLines, now: Bool
  ) {
    run.append(BackgroundComparison.Job(actual: actual, step: step, last: last, base: base, whole: whole))
    if now || run.count >= Self.batchLength { handOverRun() }
    store.handedOver = last.index
    counts.handedOver += 1
  }

  /// Hands the records gathered for `background` over, if there are any.
  private mutating func handOverRun() {
    guard let background, !run.isEmpty else { return }
    background.compare(run)
    run = []
  }

  /// The paths where the reader's lists of a record are not the re-run's.
  ///
  /// A list at one and not the other, or not equal by `==` (by their ids and order where the list is not
  /// `Equatable`); every path of the reader's if the re-run's are not known.
  private static func differing(_ read: LineLists, _ rerun: LineLists?) -> Set<[UInt8]> {
    guard let rerun else { return Set(read.lists.keys) }
    var differing = Set<[UInt8]>()
    for (path, list) in read.lists {
      guard let other = rerun.lists[path], let list = list as? any ComparableList, list.isSame(as: other) else {
        differing.insert(path)
        continue
      }
    }
    for path in rerun.lists.keys where read.lists[path] == nil { differing.insert(path) }
    return differing
  }

  /// ``compare(_:after:with:whole:)`` on this thread.
  private mutating func compareHere(
    _ actual: any ModelType, after step: Session.VerifyStep, with last: Session.VerifyStep, store: StoreLines,
    whole: WholeLineSplice.Input? = nil
  ) throws(SessionError) {
    if last.base == nil, let bytes = last.modelBytes, let listPaths = last.listPaths {
      // A line of whole lists: by its bytes against the lines before it if it can be, else as any line.
      if let whole,
        store.splice.check(last.index, model: bytes, listPaths: listPaths, input: whole, in: session.index.data)
      {
        counts.byBytes += 1
        counts.spliced += 1
        store.encodedLists = (last.index, whole.lists, false)
        return
      }
      store.splice.restart(at: last.index, model: bytes, listPaths: listPaths)
    }
    let encodedLists = store.encodedLists
    store.encodedLists = nil
    if let bytes = last.modelBytes {
      // Lists in their session forms: the changes from the lists this run encoded for the line's base.
      let lists: ListEncoding?
      if !last.hasListForms {
        lists = nil
      } else if last.base == nil {
        store.listEncoding.begin(base: .none)
        lists = store.listEncoding
      } else if let encodedLists, encodedLists.index == last.base {
        store.listEncoding.begin(base: encodedLists.lists)
        lists = store.listEncoding
      } else {
        lists = nil
      }
      if lists != nil || !last.hasListForms {
        encoded.removeAll(keepingCapacity: true)
        encoder.lists = lists
        let written = (try? store.codec.encodeModel(step.store, actual, encoder, &encoded)) != nil
        encoder.lists = nil
        // The line's `"l"` too: the decoder reads the model's lists at the paths it names, so a line whose model
        // bytes are right but whose paths are not does not decode to the model compared.
        let pathsAreTheWriters =
          lists.map { session.index.data.isListOfPaths($0.paths, in: last.listPaths ?? 0..<0) } ?? true
        // The next line's base, if this line names its lists as the writer does: one that names them otherwise
        // may not leave the reader these lists (`StoreLines.lists(of:namedAt:in:)`). If the line is decoded, the
        // reader's lists take their place below.
        if written, pathsAreTheWriters, let lists {
          store.encodedLists = (last.index, LineLists(lists: lists.written), false)
        }
        if written, pathsAreTheWriters, session.index.data.elementsEqual(encoded, in: bytes) {
          counts.byBytes += 1
          // Resting on the re-run's lists of a record the other thread compares: that thread confirms the ones read.
          if let encodedLists, encodedLists.derived, encodedLists.index == last.base, let unconfirmed,
            let lists, !lists.basePathsRead.isEmpty
          {
            try unconfirmed.used(
              encodedLists.index, paths: lists.basePathsRead, line: session.lineNumber(ofRecord: encodedLists.index))
          }
          return
        }
      }
    }
    // Not equal by its bytes: fields read from the line's end are checked before the record is read.
    try session.checkFieldsFromTheEnd(of: last)
    counts.decoded += 1
    // The lines of whole lists build on lines that passed by their bytes only (`WholeLineSplice`).
    store.chain = nil
    store.splice.invalidate()
    let codec = store.codec
    let recorded: Record
    var read: LineLists?
    if let decoded = last.record {
      recorded = decoded
    } else {
      (recorded, read) = try session.recordAndLists(at: last.index)
    }
    if codec.modelsEqual(recorded.model, actual) {
      // Equal as values: the next line rests on the lists the reader has, which may not be the re-run's (a
      // dictionary's key spelt otherwise, "01" for 1, files a list at another path).
      if let read {
        store.encodedLists = (last.index, read, false)
        store.readLists = (last.index, read)
        // On the other thread, where the re-running thread may have taken the re-run's lists as that base.
        if let unconfirmed, background == nil {
          let differing = Self.differing(read, store.lists(in: actual))
          if !differing.isEmpty {
            try unconfirmed.differ(last.index, paths: differing, line: session.lineNumber(ofRecord: last.index))
          }
        }
      }
      return
    }
    let differences = codec.differences(expected: recorded.model, actual: actual)
    throw .diverged(
      index: last.index, dispatchID: step.dispatchID, storeIdentifier: step.store, action: "\(step.action)",
      differences: differences)
  }
}
