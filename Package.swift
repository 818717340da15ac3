// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "DispatchStore",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "DispatchStore", targets: ["DispatchStore"]),
    // For users' own tests: exhaustive assertions, a test clock, sessions as golden tests (Swift Testing, XCTest).
    .library(name: "DispatchStoreTesting", targets: ["DispatchStoreTesting"]),
    // `swift run dispatchstore-inspect SESSION.jsonl -o page.html`: a session as one HTML page.
    .executable(name: "dispatchstore-inspect", targets: ["DispatchStoreInspect"]),
  ],
  targets: [
    .target(name: "DispatchStore"),
    .target(name: "DispatchStoreTesting", dependencies: ["DispatchStore"]),
    .executableTarget(name: "DispatchStoreInspect", dependencies: ["DispatchStore"]),
    // The README's quick start, kept identical to it (CI compares them).
    .executableTarget(name: "QuickStart", dependencies: ["DispatchStore"], path: "Examples/QuickStart"),
    // A search field whose latest query cancels the one in flight.
    .executableTarget(name: "Search", dependencies: ["DispatchStore"], path: "Examples/Search"),
    // Top-level code awaiting dispatches (CI checks that they waited).
    .executableTarget(name: "TopLevel", dependencies: ["DispatchStore"], path: "Examples/TopLevel"),
    // A process whose main thread runs `dispatchMain()`, with the process main thread as its main queue.
    .executableTarget(name: "DispatchMain", dependencies: ["DispatchStore"], path: "Examples/DispatchMain"),
    .executableTarget(name: "FlightBooking", dependencies: ["DispatchStore"], path: "Examples/FlightBooking"),
    // `swift run todo`: the session-file todo list (Examples/TodoCLI).
    .executableTarget(name: "todo", dependencies: ["DispatchStore"], path: "Examples/TodoCLI"),
    // The feature of the SwiftUI example (two stores, waitFor, debounced search, undo), and two front ends: the
    // SwiftUI app (Apple platforms only; a stub elsewhere) and a Linux-buildable twin that CI runs.
    .target(name: "SearchFeature", dependencies: ["DispatchStore"], path: "Examples/SearchFeature"),
    .executableTarget(name: "SearchApp", dependencies: ["DispatchStore", "SearchFeature"], path: "Examples/SearchApp"),
    .executableTarget(name: "SearchCLI", dependencies: ["DispatchStore", "SearchFeature"], path: "Examples/SearchCLI"),
    // The README's lines-of-code comparison: the same two features before and after the closure stores.
    .executableTarget(name: "Ceremony", dependencies: ["DispatchStore"], path: "Examples/Ceremony"),
    .testTarget(name: "DispatchStoreTests", dependencies: ["DispatchStore", "DispatchStoreTesting"]),
    .testTarget(name: "DispatchStoreTestingTests", dependencies: ["DispatchStore", "DispatchStoreTesting"]),
    // The examples' own tests, written with DispatchStoreTesting.
    .testTarget(name: "ExampleTests", dependencies: ["DispatchStore", "DispatchStoreTesting", "FlightBooking", "todo", "SearchFeature"]),
  ],
  swiftLanguageModes: [.v6]
)
