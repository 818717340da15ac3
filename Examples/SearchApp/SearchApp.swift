// A SwiftUI app over the search feature: two stores, waitFor, a debounced search and undo. It builds on Apple
// platforms only (SwiftUI); elsewhere the target is a stub, and Examples/SearchCLI runs the same feature.
#if canImport(SwiftUI)
  import DispatchStore
  import SearchFeature
  import SwiftUI

  @main
  struct SearchApp: App {
    // On Apple platforms the dispatcher's main queue is the main thread: `results` changes on the main actor.
    let feature = try! SearchFeature(catalogue: ["rust", "swift", "swiftui", "switch", "sweden"])

    var body: some Scene {
      WindowGroup {
        SearchView(feature: feature, results: feature.results.observable())
      }
    }
  }

  struct SearchView: View {
    let feature: SearchFeature
    /// Read through Observation: the view renders again when `hits` or `query` change, and only then.
    let results: ObservedModel<Results>
    @State private var text = ""
    @State private var undoError: String?

    var body: some View {
      VStack(alignment: .leading) {
        TextField("Search", text: $text)
          .onChange(of: text) { _, newValue in feature.type(newValue) }
        Text(results.query.isEmpty ? "Type to search" : "Results for \(results.query)")
        List(results.hits, id: \.self) { Text($0) }
        Button("Undo") {
          do { try feature.undo() } catch { undoError = "\(error)" }
        }
        if let undoError { Text(undoError).foregroundStyle(.red) }
      }
      .padding()
    }
  }
#else
  @main
  enum SearchApp {
    static func main() {
      print("SearchApp needs SwiftUI (Apple platforms); run `swift run SearchCLI` for the same feature here.")
    }
  }
#endif
