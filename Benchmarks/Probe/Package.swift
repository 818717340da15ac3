// swift-tools-version: 6.0
// DispatchProbe: dispatches for `valgrind --tool=callgrind` instruction counts (Benchmarks/README.md). A package of
// its own: the benchmark plugin would run any executable of the benchmark package as a benchmark.
import PackageDescription

let package = Package(
  name: "DispatchProbe",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(name: "DispatchStore", path: "../..")
  ],
  targets: [
    .executableTarget(
      name: "DispatchProbe",
      dependencies: [.product(name: "DispatchStore", package: "DispatchStore")]
    )
  ],
  swiftLanguageModes: [.v6]
)
