#if Queue  // the package's Queue trait: swift build --traits Queue
/// Migration 4: every write a host or an enqueuer makes goes through a
/// function of the queue's own, so their roles need no write on any table
/// (QueueGrants). An operator found that a host login could
/// `UPDATE requests SET leased_by = 42 …` and then record any outcome for
/// that made-up lease, and an enqueue login could insert rows with any id.
///
/// Each function is `SECURITY DEFINER`, owned by the role that ran `init`,
/// with a `search_path` of the catalog only (every name is qualified), and
/// executable only by the roles granted it. A host row carries the login
/// that registered it (`session_user`, which a definer's function does not
/// change), and every function that touches a lease acts only for hosts of
/// the calling login: a login records, releases, heartbeats and leaves only
/// as its own registered hosts. The statements are those of QueueStore
/// before this version, set-based as they were (one call per batch).
extension QueueSchema {
    static func functions(_ s: String) -> [String] {
        let definer = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"
        let channel = "'\(s)_requests'"
        // The hosts this login registered.
        let mine = "(SELECT h.id FROM \(s).hosts h WHERE h.login = session_user)"
        return [
            // Existing rows belong to the login that migrates; hosts of an
            // older version are refused by the version check anyway.
            "ALTER TABLE \(s).hosts ADD COLUMN login text NOT NULL DEFAULT session_user",
            // Suspects run beside fresh work, a few per host (`claim_beside`,
            // `beside` while leased so); one whose host dies then, beside
            // others, is to blame no more than they are, but runs alone from
            // then on (`isolate`), as every suspect did before. One that took
            // a strike already ran alone: it goes on so.
            """
            ALTER TABLE \(s).requests ADD COLUMN beside boolean NOT NULL DEFAULT false,
                ADD COLUMN isolate boolean NOT NULL DEFAULT false
            """,
            "UPDATE \(s).requests SET isolate = true WHERE suspect AND strikes > 0",
            // The id is drawn here, random (see the table), never the caller's.
            """
            CREATE FUNCTION \(s).register_host(text, float8) RETURNS bigint
            LANGUAGE sql \(definer) AS $$
                INSERT INTO \(s).hosts (id, name, expires_at, login)
                VALUES ((floor(random() * 9223372036854770000) + 1)::int8, $1,
                        now() + make_interval(secs => $2), session_user)
                RETURNING id
            $$
            """,
            """
            CREATE FUNCTION \(s).heartbeat(host int8, lease float8) RETURNS boolean
            LANGUAGE sql \(definer) AS $$
                WITH beat AS (
                    UPDATE \(s).hosts SET expires_at = now() + make_interval(secs => lease)
                    WHERE id = host AND login = session_user RETURNING 1)
                SELECT EXISTS (SELECT 1 FROM beat)
            $$
            """,
            claim(s, .fresh, definer: definer),
            claim(s, .beside, definer: definer),
            claim(s, .alone, definer: definer),
            // Claimed, never started: the claim is undone, attempt included.
            // Each request found by its primary key (`+ 0`: migration 3).
            """
            CREATE FUNCTION \(s).release(int8[], int4[], int8[]) RETURNS void
            LANGUAGE sql \(definer) AS $$
                UPDATE \(s).requests r SET leased_by = NULL, attempt = r.attempt - 1, alone = false, beside = false
                FROM unnest($1, $2, $3) AS f(id, attempt, host)
                WHERE r.id = f.id AND r.attempt = f.attempt AND r.leased_by + 0 = f.host
                  AND f.host IN \(mine);
                SELECT pg_notify(\(channel), '');
            $$
            """,
            """
            CREATE FUNCTION \(s).unregister_host(host int8) RETURNS integer
            LANGUAGE plpgsql \(definer) AS $$
            DECLARE released integer;
            BEGIN
                IF NOT EXISTS (SELECT 1 FROM \(s).hosts h WHERE h.id = host AND h.login = session_user) THEN
                    RETURN 0;
                END IF;
                UPDATE \(s).requests SET leased_by = NULL, alone = false, beside = false WHERE leased_by = host;
                GET DIAGNOSTICS released = ROW_COUNT;
                DELETE FROM \(s).hosts h WHERE h.id = host;
                IF released > 0 THEN PERFORM pg_notify(\(channel), ''); END IF;
                RETURN released;
            END $$
            """,
            // Expired hosts go, their requests back to the queue as suspects
            // (one leased alone takes a strike; one leased beside others, as
            // a suspect, runs alone from then on); those out of strikes are
            // locked and returned, for the caller to retire through
            // `record_dead` in the same transaction. Any host may rescue:
            // it only ever acts on hosts past their lease.
            """
            CREATE FUNCTION \(s).rescue(OUT returned integer, OUT dead_ids int8[], OUT dead_lines text[],
                                        OUT dead_strikes int4[])
            LANGUAGE plpgsql \(definer) AS $$
            BEGIN
                DELETE FROM \(s).hosts h WHERE h.expires_at < now();
                UPDATE \(s).requests r
                SET leased_by = NULL, suspect = true, strikes = r.strikes + r.alone::int,
                    isolate = r.isolate OR r.alone OR r.beside, alone = false, beside = false
                WHERE r.leased_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM \(s).hosts h WHERE h.id = r.leased_by)
                  AND r.strikes + r.alone::int < r.max_attempts;
                GET DIAGNOSTICS returned = ROW_COUNT;
                SELECT coalesce(array_agg(o.id ORDER BY o.id), '{}'), coalesce(array_agg(o.line ORDER BY o.id), '{}'),
                       coalesce(array_agg(o.spent ORDER BY o.id), '{}')
                INTO dead_ids, dead_lines, dead_strikes
                FROM (SELECT r.id, r.line, r.strikes + r.alone::int AS spent FROM \(s).requests r
                      WHERE r.leased_by IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM \(s).hosts h WHERE h.id = r.leased_by)
                      FOR UPDATE) o;
                IF returned > 0 THEN PERFORM pg_notify(\(channel), ''); END IF;
            END $$
            """,
            // As in migration 3, and only for leases of this login's hosts.
            // The batch is read once, by the DELETE, whose RETURNING carries
            // its outcome on: a join of the deleted rows back to the batch
            // (migration 3) was estimated at one row once the batch had a
            // condition on `hosts`, so the planner matched them in nested
            // loops, every row against every other: 2.2 s for 4,096 outcomes
            // instead of 0.1 s, past the record connection's 4 s under load,
            // where each retry carried a bigger batch and none got through.
            // A batch is numbered in request order (`ORDER BY`), as
            // `outcomes --after ID` reads it, not in whatever order a plan
            // gives (a hashed batch came out last first).
            """
            CREATE OR REPLACE FUNCTION \(s).record_outcomes(int8[], int4[], int8[], text[], text[], text[], text)
            RETURNS SETOF bigint LANGUAGE sql \(definer) AS $$
                WITH done AS (
                    DELETE FROM \(s).requests r
                    USING unnest($1, $2, $3, $4, $5, $6) AS b(id, attempt, host, outcome, params, callback)
                    WHERE r.id = b.id AND r.attempt = b.attempt AND r.leased_by + 0 = b.host
                      AND b.host IN \(mine)
                    RETURNING r.id, r.line, r.attempt, r.enqueued_at, b.outcome, b.params, b.callback)
                INSERT INTO \(s).outcomes (request_id, line, attempts, enqueued_at, outcome, params, callback, host)
                SELECT d.id, d.line, d.attempt, d.enqueued_at, d.outcome, d.params, NULLIF(d.callback, ''), $7
                FROM done d
                ORDER BY d.id
                ON CONFLICT (request_id) DO NOTHING
                RETURNING request_id
            $$
            """,
            // As in migration 2, for a login with a registered host, and
            // only an `Abandoned` error: the one outcome a dead request has.
            // One pass over the batch, as `record_outcomes`.
            """
            CREATE OR REPLACE FUNCTION \(s).record_dead(int8[], text[], text[], text[], text)
            RETURNS integer LANGUAGE sql \(definer) AS $$
                WITH gone AS (
                    DELETE FROM \(s).requests r
                    USING unnest($1, $2, $3, $4) AS b(id, outcome, params, callback)
                    WHERE r.id = b.id AND r.leased_by IS NOT NULL
                      AND b.outcome = 'error' AND '&' || b.params || '&' LIKE '%&errorCode=Abandoned&%'
                      AND EXISTS \(mine)
                      AND NOT EXISTS (SELECT 1 FROM \(s).hosts h WHERE h.id = r.leased_by)
                      AND r.strikes + r.alone::int >= r.max_attempts
                    RETURNING r.id, r.line, r.attempt, r.enqueued_at, b.outcome, b.params, b.callback),
                recorded AS (
                    INSERT INTO \(s).outcomes
                        (request_id, line, attempts, enqueued_at, outcome, params, callback, host, dead)
                    SELECT g.id, g.line, g.attempt, g.enqueued_at, g.outcome, g.params, NULLIF(g.callback, ''), $5, true
                    FROM gone g
                    ORDER BY g.id
                    ON CONFLICT (request_id) DO NOTHING
                    RETURNING 1)
                SELECT count(*)::integer FROM recorded
            $$
            """,
            enqueue(s, definer: definer, channel: channel),
            // Functions are everyone's to call unless revoked.
            "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA \(s) FROM PUBLIC",
            // Roles granted writes before (the host role of version 3 updated
            // lease columns and wrote `hosts`; the enqueue role inserted
            // requests and drew ids) keep none once the schema is at 4, even
            // before the owner runs the new --print-grants: only the owner
            // writes tables. Revoking on a table revokes its column grants too.
            """
            DO $revoke$ DECLARE grantee text; BEGIN
                FOR grantee IN
                    SELECT DISTINCT a.grantee::regrole::text
                    FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
                    WHERE c.relnamespace = '\(s)'::regnamespace AND a.grantee <> 0 AND a.grantee <> c.relowner
                      AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'USAGE')
                    UNION
                    SELECT DISTINCT a.grantee::regrole::text
                    FROM pg_attribute t JOIN pg_class c ON c.oid = t.attrelid
                    CROSS JOIN LATERAL aclexplode(t.attacl) a
                    WHERE c.relnamespace = '\(s)'::regnamespace AND a.grantee <> 0 AND a.grantee <> c.relowner
                      AND a.privilege_type IN ('INSERT', 'UPDATE')
                LOOP
                    EXECUTE format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA \(s) FROM %s', grantee);
                    EXECUTE format('REVOKE USAGE, UPDATE ON ALL SEQUENCES IN SCHEMA \(s) FROM %s', grantee);
                END LOOP;
            END $revoke$
            """,
        ]
    }

    /// What a claim takes: waiting requests (`claim`), suspects once over,
    /// beside them (`claim_beside`), or one suspect to run alone
    /// (`claim_suspect`).
    enum ClaimKind { case fresh, beside, alone }

    /// `claim` leases up to `lim` waiting requests, oldest first;
    /// `claim_beside` up to `lim` suspects to run beside other work;
    /// `claim_suspect` one suspect to run alone (`isolate`). Only for a live
    /// host of this login, whose lease the claim extends. Rows: (id, line,
    /// attempt, 0) per request claimed; (0, '', 0, 1) when the host's lease
    /// had run out; (0, '', 0, 2) when suspects wait to run alone; (0, '',
    /// 0, 3) when suspects wait to run beside.
    ///
    /// PL/pgSQL, whose statements are planned with their arguments' values
    /// as the statement sent by the client was: a SQL function's are
    /// planned without them, took a tenth of the table for `lim` and hashed
    /// all of `requests` to join the claimed ids back (250 ms for 256 of
    /// 200,000, against 3 ms). `= ANY (ARRAY(…))` takes each claimed
    /// request by its primary key whatever the estimate. A function per
    /// kind, not one with a flag: only a literal `NOT suspect` lets the
    /// planner use `requests_ready`, in its order (sorting off, as on the
    /// claim connection: QueueStore.claimSettings).
    private static func claim(_ s: String, _ kind: ClaimKind, definer: String) -> String {
        let (name, parameters, limit, which, set): (String, String, String, String, String)
        switch kind {
        case .fresh:
            (name, parameters, limit) = ("claim", "host int8, lim int4, lease float8", "lim")
            (which, set) = ("NOT q.suspect", "alone = false, beside = false")
        case .beside:
            (name, parameters, limit) = ("claim_beside", "host int8, lim int4, lease float8", "lim")
            (which, set) = ("q.suspect AND NOT q.isolate", "alone = false, beside = true")
        case .alone:
            (name, parameters, limit) = ("claim_suspect", "host int8, lease float8", "1")
            (which, set) = ("q.suspect AND q.isolate", "alone = true, beside = false")
        }
        return """
            CREATE FUNCTION \(s).\(name)(\(parameters))
            RETURNS TABLE (claimed_id int8, claimed_line text, claimed_attempt int4, marker int4)
            LANGUAGE plpgsql \(definer) SET enable_sort = off AS $$
            BEGIN
                RETURN QUERY
                WITH live AS (
                    UPDATE \(s).hosts h SET expires_at = now() + make_interval(secs => lease)
                    WHERE h.id = host AND h.expires_at > now() AND h.login = session_user RETURNING h.id),
                next AS (
                    SELECT q.id FROM \(s).requests q
                    WHERE q.leased_by IS NULL AND \(which) AND EXISTS (SELECT 1 FROM live)
                    ORDER BY q.id LIMIT \(limit) FOR UPDATE SKIP LOCKED),
                claimed AS (
                    UPDATE \(s).requests r
                    SET leased_by = host, attempt = r.attempt + 1, leased_at = now(), \(set)
                    WHERE r.id = ANY (ARRAY(SELECT n.id FROM next n))
                    RETURNING r.id, r.line, r.attempt)
                SELECT c.id, c.line, c.attempt, 0 FROM claimed c
                UNION ALL SELECT 0::int8, '', 0, 1 WHERE NOT EXISTS (SELECT 1 FROM live)
                UNION ALL SELECT 0::int8, '', 0, 2 WHERE EXISTS (
                    SELECT 1 FROM \(s).requests q WHERE q.leased_by IS NULL AND q.suspect AND q.isolate)
                UNION ALL SELECT 0::int8, '', 0, 3 WHERE EXISTS (
                    SELECT 1 FROM \(s).requests q WHERE q.leased_by IS NULL AND q.suspect AND NOT q.isolate);
            END $$
            """
    }

    /// `enqueue(lines, keys, max_attempts)`: the ids of a batch, in line
    /// order ('' for a line without a key). Ids come from the sequence, in
    /// line order; a key seen before (in this batch or ever, or taken by
    /// another enqueuer meanwhile) gives that request's id and adds
    /// nothing. Lines are checked as `xcallback enqueue` checks them, as far
    /// as SQL can: one line of at most `EnqueueLine.maxLineBytes`, no control
    /// byte, a scheme; keys of at most `EnqueueLine.maxKeyBytes`, no control byte. The host
    /// parses each line again before it runs it.
    private static func enqueue(_ s: String, definer: String, channel: String) -> String {
        """
        CREATE FUNCTION \(s).enqueue(lines text[], keys text[], max_attempts int4) RETURNS int8[]
        LANGUAGE plpgsql \(definer) AS $$
        DECLARE
            bad int;
            fresh int[];
            fresh_ids int8[];
            ids int8[];
            added integer;
        BEGIN
            IF cardinality(lines) IS DISTINCT FROM cardinality(keys) THEN
                RAISE EXCEPTION 'enqueue: % line(s) but % key(s)', cardinality(lines), cardinality(keys)
                    USING ERRCODE = '22023';
            END IF;
            IF max_attempts IS NULL OR max_attempts < 1 THEN
                RAISE EXCEPTION 'enqueue: max_attempts must be at least 1' USING ERRCODE = '22023';
            END IF;
            SELECT min(i) INTO bad FROM unnest(lines) WITH ORDINALITY AS l(line, i)
            WHERE line IS NULL OR octet_length(line) > \(EnqueueLine.maxLineBytes) OR line ~ '[\\x01-\\x1f\\x7f]'
               OR line !~ '^[A-Za-z][A-Za-z0-9+.-]*:';
            IF bad IS NOT NULL THEN
                RAISE EXCEPTION 'enqueue: line % of the batch is not a request line (one line of at most \(EnqueueLine.maxLineBytes) bytes, no control character, a scheme)', bad
                    USING ERRCODE = '22023';
            END IF;
            SELECT min(i) INTO bad FROM unnest(keys) WITH ORDINALITY AS k(key, i)
            WHERE key IS NULL OR octet_length(key) > \(EnqueueLine.maxKeyBytes) OR key ~ '[\\x01-\\x1f\\x7f]';
            IF bad IS NOT NULL THEN
                RAISE EXCEPTION 'enqueue: key % of the batch is not an idempotency key (at most \(EnqueueLine.maxKeyBytes) bytes, no control character)', bad
                    USING ERRCODE = '22023';
            END IF;
            -- New lines: unkeyed, or the first of a key never seen.
            SELECT coalesce(array_agg(t.i ORDER BY t.i), '{}') INTO fresh FROM (
                SELECT k.i, k.key, row_number() OVER (PARTITION BY k.key ORDER BY k.i) AS nth
                FROM unnest(keys) WITH ORDINALITY AS k(key, i)) t
            WHERE t.key = '' OR (t.nth = 1 AND NOT EXISTS (
                SELECT 1 FROM \(s).request_keys rk WHERE rk.key = t.key));
            SELECT coalesce(array_agg(a.id ORDER BY a.id), '{}') INTO fresh_ids
            FROM (SELECT nextval('\(s).request_ids') AS id FROM generate_series(1, cardinality(fresh))) a;
            -- Keys in sorted order, so enqueuers racing on the same keys wait
            -- for each other instead of deadlocking; a key another enqueuer
            -- took meanwhile keeps its id (seen by the next statement).
            INSERT INTO \(s).request_keys (key, request_id)
            SELECT keys[u.f], fresh_ids[u.j] FROM unnest(fresh) WITH ORDINALITY AS u(f, j)
            WHERE keys[u.f] <> '' ORDER BY 1
            ON CONFLICT (key) DO NOTHING;
            SELECT array_agg(coalesce(rk.request_id, fr.id, 0) ORDER BY k.i) INTO ids
            FROM unnest(keys) WITH ORDINALITY AS k(key, i)
            LEFT JOIN \(s).request_keys rk ON k.key <> '' AND rk.key = k.key
            LEFT JOIN (SELECT u.f, fresh_ids[u.j] AS id FROM unnest(fresh) WITH ORDINALITY AS u(f, j)) fr
                ON k.key = '' AND fr.f = k.i;
            INSERT INTO \(s).requests (id, line, max_attempts)
            SELECT fresh_ids[u.j], lines[u.f], max_attempts FROM unnest(fresh) WITH ORDINALITY AS u(f, j)
            WHERE keys[u.f] = '' OR ids[u.f] = fresh_ids[u.j]
            ORDER BY 1;
            GET DIAGNOSTICS added = ROW_COUNT;
            IF added > 0 THEN PERFORM pg_notify(\(channel), ''); END IF;
            RETURN coalesce(ids, '{}');
        END $$
        """
    }
}
#endif
