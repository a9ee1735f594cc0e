/// A least-recently-used map from keys to byte arrays, counted in bytes; not thread-safe
/// (`ImageCache` keeps it in a `Locked`).
///
/// An entry may carry the index row of the image whose whole bytes it holds; such entries can
/// also be found by the image key alone (`image(_:)`), which is how a cached GetImage is served
/// without asking SQLite.
struct LRUCache {
    private struct Slot {
        var key: String
        var value: [UInt8]
        var image: StoredImage?
        /// The image's `ImageInfo` encoded once, for the replies that carry it.
        var encodedInfo: [UInt8]
        var previous: Int
        var next: Int
    }

    /// Bookkeeping per entry, added to its bytes so many tiny entries still count.
    static let entryOverhead = 64

    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    private var index: [String: Int] = [:]
    /// Image key → slot, for entries that carry their image's row.
    private var byImage: [String: Int] = [:]
    /// Most recently used, or -1.
    private var head = -1
    /// Least recently used, or -1.
    private var tail = -1
    /// The cost of every entry.
    private(set) var bytes = 0

    var count: Int { index.count }

    static func cost(key: String, value: [UInt8]) -> Int { value.count + key.utf8.count + entryOverhead }

    /// The value, now the most recently used.
    mutating func get(_ key: String) -> [UInt8]? {
        guard let slot = index[key] else { return nil }
        moveToFront(slot)
        return slots[slot].value
    }

    /// The row and whole bytes of the image `imageKey`, now the most recently used.
    mutating func image(_ imageKey: String) -> (image: StoredImage, encodedInfo: [UInt8], bytes: [UInt8])? {
        guard let slot = byImage[imageKey], let image = slots[slot].image else { return nil }
        moveToFront(slot)
        return (image, slots[slot].encodedInfo, slots[slot].value)
    }

    func contains(_ key: String) -> Bool { index[key] != nil }

    /// Adds or replaces an entry as the most recently used, then evicts down to `budget`; returns
    /// evictions. With `image`, the entry holds that image's whole bytes and replaces any entry
    /// found under the same image key.
    @discardableResult
    mutating func insert(_ key: String, _ value: [UInt8], image: StoredImage? = nil, budget: Int) -> Int {
        remove(key)
        if let image, let previous = byImage[image.info.key] { remove(slots[previous].key) }
        let slot: Int
        let entry = Slot(
            key: key, value: value, image: image, encodedInfo: image?.info.serializedBytes() ?? [], previous: -1, next: head)
        if let reused = freeSlots.popLast() {
            slots[reused] = entry
            slot = reused
        } else {
            slots.append(entry)
            slot = slots.count - 1
        }
        if head >= 0 { slots[head].previous = slot }
        head = slot
        if tail < 0 { tail = slot }
        index[key] = slot
        if let image { byImage[image.info.key] = slot }
        bytes += Self.cost(key: key, value: value) + entry.encodedInfo.count
        return trim(to: budget).evicted
    }

    /// Removes one entry; returns its cost (0 when absent).
    @discardableResult
    mutating func remove(_ key: String) -> Int {
        guard let slot = index.removeValue(forKey: key) else { return 0 }
        unlink(slot)
        let cost = Self.cost(key: slots[slot].key, value: slots[slot].value) + slots[slot].encodedInfo.count
        bytes -= cost
        if let image = slots[slot].image, byImage[image.info.key] == slot { byImage[image.info.key] = nil }
        slots[slot].image = nil
        slots[slot].encodedInfo = []
        slots[slot].value = []
        slots[slot].key = ""
        freeSlots.append(slot)
        return cost
    }

    /// Every key for which `matches` holds.
    func keys(where matches: (String) -> Bool) -> [String] { index.keys.filter(matches) }

    /// Evicts least recently used entries until at most `limit` bytes remain.
    @discardableResult
    mutating func trim(to limit: Int) -> (evicted: Int, freed: Int) {
        var evicted = 0, freed = 0
        while bytes > limit, tail >= 0 {
            freed += remove(slots[tail].key)
            evicted += 1
        }
        if index.isEmpty {
            // Give the slot array's memory back too.
            slots = []
            freeSlots = []
            byImage = [:]
        }
        return (evicted, freed)
    }

    private mutating func unlink(_ slot: Int) {
        let previous = slots[slot].previous, next = slots[slot].next
        if previous >= 0 { slots[previous].next = next } else { head = next }
        if next >= 0 { slots[next].previous = previous } else { tail = previous }
        slots[slot].previous = -1
        slots[slot].next = -1
    }

    private mutating func moveToFront(_ slot: Int) {
        guard head != slot else { return }
        unlink(slot)
        slots[slot].next = head
        if head >= 0 { slots[head].previous = slot }
        head = slot
        if tail < 0 { tail = slot }
    }
}
