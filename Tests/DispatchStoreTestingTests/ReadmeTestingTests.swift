import DispatchStore
// The README's test-kit example: CI compares the lines between the markers with the README's `testing` block.
// README: testing
import DispatchStoreTesting
import Testing

@Test func addingLogsTheAmount() async throws {
  let test = TestDispatcher(timeLimit: .seconds(30))  // a step waiting longer fails, naming what still runs
  let counter = try test.register(makeCounter())
  let log = try test.register(makeLog())

  // Each store's change is stated; any other change, or a follow-up not received, fails the test.
  await test.send(CountAction.addAndLog(3), .store(counter) { $0.value = 3 })
  await test.receive(LogAction.write("added 3"), .store(log) { $0.lines = ["added 3"] })
  await test.send(CountAction.addAndLog(-1), fails: CountError.negative(-1))  // and no store changed
  await test.finish()  // fails for operations still running and timers still pending
}
// README end
