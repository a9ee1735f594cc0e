/// The event topics of docs/protocol.md ("Events"): the first frame of every event a service
/// publishes, which subscribers filter on by prefix; the second is the event message of
/// events.proto.
public enum EventTopic {
    public static let itemCreated = "item.created"
    public static let itemUpdated = "item.updated"
    public static let itemDeleted = "item.deleted"
    public static let imageStored = "image.stored"
    public static let imageDeleted = "image.deleted"
    public static let jobDone = "job.done"
    public static let jobDead = "job.dead"
    public static let locationCreated = "location.created"
    public static let locationUpdated = "location.updated"
    public static let locationDeleted = "location.deleted"
    public static let categoryCreated = "category.created"
    public static let categoryUpdated = "category.updated"
    public static let categoryDeleted = "category.deleted"
    public static let policyUpdated = "policy.updated"
}
