import DispatchStore
import SearchFeature
import Testing

/// The SwiftUI example's feature, tested here on Linux: only its views need SwiftUI.
@Suite("Search example's feature", .timeLimit(.minutes(1)))
struct SearchFeatureTests {
  @Test func aSearchWaitsForTheQueryAndFindsWhatStartsWithIt() async throws {
    let feature = try SearchFeature(catalogue: ["rust", "swift", "swiftui", "switch"])
    try await feature.dispatcher.dispatch(action: SearchAction.search("swi"))
    #expect(feature.query.model.text == "swi")
    #expect(feature.results.model.hits == ["swift", "swiftui", "switch"])
  }

  @Test func typingSearchesOnceTypingPausesAndUndoGoesBackASearch() async throws {
    let feature = try SearchFeature(catalogue: ["rust", "swift", "swiftui", "switch"])
    try await feature.dispatcher.dispatch(action: SearchAction.search("r"))
    try await feature.type("swif").value
    #expect(feature.results.model.query == "swif" && feature.results.model.hits == ["swift", "swiftui"])
    try feature.undo()
    #expect(feature.results.model.query == "r" && feature.results.model.hits == ["rust"])
  }
}
