/// A session's verify, as the dispatcher it re-runs the session on sees it (``ReplayHook``): the follow-ups its
/// operations dispatch are matched to the session's records and absorbed, and its operations' effects are read
/// from the session (`ActionOperation.effect(_:_:)`).
final class SessionReplay: ReplayHook {
  let followUps: FollowUpMatcher
  let playback: EffectPlayback

  init(followUps: FollowUpMatcher, playback: EffectPlayback) {
    self.followUps = followUps
    self.playback = playback
  }

  func absorbs(_ action: any ActionType, storeIdentifier: String?, checked: Bool) -> Bool {
    if checked { followUps.match(action, storeIdentifier: storeIdentifier) }
    return true
  }
}
