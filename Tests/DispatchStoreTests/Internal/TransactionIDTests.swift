import Dispatch
import DispatchStore
import Foundation
import Testing

@Suite("TransactionID")
struct TransactionIDTests {
  @Test func identifiersAreUniqueAndIncreasingAcrossThreads() async {
    let perThread = Locked<[[TransactionID]]>(Array(repeating: [], count: 4))
    await concurrently(iterations: 4) { thread in
      let ids = (0..<5_000).map { _ in TransactionID.next() }
      perThread.withLock { $0[thread] = ids }
    }
    let all = perThread.withLock { $0 }
    for ids in all { #expect(ids == ids.sorted() && Set(ids).count == ids.count) }
    #expect(Set(all.joined()).count == 20_000)
  }

  @Test func identifierIsCloseToNowAndSortsAsString() {
    let before = Date()
    let first = TransactionID.next()
    let second = TransactionID.next()
    #expect(abs(first.date.timeIntervalSince(before)) < 5)
    #expect(first < second)
    #expect(first.description < second.description)
    #expect(first.description.count == 16)
  }
}
