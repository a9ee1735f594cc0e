import SQLite

/// items.db's schema: the SQL migrations, one per version (`PRAGMA user_version`). Version 5 is
/// Swift, not SQL (`moveOutboxIntoJobs`); `laterMigrator` holds those after it.
extension ItemStore {
    /// The schema, one migration per version (`PRAGMA user_version`).
    static let migrator = Migrator([
        (1, """
            CREATE TABLE items (
                id INTEGER PRIMARY KEY,
                key TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                serial_number TEXT NOT NULL,
                value_in_dollars INTEGER NOT NULL,
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL,
                version INTEGER NOT NULL,
                position INTEGER NOT NULL,
                photo_keys TEXT NOT NULL DEFAULT '',
                primary_photo_key TEXT NOT NULL DEFAULT ''
            );
            CREATE INDEX items_by_position ON items(position, id);
            CREATE INDEX items_by_name ON items(name COLLATE NOCASE, id);
            CREATE INDEX items_by_value ON items(value_in_dollars, id);
            CREATE INDEX items_by_created ON items(created_at_ms, id);
            -- Keys of deleted items: a late retry of a create must not bring an item back.
            CREATE TABLE deleted_items (
                key TEXT PRIMARY KEY,
                deleted_at_ms INTEGER NOT NULL
            ) WITHOUT ROWID;
            -- The delete cascade's outbox until version 5, which moves its rows into the
            -- cascade job queue and drops it (moveOutboxIntoJobs).
            CREATE TABLE cascade_outbox (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                owner_key TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                last_error TEXT NOT NULL DEFAULT ''
            );
            """),
        // Substring search of name and serial through a trigram index, kept by triggers.
        (2, """
            CREATE VIRTUAL TABLE items_search USING fts5(
                name, serial_number, content='items', content_rowid='id', tokenize='trigram'
            );
            INSERT INTO items_search(items_search) VALUES ('rebuild');
            CREATE TRIGGER items_search_insert AFTER INSERT ON items BEGIN
                INSERT INTO items_search(rowid, name, serial_number) VALUES (new.id, new.name, new.serial_number);
            END;
            CREATE TRIGGER items_search_delete AFTER DELETE ON items BEGIN
                INSERT INTO items_search(items_search, rowid, name, serial_number)
                VALUES ('delete', old.id, old.name, old.serial_number);
            END;
            CREATE TRIGGER items_search_update AFTER UPDATE OF name, serial_number ON items BEGIN
                INSERT INTO items_search(items_search, rowid, name, serial_number)
                VALUES ('delete', old.id, old.name, old.serial_number);
                INSERT INTO items_search(rowid, name, serial_number) VALUES (new.id, new.name, new.serial_number);
            END;
            """),
        // Cascade rows are tried in the order they fall due: none waits behind failing ones.
        (3, """
            ALTER TABLE cascade_outbox ADD COLUMN next_attempt_at_ms INTEGER NOT NULL DEFAULT 0;
            CREATE INDEX cascade_outbox_due ON cascade_outbox(next_attempt_at_ms, id);
            """),
        // The photos a cascade deletes besides the owner's; which items hold which photo, so a
        // delete finds the photos no other item holds without reading every item; and photos
        // deleted with their item, which AttachPhoto refuses from then on.
        (4, """
            ALTER TABLE cascade_outbox ADD COLUMN attached_keys TEXT NOT NULL DEFAULT '';
            CREATE TABLE item_photos (
                image_key TEXT NOT NULL,
                item_id INTEGER NOT NULL,
                PRIMARY KEY (image_key, item_id)
            ) WITHOUT ROWID;
            CREATE INDEX item_photos_by_item ON item_photos(item_id);
            CREATE TRIGGER item_photos_delete AFTER DELETE ON items BEGIN
                DELETE FROM item_photos WHERE item_id = old.id;
            END;
            INSERT OR IGNORE INTO item_photos (image_key, item_id)
            WITH RECURSIVE split(item_id, rest, key) AS (
                SELECT id, photo_keys || ' ', '' FROM items WHERE photo_keys != ''
                UNION ALL
                SELECT item_id, substr(rest, instr(rest, ' ') + 1), substr(rest, 1, instr(rest, ' ') - 1)
                FROM split WHERE rest != ''
            )
            SELECT key, item_id FROM split WHERE key != '';
            CREATE TABLE cascaded_photos (
                image_key TEXT PRIMARY KEY,
                item_key TEXT NOT NULL,
                deleted_at_ms INTEGER NOT NULL
            ) WITHOUT ROWID;
            """),
    ])

    /// The migrations after version 5 (which moved the outbox into the job queue, in Swift: a
    /// job's payload is a protobuf message).
    static let laterMigrator = Migrator([
        // The SHA-256 of each attached photo, as the image service said when it was attached:
        // an attach of the same content to the same item attaches nothing (decided in its
        // transaction). Photos attached before this version have none ('').
        (6, "ALTER TABLE item_photos ADD COLUMN checksum TEXT NOT NULL DEFAULT ''"),
        // What a claim asks for (docs/protocol.md §10, "Claim fields"): locations, categories, the policy, an
        // item's claim fields, each photo's role; the evidence an item has as bits
        // (`ItemEvidence`), kept by every write that changes it; the words full-text search
        // finds (`items_text`, kept by the store: a location's path is part of it).
        (7, """
            CREATE TABLE locations (
                id INTEGER PRIMARY KEY,
                key TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                parent_key TEXT NOT NULL DEFAULT '',
                kind INTEGER NOT NULL DEFAULT 0,
                notes TEXT NOT NULL DEFAULT '',
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL,
                version INTEGER NOT NULL
            );
            CREATE UNIQUE INDEX locations_by_parent ON locations(parent_key, name COLLATE NOCASE);
            CREATE TABLE deleted_locations (
                key TEXT PRIMARY KEY,
                deleted_at_ms INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE categories (
                id INTEGER PRIMARY KEY,
                key TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL UNIQUE COLLATE NOCASE,
                depreciation INTEGER NOT NULL DEFAULT 0,
                useful_life_years INTEGER NOT NULL DEFAULT 0,
                floor_percent INTEGER NOT NULL DEFAULT 0,
                limit_currency TEXT NOT NULL DEFAULT '',
                limit_minor INTEGER NOT NULL DEFAULT 0,
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL,
                version INTEGER NOT NULL
            );
            CREATE TABLE deleted_categories (
                key TEXT PRIMARY KEY,
                deleted_at_ms INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE policy (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                currency TEXT NOT NULL DEFAULT 'USD',
                contents_limit_currency TEXT NOT NULL DEFAULT '',
                contents_limit_minor INTEGER NOT NULL DEFAULT 0,
                warn_at_percent INTEGER NOT NULL DEFAULT 0,
                policyholder TEXT NOT NULL DEFAULT '',
                insurer TEXT NOT NULL DEFAULT '',
                policy_number TEXT NOT NULL DEFAULT '',
                address TEXT NOT NULL DEFAULT '',
                updated_at_ms INTEGER NOT NULL DEFAULT 0,
                version INTEGER NOT NULL DEFAULT 0
            );
            ALTER TABLE items ADD COLUMN location_key TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN quantity INTEGER NOT NULL DEFAULT 1;
            ALTER TABLE items ADD COLUMN brand TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN model TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN notes TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN purchase_date TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN purchase_currency TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN purchase_minor INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE items ADD COLUMN purchase_place TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN replacement_currency TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN replacement_minor INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE items ADD COLUMN replacement_source TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN replacement_as_of TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN warranty_expires TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN tags TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN category_key TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN custom_fields TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN photo_roles TEXT NOT NULL DEFAULT '';
            ALTER TABLE items ADD COLUMN evidence INTEGER NOT NULL DEFAULT 0;
            UPDATE items SET evidence =
                (CASE WHEN photo_keys != '' THEN 1 ELSE 0 END)
                | (CASE WHEN serial_number != '' THEN 4 ELSE 0 END)
                | (CASE WHEN value_in_dollars > 0 THEN 8 ELSE 0 END);
            CREATE INDEX items_by_location ON items(location_key, id);
            CREATE INDEX items_by_category ON items(category_key, id);
            CREATE TABLE item_tags (
                tag TEXT NOT NULL COLLATE NOCASE,
                item_id INTEGER NOT NULL,
                PRIMARY KEY (tag, item_id)
            ) WITHOUT ROWID;
            CREATE INDEX item_tags_by_item ON item_tags(item_id);
            CREATE TRIGGER item_tags_delete AFTER DELETE ON items BEGIN
                DELETE FROM item_tags WHERE item_id = old.id;
            END;
            CREATE VIRTUAL TABLE items_text USING fts5(
                name, brand, model, serial_number, notes, tags, location,
                tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3'
            );
            INSERT INTO items_text (rowid, name, brand, model, serial_number, notes, tags, location)
                SELECT id, name, '', '', serial_number, '', '', '' FROM items;
            CREATE TRIGGER items_text_delete AFTER DELETE ON items BEGIN
                DELETE FROM items_text WHERE rowid = old.id;
            END;
            """),
        // The tamper-evident history (HistoryChain). The mark makes the first open by this
        // build record what the file holds (recordUpgradeIfPending), in one transaction with
        // removing the mark: a process killed in between records it at the next open.
        (8, """
            CREATE TABLE history (
                seq INTEGER PRIMARY KEY,
                at_ms INTEGER NOT NULL,
                subject_key TEXT NOT NULL,
                entry BLOB NOT NULL,
                hash TEXT NOT NULL
            );
            CREATE INDEX history_by_subject ON history(subject_key, seq);
            CREATE TABLE history_pending (what TEXT PRIMARY KEY) WITHOUT ROWID;
            INSERT INTO history_pending (what) VALUES ('upgrade');
            """),
    ])
}
