extension ActionType {
  /// The type a dispatched action is routed by: the type it was dispatched as, read from its existential box.
  ///
  /// Stores cast the action to exactly this type. `type(of:)` on an existential asks the runtime for the dynamic
  /// type instead (proposal 0006 has the measurements), and differs only for a class instance dispatched as its
  /// superclass.
  var routingType: ObjectIdentifier { ObjectIdentifier(Self.self) }
}
