/// A synthesised enum with associated values, nested arrays and a struct: a value the JSON tests of the session's
/// encoder and decoder both write and read.
enum Shape: Codable, Equatable {
  case circle(radius: Int)
  case polygon([Point], closed: Bool)
  case empty
}

/// A plain struct of two integers, inside ``Shape``.
struct Point: Codable, Equatable {
  var x: Int
  var y: Int
}
