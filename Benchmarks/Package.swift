// swift-tools-version: 6.1
// The benchmarks live in their own package so that the library keeps zero dependencies.
// Run from the repository root: swift package --package-path Benchmarks benchmark
import PackageDescription

let package = Package(
  name: "DispatchStoreBenchmarks",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    .package(name: "DispatchStore", path: ".."),
  ],
  targets: [
    .executableTarget(
      name: "DispatchBenchmarks",
      dependencies: [
        .product(name: "Benchmark", package: "benchmark"),
        .product(name: "DispatchStore", package: "DispatchStore"),
      ],
      path: "Benchmarks/DispatchBenchmarks",
      swiftSettings: [.swiftLanguageMode(.v6)],
      plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    )
  ]
)
