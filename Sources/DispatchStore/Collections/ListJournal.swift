import Synchronization

/// What the changes to ``IdentifiedList``s made on one thread touched, while the journal is installed there.
///
/// For each list (proposal 0028): the element each touched id had before its first touch, and the order before the
/// first change. From them, ``changes(of:since:same:)`` finds what changed in a list since an earlier state of it
/// without that state being kept, so the change copies nothing the list holds.
///
/// A list's mutating methods find the journal through ``current``, which costs one relaxed atomic load while no
/// journal is installed on any thread. A journal is used by the thread it is installed on only.
@usableFromInline final class ListJournal {
  /// How many journals are installed, on all threads.
  @usableFromInline static let installed = Atomic<Int>(0)

  /// The notes of the lists changed since the last ``reset()``, by the identity of their element trees' roots.
  private var notes: [ObjectIdentifier: AnyObject] = [:]

  init() {}

  /// The journal installed on the calling thread, if any.
  @inlinable static var current: ListJournal? {
    guard installed.load(ordering: .relaxed) > 0 else { return nil }
    return onThisThread()
  }

  @usableFromInline static func onThisThread() -> ListJournal? {
    ThreadContext.withCurrent { $0.listJournal }
  }

  /// Runs `body` with this journal installed on the calling thread: the changes it makes to lists there are noted.
  func recording<Result>(_ body: () throws -> Result) rethrows -> Result {
    let context = ThreadContext.current
    let outer = context.listJournal
    context.listJournal = self
    Self.installed.add(1, ordering: .relaxed)
    defer {
      Self.installed.subtract(1, ordering: .relaxed)
      context.listJournal = outer
    }
    return try body()
  }

  /// Forgets every note: the lists' states now are the ones the next changes are found from.
  func reset() {
    notes.removeAll(keepingCapacity: true)
  }

  /// The changes to `list` since the state `mark` was taken of (``ListMark/init(_:)``), if this journal can vouch for
  /// them: no change to it at all since, or every change since noted here.
  ///
  /// `nil` otherwise: a change made where this journal was not installed (another thread, before ``recording(_:)``),
  /// a list replaced by another, or an earlier version of it put back.
  ///
  /// - Parameters:
  ///   - list: The list now.
  ///   - mark: An earlier state of it, taken before the changes this journal noted.
  ///   - same: Whether two elements, where they are stored, are equal, their ids included (as for
  ///     ``IdentifiedList/changes(since:same:)``).
  func changes<Element>(
    of list: IdentifiedList<Element>, since mark: ListMark,
    same: (UnsafePointer<Element>, UnsafePointer<Element>) -> Bool
  ) -> ListChanges<Element>? {
    if mark.isState(of: list) { return ListChanges() }
    guard let note = note(of: list), note.start.isSame(as: mark), note.isEnd(of: list) else { return nil }
    return note.changes(to: list, same: same)
  }

  /// The note of `list`, if one was made of a list with its element tree's root.
  private func note<Element>(of list: IdentifiedList<Element>) -> Note<Element>? {
    let root = list.elementStorage.root
    guard let note = notes[ObjectIdentifier(root)] as? Note<Element>, note.root === root else { return nil }
    return note
  }

  /// Notes that `list` is about to change, touching the elements with `ids` (the order may change too).
  ///
  /// Makes the list's element tree's root its own (a copy of the node, whose children stay shared), so that the
  /// changes up to ``Note/ended(_:)`` leave it where it is; the note is filed under it.
  /// - Returns: The note, whose ``Note/ended(_:)`` the list calls once the change is made.
  @usableFromInline func note<Element>(_ list: inout IdentifiedList<Element>, touching ids: Element.ID...) -> Note<
    Element
  > {
    note(&list, touchingAll: ids)
  }

  /// ``note(_:touching:)`` with the ids in an array.
  @usableFromInline func note<Element>(_ list: inout IdentifiedList<Element>, touchingAll ids: [Element.ID]) -> Note<
    Element
  > {
    // A note of the list as it is: one it left (changed where this journal was not, or by a change that threw) is
    // replaced by a new one, which starts here, so that it vouches for nothing since an earlier state.
    let note =
      self.note(of: list).flatMap { $0.isEnd(of: list) ? $0 : nil }
      ?? Note(journal: self, start: ListMark(list), order: list.orderStorage)
    // Not through `elements`: making the root unique changes nothing in the list.
    ElementNode.makeUnique(&list.elementStorage.root)
    note.file(under: list.elementStorage.root)
    note.saw(list)
    for id in ids { note.touch(id, in: list) }
    return note
  }

  /// What a journal noted of one list since its last ``ListJournal/reset()``.
  @usableFromInline final class Note<Element: Identifiable> {
    private unowned let journal: ListJournal
    /// The root of the list's element tree, which the note is filed under.
    weak var root: ElementNode<Element>?
    /// The list's state before the first change noted.
    let start: ListMark
    /// The root of the list's element tree in ``start``, once the list left it: kept, so that ``start`` stays a state
    /// that can be compared (``ListMark`` holds it weakly).
    private var startRoot: AnyObject?
    /// The elements before their first touch, by id; `nil` for an id not in the list then.
    private var before: [Element.ID: Element?] = [:]
    /// The elements before the first change, once a change replaced them all: then `before` is not used.
    private var elementsBefore: ElementTrie<Element>?
    /// The order before the first change.
    private let orderBefore: OrderTree<Element.ID>
    /// The list's state when the journal last saw it, at the start or end of a change: the order's root and the
    /// generation (the element tree's root is `root`).
    private weak var endOrder: OrderNode<Element.ID>?
    private var endGeneration: (elements: UInt64, order: UInt64)?

    init(journal: ListJournal, start: ListMark, order: OrderTree<Element.ID>) {
      self.journal = journal
      self.start = start
      self.orderBefore = order
    }

    /// Files the note under `root`, the list's element tree's root now.
    func file(under root: ElementNode<Element>) {
      guard self.root !== root else { return }
      if let old = self.root { journal.notes[ObjectIdentifier(old)] = nil }
      journal.notes[ObjectIdentifier(root)] = self
      self.root = root
      // Still held by what the list was copied from, or by the elements kept whole (`replacingElements`).
      if startRoot == nil, let first = start.elementsRootObject, first !== root { startRoot = first }
    }

    /// Notes the element with `id` as it is before this change, if it was not touched before.
    func touch(_ id: Element.ID, in list: IdentifiedList<Element>) {
      guard elementsBefore == nil, before.index(forKey: id) == nil else { return }
      before[id] = .some(list.elementStorage[id])
    }

    /// Notes that the list's elements are about to be replaced all at once: their state before the first change is
    /// kept whole.
    @usableFromInline func replacingElements(_ list: IdentifiedList<Element>) {
      guard elementsBefore == nil else { return }
      // The list is about to let go of its root: if that is the root of ``start``, kept, so that the start stays a
      // state that can be compared.
      if startRoot == nil, let first = start.elementsRootObject, first === list.elementStorage.root {
        startRoot = first
      }
      var elements = list.elementStorage
      for (id, element) in before {
        if let element { elements.update(element) } else { elements.remove(id) }
      }
      elementsBefore = elements
      before = [:]
    }

    /// Notes the end of a change to `list`: its state now, and the root its element tree has now.
    @usableFromInline func ended(_ list: IdentifiedList<Element>) {
      file(under: list.elementStorage.root)
      saw(list)
    }

    /// Notes `list`'s state now, whose element tree's root is ``root``.
    func saw(_ list: IdentifiedList<Element>) {
      endOrder = list.orderStorage.root
      endGeneration = list.changeCounts
    }

    /// Whether `list` is in the state the journal last saw it in.
    func isEnd(of list: IdentifiedList<Element>) -> Bool {
      guard let endGeneration, let endOrder, let root else { return false }
      return root === list.elementStorage.root && endOrder === list.orderStorage.root
        && endGeneration == list.changeCounts
    }

    /// The changes from the list's state at ``start`` to `list`, which is in the state at its end (``isEnd(of:)``).
    func changes(
      to list: IdentifiedList<Element>, same: (UnsafePointer<Element>, UnsafePointer<Element>) -> Bool
    ) -> ListChanges<Element> {
      var changes = ListChanges<Element>()
      if let elementsBefore {
        ElementNode.differences(
          from: elementsBefore.root, to: list.elementStorage.root, shift: 0, same: same, into: &changes)
      } else {
        for (id, element) in before {
          switch (element, list.elementStorage[id]) {
          case (nil, nil):
            break
          case (nil, let now?):
            changes.updated.append(now)
          case (.some, nil):
            changes.removed.append(id)
          case (let old?, let now?):
            let unchanged = withUnsafePointer(to: old) { old in withUnsafePointer(to: now) { same(old, $0) } }
            if !unchanged { changes.updated.append(now) }
          }
        }
      }
      if orderBefore.root !== list.orderStorage.root {
        changes.splices = OrderNode.splices(from: orderBefore.root, to: list.orderStorage.root)
      }
      return changes
    }
  }
}

/// A state of an ``IdentifiedList``, kept without keeping the list: the roots of its two trees, held weakly, and its
/// generation.
///
/// A list changes its trees in place only where it holds them alone, and counts each change in its element tree's root
/// (``ElementNode/generation``), and each change of its order in the order tree's (``OrderNode/generation``): while
/// both roots live, a list that holds them with the same counts is in this state.
struct ListMark {
  private weak var elementsRoot: AnyObject?
  private weak var orderRoot: AnyObject?
  private let generation: (elements: UInt64, order: UInt64)

  /// The root of the list's element tree in this state, if it is still held.
  var elementsRootObject: AnyObject? { elementsRoot }

  /// The state `list` is in now.
  init<Element>(_ list: IdentifiedList<Element>) {
    elementsRoot = list.elementStorage.root
    orderRoot = list.orderStorage.root
    generation = list.changeCounts
  }

  /// Whether `list` is in this state.
  func isState<Element>(of list: IdentifiedList<Element>) -> Bool {
    guard let elementsRoot, let orderRoot else { return false }
    return elementsRoot === list.elementStorage.root && orderRoot === list.orderStorage.root
      && generation == list.changeCounts
  }

  /// Whether `other` is this state.
  func isSame(as other: ListMark) -> Bool {
    guard let elementsRoot, let orderRoot else { return false }
    return elementsRoot === other.elementsRoot && orderRoot === other.orderRoot && generation == other.generation
  }
}

extension IdentifiedList {
  /// The changes counted in the roots of the list's two trees (``ListMark``).
  var changeCounts: (elements: UInt64, order: UInt64) {
    (elementStorage.root.generation, orderStorage.root.generation)
  }
}
