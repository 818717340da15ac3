import Dispatch
import Foundation
import Testing

@testable import DispatchStore

@Suite("TransactionID", .watchdog)
struct TransactionIDTests {
  @Test func identifiersAreUniqueAndIncreasingAcrossThreads() async {
    let perThread = Locked<[[TransactionID]]>(Array(repeating: [], count: 4))
    await onThreads(4) { thread in
      let ids = (0..<5_000).map { _ in TransactionID.next() }
      perThread.withLock { $0[thread] = ids }
    }
    let all = perThread.withLock { $0 }
    for ids in all { #expect(ids.map(\.rawValue) == ids.map(\.rawValue).sorted() && Set(ids).count == ids.count) }
    #expect(Set(all.joined()).count == 20_000)
  }

  /// Two threads take turns, each making a few identifiers per turn and then waking the other: every identifier
  /// must be later than those the other thread made before the hand-over, although each thread hands out
  /// identifiers from a block of its own.
  @Test(.timeLimit(.minutes(1)))
  func identifiersFollowTheOrderTheyWereMadeInAcrossThreads() async {
    let turns = 400
    let made = Locked<[TransactionID]>([])
    let wake = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
    let done = DispatchGroup()
    // Two threads of their own: a pool could run both players on one thread, one after the other, and hang.
    for player in 0..<2 {
      done.enter()
      Thread {
        var turn = player
        while turn < turns {
          if turn > 0 { wake[player].wait() }
          // Turns of several identifiers let a block grow while the thread keeps it.
          let ids = (0..<(turn % 5 + 1)).map { _ in TransactionID.next() }
          made.withLock { $0 += ids }
          wake[1 - player].signal()
          turn += 2
        }
        done.leave()
      }.start()
    }
    await withCheckedContinuation { continuation in done.notify(queue: .global()) { continuation.resume() } }
    let ids = made.withLock { $0 }
    #expect(ids.count == (0..<turns).reduce(0) { $0 + $1 % 5 + 1 })
    #expect(zip(ids, ids.dropFirst()).allSatisfy { $0.rawValue < $1.rawValue })
  }

  @Test func identifierIsCloseToNowAndSortsAsString() {
    let before = Date()
    let first = TransactionID.next()
    let second = TransactionID.next()
    #expect(abs(Date(timeIntervalSince1970: Double(first.rawValue) / 1e9).timeIntervalSince(before)) < 5)
    #expect(first.rawValue < second.rawValue)
    #expect(first.description < second.description)
    #expect(first.description.count == 16)
  }
}
