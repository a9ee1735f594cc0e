/// The event topics of PROTOCOL.md.
public enum EventTopic {
    public static let itemCreated = "item.created"
    public static let itemUpdated = "item.updated"
    public static let itemDeleted = "item.deleted"
    public static let imageStored = "image.stored"
    public static let imageDeleted = "image.deleted"
    public static let jobDone = "job.done"
    public static let jobDead = "job.dead"
}
