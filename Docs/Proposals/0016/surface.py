#!/usr/bin/env python3
# Proposal 0016: the public surface, declaration by declaration, with the decision for each.
# Usage (from the repository root, after emitting symbol graphs as .ci/run does into DIR):
#   python3 Docs/Proposals/0016/surface.py DIR/DispatchStore.symbols.json DIR/DispatchStoreTesting.symbols.json
import json, re, sys
# Decisions for the public surface (proposal 0016). Each rule: (path regex, subheading regex or None, decision).
# Decisions: "keep", "rename: NEW", "remove: WHAT TO WRITE INSTEAD", "internal: why" (no longer public).
R = [

 (r"^ObserverDelivery", None, "remove: `observe(synchronously: true)`; on the main queue by default"),
 (r"^TestDispatcher\.clock$", None, "internal: `advance(by:)` moves it"),
 (r"^SynchronousReducer\.operation\(for:in:\)$", None, "internal: the dispatcher reduces a `SynchronousReducer` in place and never asks it for an operation"),
 (r"^MainQueue\.runLoopThread\(_:\)$", None, "remove: `MainQueue.libraryThread` (one library thread; `idlePolling` was a cost knob)"),
 (r"^SessionCodecs\.register\(storeIdentifier:model:action:\)$", r"Equatable", "remove: one `register`, which compares `Equatable` models with `==` (checked when registering)"),
 (r"^ObservedModel\.subscript", r"Value: Equatable", "remove: one subscript of each kind, which compares `Equatable` values (checked at run time)"),
 (r"^TransactionID\.date$", None, "remove: `rawValue` is nanoseconds since 1970"),

 (r"^RecorderMiddleware\.Step", None, "keep: `undo(by: .record)` stops inside a dispatch"),
 (r"^ReplayError$", None, "remove: folded into `SessionError` (one error for sessions: files, restore, verify, moves)"),
 (r"^ReplayError\.(!=|==|description|localizedDescription)", None, "remove: with the type"),
 (r"^ReplayError\.", None, "rename: a case of `SessionError`"),
 (r"^ChildStore\.dispatchSync", None, "remove: `try await child.dispatch(_:)`, or the parent's `dispatchSync`"),
 (r"^ModelType\.init\(\)$", None, "remove: stores are given their first model (`model:` has no default)"),
 (r"^(Transaction|Record)\.wasCancelled$", None, "remove: `error as? DispatchError` is `.cancelled`"),
 (r"^DispatchState\.result$", None, "remove: `if case .failed(let error) = state`"),

 (r"^Store\.dispatcher$", None, "remove: the app holds its dispatcher; an operation has `dispatcher`"),
 (r"^TestDispatcher\.exhaustivity$", None, "internal: passed to `init`"),
 (r"^TestDispatcher\.Exhaustivity", None, "remove: `TestDispatcher(exhaustive: false)`"),
 (r"^Session\.storeIdentifiers$", None, "remove: `records`' store identifiers; the app knows its stores"),
 (r"^SessionCodecs\.storeIdentifiers$", None, "internal"),
 (r"^ChangeBuffering", None, "remove: `changes(bufferingNewest: n)` / `transactions(bufferingNewest: n)` (1 by default)"),
 (r"^SessionDurability", None, "remove: `attach(appendingTo:codecs:syncEachRecord:)`"),
 (r"^ChangeOrigin", None, "remove: `Store.Change.isRestore`"),
 (r"^Store\.Change\.origin$", None, "rename: `isRestore`"),
 (r"^RecordedError\.init", None, "internal"),
 (r"^TestClock\.pendingCount$", None, "internal: `TestDispatcher.finish()` reports pending timers"),
 (r"^MainQueue\.default$", None, "remove: `Dispatcher()` picks it; choose `.libraryThread` or `.processMainThread` explicitly"),
 (r"^LoggerMiddleware\.(Sink|standardError)$", None, "internal: the closure type is spelled in `init(sink:)`, whose default writes to standard error"),

 (r"^Record\.(dispatchID|transactionID|storeIdentifier|action|error|wasCancelled|duration)$", None, "remove: `record.transaction.…` (a record is its transaction, its index and its model)"),
 (r"^RecorderError", None, "remove: folded into `SessionError` (`atStartOfHistory`, `atEndOfHistory`, `indexOutOfRange`, `storeUnavailable`)"),
 (r"^Dispatcher\.default$", None, "remove: make one `Dispatcher()` and pass it"),
 (r"^DispatchState\.isFinished$", None, "remove: `result != nil`"),
 (r"^ChildStore\.(parent|scope)$", None, "internal"),
 (r"^DispatchHandle\.(mode|cancellationID|result)$", None, "remove: the caller chose them; `try await value` for the result"),
 (r"^DispatchOptions\.(cancellationID|cancelsInFlight|throttle|debounce)$", None, "internal: options are made whole by `init`"),
 # Dispatching
 (r"Dispatcher\.dispatch\(storeIdentifier:action:mode:\)$", r"async", "rename: `dispatch(action:to:mode:) async throws(DispatchError)`"),
 (r"Dispatcher\.dispatch\(storeIdentifier:action:mode:\)$", None, "rename: `dispatch(action:to:mode:)` (fire and forget; the design's call)"),
 (r"Dispatcher\.dispatch\(storeIdentifier:action:mode:then:\)$", None, "remove: `start(action:to:mode:)` and the handle's `observe` (or `await dispatch`)"),
 (r"Dispatcher\.dispatch\(actions:mode:then:\)$", None, "remove: `await dispatch(actions:mode:)`, or a handle per action"),
 (r"Dispatcher\.Completion$", None, "remove: with the completion forms"),
 (r"Dispatcher\.dispatchReporting", None, "remove: the handle's `dispatchedActions`"),
 (r"^DispatchReport", None, "remove: the handle's `dispatchedActions`"),
 (r"Dispatcher\.dispatchSync\(storeIdentifier:action:\)$", None, "rename: `dispatchSync(action:to:)`"),
 (r"Dispatcher\.start\(", None, "rename: `start(action:to:mode:options:)`"),
 (r"Dispatcher\.store\(with:\)$", None, "remove: `store(with:as:)`; middleware get `any AnyStore` already"),
 (r"Dispatcher\.clock$", None, "internal: passed to `init`, read by the library only"),
 (r"Dispatcher\.mainQueue$", None, "internal: passed to `init`; `drain()` and `waitUntilDrained()` stay on the dispatcher"),
 (r"Dispatcher\.unregister\(identifier:\)$", None, "rename: `unregister(storeIdentifier:)`"),
 # Handles
 (r"DispatchHandle\.isCancelled$", None, "remove: `if case .cancelled = state`"),
 (r"DispatchHandle\.states$", None, "remove: `observe(_:)`, or `await value`"),
 # Cancellation ids
 (r"^CancellationID", None, "remove: `cancellationID: some Hashable & Sendable` (`\"search\"`, an enum case)"),
 # Stores
 (r"Store\.register\(observer:delivery:onChange:\)$", None, "remove: `observe(delivery:onChange:)`, whose token the observer keeps"),
 (r"Store\.unregister\(observer:\)$", None, "remove: cancel or release the token"),
 (r"Store\.observe\(delivery:onChange:\)$", r"ChangeOrigin", "remove: `observe(delivery:onChange:)` with one `Store.Change` argument (model, action, origin)"),
 (r"Store\.observe\(delivery:onChange:\)$", None, "keep: its closure takes one `Store.Change`, as `changes()` yields"),
 (r"Store\.observerCount$", None, "internal: a test hook"),
 (r"Store\.updateModel", None, "remove: `operation.updateModel { }` (announced at once); one name, one meaning"),
 (r"Store\.reducer$", None, "internal"),
 (r"Store\.(actionType|modelType)$", None, "internal: the recorder's type checks"),
 (r"AnyStore\.(actionType|modelType)$", None, "internal: moved to an internal protocol"),
 # Operations
 (r"ActionOperation\.addDependency", None, "remove: `waitFor` orders stores; `DispatchOptions(after:)` orders dispatches"),
 (r"ActionOperation\.isFinished$", None, "internal"),
 (r"ActionOperation\.store$", None, "remove: `updateModel` and `model(of:as:)` on the operation"),
 (r"ActionOperation\.Block$", None, "remove: the closure type is spelled in the initialiser"),
 (r"^OperationContext", None, "remove: closure stores receive the `ActionOperation` itself (update, effect, follow-ups, `model(of:as:)`)"),
 # Errors folded into DispatchError
 (r"^ActionOperationError", None, "remove: `DispatchError.releasedWithoutFinishing(storeIdentifier:)` / `.waitTargetFailed`"),
 (r"^ReducerError", None, "remove: `DispatchError.reducerNotImplemented(storeIdentifier:)`"),
 (r"^ScopeError", None, "remove: `DispatchError.scopeUnavailable(storeIdentifier:scope:)`, already there"),
 (r"^RecordedEffectFailure", None, "remove: `RecordedError` (with `effectKey`)"),
 (r"^OperationFailure\.init", None, "internal: made by the library"),
 (r"^FieldDifference\.init", None, "internal: made by the library"),
 (r"^Record\.init", None, "internal: made by the recorder"),
 (r"^Record\.(timestamp|succeeded)$", None, "remove: `transactionID.date`, `error == nil`"),
 (r"^Transaction\.(isFinished|succeeded)$", None, "remove: `didDispatch` is the finished call; `error == nil`"),
 # Transaction ids
 (r"^TransactionID\.(\.\.\.|\.\.<|<|<=|>|>=)", None, "remove: `Comparable`; `rawValue` orders them"),
 (r"^TransactionID\.next\(\)$", None, "internal"),
 (r"^TransactionID\.init\(from:\)$", None, "remove: `Codable` (the session format encodes `rawValue`)"),
 (r"^TransactionID\.init\(rawValue:\)$", None, "internal"),
 # Middleware
 (r"\.needsDuration$", None, "remove: a cost knob; every transaction a middleware sees has its duration"),
 # Interceptors
 (r"^InterceptionDecision", None, "remove: `.later { decide in decide(.proceed) }`, a closure"),
 # Main queue and threads
 (r"^MainRunLoopThread", None, "remove: `MainQueue.libraryThread` (`schedule`, `isCurrent`)"),
 (r"^MainQueue\.runLoopThread\(_:\)$", None, "rename: `thread(named:idlePolling:)`"),
 (r"^MainQueue\.(drain\(\)|waitUntilDrained\(\))$", None, "remove: `Dispatcher.drain()`, `waitUntilDrained()`"),
 (r"^MainQueue\.drainPassLimit$", None, "internal: documented as a number"),
 (r"^SystemDispatchClock", None, "internal: the default clock; tests pass a `TestClock`"),
 # Recording
 (r"^RecorderMiddleware\.currentRecord$", None, "remove: `records.last { $0.index <= cursor }`"),
 (r"^RecorderMiddleware\.maxNumberOfRecords$", None, "internal: passed to `init`"),
 (r"^Session\.(codecs|snapshotIndices|formatVersion)$", None, "internal"),
 (r"^CombinedReducer\.(reduce|waitList|parts)", None, "internal: `CombinedReducer` becomes a function returning a `SynchronousReducer`"),
 (r"^CombinedReducer$", None, "rename: `SynchronousReducer.combine(_:waitFor:)`"),
 (r"^CombinedReducer\.init", None, "remove: with the class"),
 (r"^ReducerPart\.scope\(_:action:reducer:\)$", None, "remove: `.scope(_:action:reduce:)` with the reducer's `reduce`"),
]
ADDED = [
 ("DispatchHandle.dispatchedActions", "the actions that reached the stores after interceptors (replaces `dispatchReporting`)"),
 ("ActionOperation.model(of:as:)", "a waited-for store's model (was `OperationContext.model(of:as:)`)"),
 ("DispatchError.releasedWithoutFinishing(storeIdentifier:)", "was `ActionOperationError`"),
 ("DispatchError.waitTargetFailed(storeIdentifier:target:)", "point 3: a store whose wait target failed does not start"),
 ("DispatchError.reducerNotImplemented(storeIdentifier:)", "was `ReducerError`"),
 ("DispatchError.rolledBack(storeIdentifiers:)", "point 3: the all-or-nothing option"),
 ("RecordedError.effectKey", "was `RecordedEffectFailure.key`"),
 ("Record.transaction", "the record's transaction (its fields were repeated on `Record`)"),
 ("SessionError: 4 cases from RecorderError", ""),
 ("(a case moved)", ""),
 ("(a case moved)", ""),
 ("(a case moved)", ""),
 ("ActionOperation.model", "the operation's own store's model (was `OperationContext.model`)"),
 ("TestDispatcher.timeLimit", "added after the inventory (point 4)"),
 ("WaitList", "`waitFor: [\"a\"]` or `.perAction { }`, for closure stores and reducers alike"),
 ("WaitList.init(arrayLiteral:)", ""),
 ("WaitList.perAction(_:)", ""),
 ("SynchronousReducer.combine(_:waitFor:)", "was `CombinedReducer.init`"),
 ("TestDispatcher.send(_:fails:)", "point 4: a send expected to fail, changing nothing"),
]
def decide(path, sub, kind=''):
    if path.startswith('Middleware.') and path.endswith('Dispatch(transaction:action:in:)') and kind=='default':
        return 'remove: a middleware implements both calls (an empty body where it has nothing to do)'
    for rx, srx, d in R:
        if re.search(rx, path) and (srx is None or re.search(srx, sub)):
            return d
    return "keep"
rows=[]
for f in sys.argv[1:]:
    d=json.load(open(f))
    for x in d['symbols']:
        if x['accessLevel'] not in ('public','open'): continue
        path='.'.join(x['pathComponents'])
        sub=''.join(p['spelling'] for p in x['names'].get('subHeading',[]))
        cons=[c['lhs']+': '+c['rhs'] for c in x.get('swiftGenerics',{}).get('constraints',[])]
        if cons: sub += ' where ' + ', '.join(cons)
        syn='SYNTHESIZED' in x['identifier']['precise']
        kind='default' if x.get('location') is None and False else ''
        if path.startswith('Middleware.') and not x['kind']['identifier'].endswith('.protocol') and any(m.get('source')==x['identifier']['precise'] and m['kind']=='defaultImplementationOf' for m in d['relationships']): kind='default'
        rows.append((path, sub, syn, decide(path, sub, kind)))
rows.sort()
kept=sum(1 for r in rows if r[3].startswith(('keep','rename')))
summary=f"before: {len(rows)}; kept or renamed: {kept}; added: {len(ADDED)}; after: {kept+len(ADDED)}"
print(summary, file=sys.stderr)
print(f"**{summary}**\n")
print("| Declaration | Synthesized | Decision |\n|---|---|---|")
for p,s,syn,dd in rows:
    s=s.replace('|','\\|')
    print(f"| `{s}` ({p}) | {'yes' if syn else ''} | {dd} |")
print("\n**Added**\n\n| Declaration | Job |\n|---|---|")
for a,j in ADDED: print(f"| `{a}` | {j} |")
