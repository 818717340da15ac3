/// Field-level differences between two values, by key path, found with `Mirror`: what a failed expectation prints
/// instead of two whole models.
enum ValueDiff {
  /// `path: expected X, actual Y` lines, one per differing leaf; empty when the descriptions match everywhere.
  static func lines(expected: Any, actual: Any, path: String = "") -> [String] {
    let left = Mirror(reflecting: expected)
    let right = Mirror(reflecting: actual)
    let leftChildren = Array(left.children)
    let rightChildren = Array(right.children)
    // Leaves, and values whose shape differs (an optional that became nil, arrays of different lengths): compare
    // their descriptions.
    let isLeaf = leftChildren.isEmpty && rightChildren.isEmpty
    let shapeDiffers =
      leftChildren.count != rightChildren.count || left.displayStyle != right.displayStyle
      || (left.displayStyle == .collection || left.displayStyle == .dictionary || left.displayStyle == .set)
        && leftChildren.count != rightChildren.count
    if isLeaf || shapeDiffers {
      let expectedText = describe(expected)
      let actualText = describe(actual)
      return expectedText == actualText
        ? [] : ["\(path.isEmpty ? "(value)" : path): expected \(expectedText), actual \(actualText)"]
    }
    var result: [String] = []
    for (offset, (leftChild, rightChild)) in zip(leftChildren, rightChildren).enumerated() {
      let label = leftChild.label.map { $0.hasPrefix(".") ? $0 : ".\($0)" } ?? "[\(offset)]"
      let name = label.hasPrefix(".") && path.isEmpty ? String(label.dropFirst()) : path + label
      result += lines(expected: leftChild.value, actual: rightChild.value, path: name)
    }
    return result
  }

  static func describe(_ value: Any) -> String {
    if let string = value as? String { return "\"\(string)\"" }
    let mirror = Mirror(reflecting: value)
    if mirror.displayStyle == .optional {
      guard let wrapped = mirror.children.first else { return "nil" }
      return describe(wrapped.value)
    }
    return String(describing: value)
  }
}
