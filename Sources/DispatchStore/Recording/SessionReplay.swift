/// A session's verify, as the dispatcher it re-runs the session on sees it (``ReplayHook``): the follow-ups its
/// operations dispatch are matched to the session's records and absorbed, and its operations' effects are read
/// from the session (`ActionOperation.effect(_:_:)`), and so are the models they read of other stores
/// (`ActionOperation.model(of:as:)`).
final class SessionReplay: ReplayHook {
  let followUps: FollowUpMatcher
  let playback: EffectPlayback
  let reads: ReadPlayback

  init(followUps: FollowUpMatcher, playback: EffectPlayback, reads: ReadPlayback) {
    self.followUps = followUps
    self.playback = playback
    self.reads = reads
  }

  func recordedModel(of storeIdentifier: String) -> (any ModelType)? {
    reads.recordedModel(of: storeIdentifier)
  }

  func absorbs(_ action: any ActionType, storeIdentifier: String?, checked: Bool) -> Bool {
    if checked { followUps.match(action, storeIdentifier: storeIdentifier) }
    return true
  }
}
