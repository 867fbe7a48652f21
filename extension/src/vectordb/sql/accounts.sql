-- The admin view of the vector databases (vigil.account_list), by account.

-- Admin: every account, its live user keys and its databases. Read by a
-- function running as its owner, in statements Citus can plan: on a cluster
-- the databases are on the workers, which the owner's connections reach
-- (the view's reader's would not, and row-level security there would hide
-- every row from them).
CREATE FUNCTION vigil._account_list()
RETURNS TABLE (account text, created_at timestamptz, active_user_keys bigint, databases text[])
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
    WITH keys AS MATERIALIZED (
        SELECT u.account, count(*) AS n FROM user_keys u
        WHERE vigil._key_status(u.revoked_at, u.expires_at) = 'active'
        GROUP BY u.account
    ), dbs AS MATERIALIZED (
        SELECT d.account, array_agg(d.name ORDER BY d.name) AS names FROM vector_databases d
        GROUP BY d.account
    )
    SELECT a.account, a.created_at, coalesce(k.n, 0), coalesce(d.names, '{}')
    FROM accounts a LEFT JOIN keys k ON k.account = a.account LEFT JOIN dbs d ON d.account = a.account
$$;
REVOKE EXECUTE ON FUNCTION vigil._account_list() FROM PUBLIC;
CREATE VIEW vigil.account_list AS SELECT * FROM vigil._account_list();
REVOKE ALL ON vigil.account_list FROM PUBLIC;
