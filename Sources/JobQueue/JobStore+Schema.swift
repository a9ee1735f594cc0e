import SQLite

extension JobStore {
    /// The schema version this build writes, kept in `job_queue_schema` (not the host's
    /// user_version, which the host's own `Migrator` owns).
    public static var schemaVersion: Int { migrations.last!.version }

    /// Creates or updates the queue's tables in `db`, whatever else the database holds; call
    /// once when the host opens its database, outside a transaction, before ``init(db:queues:random:)``.
    ///
    /// Each step and its version commit together; a database newer than this build is refused.
    public static func migrate(_ db: Database) throws {
        try db.inTransaction(.immediate) {
            try db.execute("CREATE TABLE IF NOT EXISTS job_queue_schema (version INTEGER NOT NULL)")
            let version = Int(try db.scalar("SELECT max(version) FROM job_queue_schema")?.int64Value ?? 0)
            guard version <= schemaVersion else {
                throw JobStoreError.invalidArgument(
                    "\(db.path) has job queue schema version \(version), newer than this build's \(schemaVersion)")
            }
            for migration in migrations where migration.version > version {
                try db.execute(migration.sql)
                try db.execute("DELETE FROM job_queue_schema")
                try db.execute("INSERT INTO job_queue_schema (version) VALUES (?)", [.integer(Int64(migration.version))])
            }
        }
    }

    /// States as stored: `JobState`'s wire values, written as literals in the queries so that
    /// SQLite can use the partial index of each state (a bound parameter would not match it).
    static let migrations: [(version: Int, sql: String)] = [
        (1, """
        CREATE TABLE IF NOT EXISTS jobs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            queue TEXT NOT NULL,
            state INTEGER NOT NULL CHECK (state BETWEEN 1 AND 4),
            payload BLOB NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            max_attempts INTEGER NOT NULL,
            run_at_ms INTEGER NOT NULL,
            lease_id TEXT NOT NULL DEFAULT '',
            lease_expires_at_ms INTEGER NOT NULL DEFAULT 0,
            worker_id TEXT NOT NULL DEFAULT '',
            last_error TEXT NOT NULL DEFAULT '',
            dedupe_key TEXT,
            batch_id INTEGER,
            result BLOB,
            created_at_ms INTEGER NOT NULL,
            updated_at_ms INTEGER NOT NULL,
            finished_at_ms INTEGER
        );
        -- One pending job per key; a DONE or DEAD one does not stop a new one.
        CREATE UNIQUE INDEX IF NOT EXISTS jobs_pending_key ON jobs (queue, dedupe_key)
            WHERE state IN (1, 2) AND dedupe_key IS NOT NULL;
        -- One partial index per state: Lease reads only QUEUED rows, the sweeper only RUNNING
        -- ones and the pruner only DONE ones, however many DONE rows the table holds.
        CREATE INDEX IF NOT EXISTS jobs_ready ON jobs (queue, run_at_ms, id) WHERE state = 1;
        CREATE INDEX IF NOT EXISTS jobs_leased ON jobs (queue, lease_expires_at_ms) WHERE state = 2;
        CREATE INDEX IF NOT EXISTS jobs_done ON jobs (queue, finished_at_ms) WHERE state = 3;
        CREATE INDEX IF NOT EXISTS jobs_dead ON jobs (queue, id) WHERE state = 4;
        CREATE TABLE IF NOT EXISTS job_errors (
            id INTEGER PRIMARY KEY,
            job_id INTEGER NOT NULL,
            attempt INTEGER NOT NULL,
            at_ms INTEGER NOT NULL,
            worker_id TEXT NOT NULL,
            message TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS job_errors_by_job ON job_errors (job_id, id);
        CREATE TABLE IF NOT EXISTS job_batches (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            queue TEXT NOT NULL,
            total INTEGER NOT NULL DEFAULT 0,
            done INTEGER NOT NULL DEFAULT 0,
            dead INTEGER NOT NULL DEFAULT 0,
            created_at_ms INTEGER NOT NULL,
            finished_at_ms INTEGER
        );
        CREATE TABLE IF NOT EXISTS job_queues (queue TEXT PRIMARY KEY, paused INTEGER NOT NULL) WITHOUT ROWID;
        -- Jobs per queue and state, kept by triggers: Stats counts a million DONE rows in O(1).
        CREATE TABLE IF NOT EXISTS job_counts (
            queue TEXT NOT NULL, state INTEGER NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (queue, state)
        ) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS jobs_count_insert AFTER INSERT ON jobs BEGIN
            INSERT INTO job_counts (queue, state, count) VALUES (new.queue, new.state, 1)
                ON CONFLICT (queue, state) DO UPDATE SET count = count + 1;
        END;
        CREATE TRIGGER IF NOT EXISTS jobs_count_update AFTER UPDATE OF state ON jobs WHEN old.state <> new.state BEGIN
            UPDATE job_counts SET count = count - 1 WHERE queue = old.queue AND state = old.state;
            INSERT INTO job_counts (queue, state, count) VALUES (new.queue, new.state, 1)
                ON CONFLICT (queue, state) DO UPDATE SET count = count + 1;
        END;
        CREATE TRIGGER IF NOT EXISTS jobs_count_delete AFTER DELETE ON jobs BEGIN
            UPDATE job_counts SET count = count - 1 WHERE queue = old.queue AND state = old.state;
        END;
        """),
        // ListJobs pages through one state newest first: without this index it sorted every job
        // of the state (a million DONE ones) for each page.
        (2, """
        CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (queue, state, id);
        """),
        // Retention of DEAD jobs and finished batches, oldest first; payload_trimmed marks a job
        // whose payload lost what only a run needs (a capture's inline bytes): it never runs again.
        (3, """
        ALTER TABLE jobs ADD COLUMN payload_trimmed INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX IF NOT EXISTS jobs_dead_finished ON jobs (queue, finished_at_ms) WHERE state = 4;
        CREATE INDEX IF NOT EXISTS job_batches_finished ON job_batches (queue, finished_at_ms) WHERE finished_at_ms IS NOT NULL;
        """),
    ]
}
