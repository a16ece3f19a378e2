#if Queue  // the package's Queue trait: swift build --traits Queue
/// The roles a queue can be used through, and the privileges each needs:
/// `xcallback queue init QUEUE --print-grants` prints this for the owner
/// (who ran `init`) to run, and docs/queue.md explains it. One place, so
/// the documented grants and the tested ones cannot drift apart.
///
/// Roles are the cluster's, not a database's: each queue's are named after
/// its database and its schema (`jobs.xcallback.host`), so a role of one
/// queue is granted nothing in any other, in this database or another.
/// (Before, they were named after the schema alone, and a login in
/// `xcallback_host` for a queue in one database used every `xcallback`
/// queue of the server.)
///
/// - `DB.SCHEMA.host` claims, heartbeats, records, returns and rescues
///   requests, all through the queue's functions (QueueFunctions), which
///   act only for hosts its login registered; it writes no table itself.
///   It reads every table. It does not prune.
/// - `DB.SCHEMA.enqueue` adds requests and keys through `enqueue`, which
///   draws the ids and checks the lines; it reads only the schema's version.
/// - `DB.SCHEMA.reader` reads: `outcomes`, `queue status`, `queue dead`.
public enum QueueGrants {
    /// The three group roles' names for the queue at `location`.
    public static func roles(for location: QueueLocation) -> (host: String, enqueue: String, reader: String) {
        let prefix = "\(location.database).\(location.schema)."
        return (prefix + "host", prefix + "enqueue", prefix + "reader")
    }

    /// PostgreSQL's longest identifier, in bytes: longer names are cut.
    static let maxIdentifierBytes = 63

    /// The functions each role executes (QueueSchema, QueueFunctions).
    static let hostFunctions = [
        "register_host(text, float8)", "heartbeat(int8, float8)", "claim(int8, int4, float8)",
        "claim_beside(int8, int4, float8)", "claim_suspect(int8, float8)", "release(int8[], int4[], int8[])", "unregister_host(int8)", "rescue()",
        "record_outcomes(int8[], int4[], int8[], text[], text[], text[], text)",
        "record_dead(int8[], text[], text[], text[], text)",
    ]
    static let enqueueFunctions = ["enqueue(text[], text[], int4)"]

    /// SQL that creates the group roles (those missing) and grants them
    /// exactly what they need, revoking anything granted before, to them
    /// and to the roles of earlier versions (`SCHEMA_host` …), all in one
    /// transaction. It refuses to run in another database than the queue's.
    public static func sql(for location: QueueLocation) throws(QueueError) -> String {
        let s = location.schema
        let (host, enqueue, reader) = roles(for: location)
        if let long = [host, enqueue, reader].first(where: { $0.utf8.count > maxIdentifierBytes }) {
            throw QueueError("the queue's role names would be longer than PostgreSQL's \(maxIdentifierBytes) bytes (\(long)): use a shorter database or schema name")
        }
        let (h, e, r) = (identifier(host), identifier(enqueue), identifier(reader))
        let all = "\(h), \(e), \(r)"
        let old = [s + "_host", s + "_enqueue", s + "_reader"]
        func create(_ role: String) -> String {
            "IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = \(literal(role))) THEN CREATE ROLE \(identifier(role)) NOLOGIN; END IF;"
        }
        return """
            -- Roles for the xcallback queue in database \(location.database), schema \(s).
            -- Run as the queue's owner (the role that ran `xcallback queue init`), which
            -- needs CREATEROLE, in that database, with psql -v ON_ERROR_STOP=1 (docs/queue.md);
            -- then give each login its role, for example
            --   CREATE ROLE worker1 LOGIN PASSWORD '…' IN ROLE \(h);
            BEGIN;
            DO $grants$ BEGIN
                IF current_database() <> \(literal(location.database)) THEN
                    RAISE EXCEPTION 'these grants are for the queue in database %, and this is database %',
                        \(literal(location.database)), current_database();
                END IF;
                \(create(host))
                \(create(enqueue))
                \(create(reader))
            END $grants$;
            REVOKE ALL ON ALL TABLES IN SCHEMA \(s) FROM \(all);
            REVOKE ALL ON ALL SEQUENCES IN SCHEMA \(s) FROM \(all);
            REVOKE ALL ON ALL FUNCTIONS IN SCHEMA \(s) FROM \(all);
            -- Roles named after the schema alone (before schema version 4), which every
            -- database's queue of that schema shared: they lose what they had here.
            DO $grants$ DECLARE old text; BEGIN
                FOREACH old IN ARRAY ARRAY[\(old.map(literal).joined(separator: ", "))] LOOP
                    IF EXISTS (SELECT FROM pg_roles WHERE rolname = old) THEN
                        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM %I', \(literal(s)), old);
                        EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %I FROM %I', \(literal(s)), old);
                        EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA %I FROM %I', \(literal(s)), old);
                        EXECUTE format('REVOKE ALL ON SCHEMA %I FROM %I', \(literal(s)), old);
                    END IF;
                END LOOP;
            END $grants$;
            GRANT USAGE ON SCHEMA \(s) TO \(all);
            -- Readers: outcomes, status, dead requests.
            GRANT SELECT ON ALL TABLES IN SCHEMA \(s) TO \(r);
            -- Enqueuers: the schema's version, and new requests through enqueue().
            GRANT SELECT ON \(s).schema_migrations TO \(e);
            GRANT EXECUTE ON FUNCTION \(enqueueFunctions.map { "\(s).\($0)" }.joined(separator: ", ")) TO \(e);
            -- Hosts: read everything; write only through the functions, which act
            -- only for the hosts the calling login registered.
            GRANT SELECT ON ALL TABLES IN SCHEMA \(s) TO \(h);
            GRANT EXECUTE ON FUNCTION
                \(hostFunctions.map { "\(s).\($0)" }.joined(separator: ",\n    "))
                TO \(h);
            COMMIT;

            """
    }

    /// A quoted identifier: role names hold dots, and a database's name anything.
    static func identifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A string literal.
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
#endif
