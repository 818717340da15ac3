extension Array {
  /// A copy in a buffer of its own, made element by element.
  ///
  /// In code specialised for the element type each element is copied directly (a retain for a reference), where the
  /// array's own copy on write, and `initialize(from:count:)`, copy each through the runtime's value witness. The
  /// nodes of `IdentifiedList`'s trees copy their arrays this way before a change.
  @inlinable func elementwiseCopy() -> [Element] {
    // Not for none: an array made with no capacity is the shared empty one, whose count the initialiser writes.
    guard !isEmpty else { return [] }
    return withUnsafeBufferPointer { source in
      Array(unsafeUninitializedCapacity: source.count) { buffer, initialized in
        for index in source.indices { (buffer.baseAddress! + index).initialize(to: source[index]) }
        initialized = source.count
      }
    }
  }
}
