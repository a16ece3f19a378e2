#if Queue  // the package's Queue trait: swift build --traits Queue
/// The roles a queue can be used through, and the privileges each needs:
/// `xcallback queue init QUEUE --print-grants` prints this for the owner
/// (who ran `init`) to run, and docs/queue.md explains it. One place, so
/// the documented grants and the tested ones cannot drift apart.
///
/// - `SCHEMA_host` claims, heartbeats, records and returns requests. It
///   never writes `outcomes` or `schema_migrations` itself: outcomes go
///   through `record_outcomes` and `record_dead` (QueueSchema, versions 2 and 3),
///   which check the lease first, and it may update only the lease columns
///   of `requests`, never a line. It does not prune.
/// - `SCHEMA_enqueue` adds requests and idempotency keys, nothing else.
/// - `SCHEMA_reader` reads: `outcomes`, `queue status`, `queue dead`.
public enum QueueGrants {
    /// The three group roles' names for a queue in schema `s`.
    public static func roles(schema s: String) -> (host: String, enqueue: String, reader: String) {
        ("\(s)_host", "\(s)_enqueue", "\(s)_reader")
    }

    /// SQL that creates the group roles (those missing) and grants them
    /// exactly what they need, revoking anything granted before.
    public static func sql(schema s: String) -> String {
        let (host, enqueue, reader) = roles(schema: s)
        let all = "\(host), \(enqueue), \(reader)"
        return """
            -- Roles for the xcallback queue in schema \(s). Run as the role that ran
            -- `xcallback queue init`; then give each login its role, for example
            --   CREATE ROLE worker1 LOGIN IN ROLE \(host);
            DO $$ BEGIN
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\(host)') THEN CREATE ROLE \(host) NOLOGIN; END IF;
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\(enqueue)') THEN CREATE ROLE \(enqueue) NOLOGIN; END IF;
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\(reader)') THEN CREATE ROLE \(reader) NOLOGIN; END IF;
            END $$;
            BEGIN;
            REVOKE ALL ON ALL TABLES IN SCHEMA \(s) FROM \(all);
            REVOKE ALL ON ALL SEQUENCES IN SCHEMA \(s) FROM \(all);
            REVOKE ALL ON ALL FUNCTIONS IN SCHEMA \(s) FROM \(all);
            GRANT USAGE ON SCHEMA \(s) TO \(all);
            -- Readers: outcomes, status, dead requests.
            GRANT SELECT ON ALL TABLES IN SCHEMA \(s) TO \(reader);
            -- Enqueuers: new requests and keys only.
            GRANT SELECT ON \(s).schema_migrations TO \(enqueue);
            GRANT INSERT (id, line, max_attempts) ON \(s).requests TO \(enqueue);
            GRANT SELECT, INSERT ON \(s).request_keys TO \(enqueue);
            GRANT USAGE ON SEQUENCE \(s).request_ids TO \(enqueue);
            -- Hosts: their own row in hosts, the lease columns of requests, and
            -- outcomes only through the functions that check the lease.
            GRANT SELECT ON ALL TABLES IN SCHEMA \(s) TO \(host);
            GRANT INSERT, DELETE, UPDATE (expires_at) ON \(s).hosts TO \(host);
            GRANT UPDATE (leased_by, attempt, leased_at, alone, suspect, strikes) ON \(s).requests TO \(host);
            GRANT EXECUTE ON FUNCTION \(s).record_outcomes(int8[], int4[], int8[], text[], text[], text[], text),
                                      \(s).record_dead(int8[], text[], text[], text[], text) TO \(host);
            COMMIT;

            """
    }
}
#endif
