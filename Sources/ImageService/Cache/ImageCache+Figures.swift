import Proto
import RPC

extension ImageCache {
    /// The cache's figures for Metrics/Stats and the scrape endpoint (what CacheStats answers).
    public func figures() -> [Figure] {
        let stats = statistics
        var figures = [
            Figure("homepwner_cache_entries", "Blobs and renditions held in memory.", value: Double(stats.entries)),
            Figure("homepwner_cache_bytes", "Bytes the cache holds.", value: Double(stats.bytes)),
            Figure("homepwner_cache_budget_bytes", "The cache's budget now (it yields to memory pressure).", value: Double(stats.budgetBytes)),
            Figure("homepwner_cache_hits_total", "Lookups answered from memory.", .counter, value: Double(stats.hits)),
            Figure("homepwner_cache_misses_total", "Lookups that went to disk.", .counter, value: Double(stats.misses)),
            Figure("homepwner_cache_evictions_total", "Entries dropped to stay within the budget.", .counter, value: Double(stats.evictions)),
            Figure("homepwner_memory_pressure", "The memory-pressure level in force (0 none, 1 warning, 2 critical).",
                   value: Double(stats.level.rawValue)),
        ]
        for (reason, count) in stats.purges.sorted(by: { $0.key < $1.key }) {
            figures.append(Figure("homepwner_cache_purges_total", "Cache purges, by level or source.", .counter,
                                  labels: ["reason": reason], value: Double(count)))
        }
        return figures
    }
}
