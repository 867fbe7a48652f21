-- vigil 0.1.0 -> 0.2.0
--
-- Invalid or unknown input to the admin functions names its argument in the
-- error's COLUMN, as every other vigil function does (the sidecar and psql's
-- VERBOSITY verbose show it): create_user_key (account), rotate_key
-- (old_key_lives, key_prefix). Function bodies only; no data changes.

CREATE OR REPLACE FUNCTION vigil.create_user_key(
    account text,
    name text DEFAULT 'default',
    databases text[] DEFAULT NULL,
    expires_at timestamptz DEFAULT NULL,
    rate_per_second real DEFAULT NULL,
    burst integer DEFAULT NULL
) RETURNS TABLE (id bigint, key text, prefix text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    k record;
BEGIN
    IF NOT EXISTS (SELECT FROM vigil.accounts a WHERE a.account = create_user_key.account) THEN
        RAISE EXCEPTION 'no account "%"', create_user_key.account
            USING ERRCODE = 'no_data_found', COLUMN = 'account';
    END IF;
    SELECT * INTO k FROM vigil._new_key('user');
    INSERT INTO vigil.user_keys AS u (account, name, prefix, hash, databases, expires_at, rate_per_second, burst)
    VALUES (create_user_key.account, create_user_key.name, k.prefix, k.hash, create_user_key.databases,
            create_user_key.expires_at, create_user_key.rate_per_second, create_user_key.burst)
    RETURNING u.id INTO id;
    key := k.secret;
    prefix := k.prefix;
    RETURN NEXT;
END
$$;

CREATE OR REPLACE FUNCTION vigil.rotate_key(
    key_prefix text,
    old_key_lives interval DEFAULT interval '24 hours',
    new_key_expires_at timestamptz DEFAULT NULL
)
RETURNS TABLE (id bigint, key text, prefix text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, vigil
AS $$
DECLARE
    kind text := CASE WHEN starts_with(key_prefix, 'vk_') THEN 'api' ELSE 'user' END;
    old_id bigint;
    k record;
BEGIN
    IF old_key_lives IS NULL OR old_key_lives < interval '0' THEN
        RAISE EXCEPTION 'invalid old_key_lives: must be zero or more'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'old_key_lives';
    END IF;
    SELECT * INTO k FROM vigil._new_key(kind);
    IF kind = 'api' THEN
        UPDATE vigil.api_keys a SET expires_at = least(coalesce(a.expires_at, 'infinity'), now() + old_key_lives)
        WHERE a.prefix = rotate_key.key_prefix AND vigil._key_status(a.revoked_at, a.expires_at) = 'active'
        RETURNING a.id INTO old_id;
        INSERT INTO vigil.api_keys AS a (name, prefix, hash, scopes, expires_at, allowed_ips, rate_per_second, burst, rotated_from)
        SELECT o.name, k.prefix, k.hash, o.scopes, new_key_expires_at, o.allowed_ips, o.rate_per_second, o.burst, o.id
        FROM vigil.api_keys o WHERE o.id = old_id
        RETURNING a.id INTO id;
    ELSE
        UPDATE vigil.user_keys u SET expires_at = least(coalesce(u.expires_at, 'infinity'), now() + old_key_lives)
        WHERE u.prefix = rotate_key.key_prefix AND vigil._key_status(u.revoked_at, u.expires_at) = 'active'
        RETURNING u.id INTO old_id;
        INSERT INTO vigil.user_keys AS u (account, name, prefix, hash, databases, expires_at, rate_per_second, burst, rotated_from)
        SELECT o.account, o.name, k.prefix, k.hash, o.databases, new_key_expires_at, o.rate_per_second, o.burst, o.id
        FROM vigil.user_keys o WHERE o.id = old_id
        RETURNING u.id INTO id;
    END IF;
    IF old_id IS NULL THEN
        RAISE EXCEPTION 'no active key with prefix "%"', rotate_key.key_prefix
            USING ERRCODE = 'no_data_found', COLUMN = 'key_prefix';
    END IF;
    key := k.secret;
    prefix := k.prefix;
    RETURN NEXT;
END
$$;
