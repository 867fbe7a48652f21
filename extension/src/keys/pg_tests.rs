//! Keys and accounts through SQL, as an admin and as a non-superuser app role.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    fn one(sql: &str) -> String {
        Spi::get_one::<String>(sql)
            .expect("query ran")
            .expect("a value")
    }

    /// (key, prefix) of a new API key made with the given SQL arguments.
    fn api_key(args: &str) -> (String, String) {
        Spi::get_two::<String, String>(&format!(
            "SELECT key, prefix FROM vigil.create_api_key({args})"
        ))
        .map(|(k, p)| (k.unwrap(), p.unwrap()))
        .expect("key created")
    }

    fn auth(key: &str, scope: &str, ip: &str) -> String {
        one(&format!(
            "SELECT outcome FROM vigil.authenticate_api_key('{key}', '{scope}', '{ip}')"
        ))
    }

    #[pg_test]
    fn api_key_outcomes() {
        let (key, _) = api_key("'shop', ARRAY['transaction']");
        assert_eq!(auth(&key, "transaction", "10.1.2.3"), "ok");
        assert_eq!(auth(&key, "identity", "10.1.2.3"), "scope");
        assert_eq!(auth("", "transaction", "10.1.2.3"), "missing");
        assert_eq!(auth("vk_not-a-key", "transaction", "10.1.2.3"), "unknown");
        let forged = format!("{}{}", &key[..11], "0".repeat(56));
        assert_eq!(
            auth(&forged, "transaction", "10.1.2.3"),
            "unknown",
            "right prefix, wrong secret"
        );

        let (expired, _) = api_key("'old', expires_at => now() - interval '1 second'");
        assert_eq!(auth(&expired, "transaction", "10.1.2.3"), "expired");

        let (limited, _) = api_key("'office', allowed_ips => ARRAY['192.168.0.0/16']::cidr[]");
        assert_eq!(auth(&limited, "identity", "192.168.4.5"), "ok");
        assert_eq!(auth(&limited, "identity", "10.0.0.1"), "ip");

        let (revoked, prefix) = api_key("'gone'");
        assert!(
            Spi::get_one::<bool>(&format!("SELECT vigil.revoke_key('{prefix}')"))
                .unwrap()
                .unwrap()
        );
        assert_eq!(auth(&revoked, "transaction", "10.1.2.3"), "revoked");
    }

    /// Issue 61: a key belongs to an account, default or named; entering
    /// it acts for that account; a key no longer live enters nothing.
    #[pg_test]
    fn an_api_key_enters_its_account() {
        let enter = |key: &str| {
            crate::pg::testing::error_of(&format!("SELECT vigil.enter_api_key('{key}')"))
        };
        let (plain, prefix) = api_key("'shop'");
        assert_eq!(
            one(&format!(
                "SELECT account FROM vigil.api_key_list WHERE prefix = '{prefix}'"
            )),
            "default@localhost"
        );
        assert_eq!(
            one("SELECT vigil.default_account()"),
            super::super::DEFAULT_ACCOUNT
        );
        Spi::run("SELECT vigil.create_account('brand@example.com')").unwrap();
        let (brand, brand_prefix) = api_key("'brand', account => 'brand@example.com'");
        assert_eq!(enter(&brand), "");
        assert_eq!(one("SELECT vigil._acting_account()"), "brand@example.com");
        assert_eq!(enter(&plain), "");
        assert_eq!(one("SELECT vigil._acting_account()"), "default@localhost");
        // Rotated, the new key keeps the account.
        let rotated = one(&format!(
            "SELECT key FROM vigil.rotate_key('{brand_prefix}', interval '0')"
        ));
        assert_eq!(enter(&rotated), "");
        assert_eq!(one("SELECT vigil._acting_account()"), "brand@example.com");
        assert_eq!(
            enter(&brand),
            "the API key is not valid",
            "the old one expired at once"
        );
        assert_eq!(enter("vk_nothing"), "the API key is not valid");
        assert_eq!(
            crate::pg::testing::error_of(
                "SELECT vigil.create_api_key('x', account => 'nobody@example.com')"
            ),
            "no account \"nobody@example.com\""
        );
        assert_eq!(
            crate::pg::testing::error_of("SELECT vigil.delete_account('default@localhost')"),
            "the default account cannot be deleted"
        );
        // Deleting an account deletes its keys with it.
        assert!(
            Spi::get_one::<bool>("SELECT vigil.delete_account('brand@example.com')")
                .unwrap()
                .unwrap()
        );
        assert_eq!(enter(&rotated), "the API key is not valid");
    }

    /// `vigil.enter_api_key` runs as the extension's owner under its caller's
    /// search_path: an operator a caller's schema holds must never run in it
    /// (its statement names pg_catalog's), nor may a NULL key enter anything.
    #[pg_test]
    fn entering_a_key_runs_no_callers_operator() {
        let (key, _) = api_key("'guarded'");
        Spi::run(
            "CREATE SCHEMA hostile;
             CREATE FUNCTION hostile.eq(text, text) RETURNS boolean LANGUAGE plpgsql
                 AS $$ BEGIN RAISE EXCEPTION 'the caller''s operator ran'; END $$;
             CREATE OPERATOR hostile.= (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.eq);
             CREATE FUNCTION hostile.gt(timestamptz, timestamptz) RETURNS boolean LANGUAGE plpgsql
                 AS $$ BEGIN RAISE EXCEPTION 'the caller''s operator ran'; END $$;
             CREATE OPERATOR hostile.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = hostile.gt);
             SET LOCAL search_path = hostile, pg_catalog, vigil",
        )
        .unwrap();
        let expiring = Spi::get_one::<String>(
            "SELECT key FROM vigil.create_api_key('expiring', expires_at => now() + interval '1 day')",
        )
        .unwrap()
        .unwrap();
        for key in [&key, &expiring] {
            assert_eq!(
                crate::pg::testing::error_of(&format!("SELECT vigil.enter_api_key('{key}')")),
                ""
            );
        }
        assert_eq!(one("SELECT vigil._acting_account()"), "default@localhost");
        Spi::run("RESET search_path").unwrap();
        assert_eq!(
            crate::pg::testing::error_of("SELECT vigil.enter_api_key(NULL)"),
            "the API key is not valid"
        );
    }

    /// The backend keeps the keys it read, and forgets them on any change to
    /// the table: an expiry or a revocation set there counts at once.
    #[pg_test]
    fn a_kept_key_expired_or_revoked_in_the_table_enters_nothing() {
        let enter = |key: &str| {
            crate::pg::testing::error_of(&format!("SELECT vigil.enter_api_key('{key}')"))
        };
        let (key, prefix) = api_key("'kept'");
        assert_eq!(enter(&key), "", "read");
        assert_eq!(enter(&key), "", "kept");
        let set = |what: &str| {
            Spi::run(&format!(
                "UPDATE vigil.api_keys SET {what} WHERE prefix = '{prefix}'"
            ))
            .unwrap()
        };
        set("expires_at = now() - interval '1 second'");
        assert_eq!(enter(&key), "the API key is not valid", "expired");
        set("expires_at = now() + interval '1 hour'");
        assert_eq!(enter(&key), "", "its expiry ahead");
        set("revoked_at = now()");
        assert_eq!(enter(&key), "the API key is not valid", "revoked");
    }

    #[pg_test]
    fn only_a_hash_of_the_key_is_stored() {
        let (key, prefix) = api_key("'hashed'");
        let row = one(&format!(
            "SELECT row_to_json(a)::text FROM vigil.api_keys a WHERE prefix = '{prefix}'"
        ));
        assert!(!row.contains(&key[11..]), "the secret is stored: {row}");
        let matches = Spi::get_one::<bool>(&format!(
            "SELECT hash = sha256(convert_to('{key}', 'UTF8')) FROM vigil.api_keys WHERE prefix = '{prefix}'"
        ));
        assert_eq!(matches, Ok(Some(true)));
    }

    #[pg_test]
    fn rotation_keeps_the_old_key_until_its_expiry() {
        let (old, old_prefix) = api_key("'rotating'");
        let (new, _) = Spi::get_two::<String, String>(&format!(
            "SELECT key, prefix FROM vigil.rotate_key('{old_prefix}', interval '1 hour')"
        ))
        .map(|(k, p)| (k.unwrap(), p.unwrap()))
        .unwrap();
        assert_ne!(old, new);
        assert_eq!(auth(&old, "transaction", "10.0.0.1"), "ok");
        assert_eq!(auth(&new, "transaction", "10.0.0.1"), "ok");
        // The old key's hour passes.
        Spi::run(&format!("UPDATE vigil.api_keys SET expires_at = now() - interval '1 second' WHERE prefix = '{old_prefix}'")).unwrap();
        assert_eq!(auth(&old, "transaction", "10.0.0.1"), "expired");
        assert_eq!(auth(&new, "transaction", "10.0.0.1"), "ok");
    }

    /// An account with a user key (optionally limited to `dbs`) and some databases.
    fn account(name: &str, dbs: &str) -> String {
        Spi::run(&format!("SELECT vigil.create_account('{name}')")).unwrap();
        Spi::run(&format!("INSERT INTO vigil.vector_databases (account, name) VALUES ('{name}', 'main'), ('{name}', 'other')")).unwrap();
        one(&format!(
            "SELECT key FROM vigil.create_user_key('{name}', databases => {dbs})"
        ))
    }

    #[pg_test]
    fn user_key_outcomes() {
        let a = account("a@example.com", "ARRAY['main']");
        let b = account("b@example.com", "NULL");
        let enter = |acct: &str, key: &str, db: &str| {
            one(&format!(
                "SELECT outcome FROM vigil.enter_account('{acct}', '{key}', '{db}')"
            ))
        };
        assert_eq!(enter("a@example.com", &a, "main"), "ok");
        assert_eq!(enter("a@example.com", &a, "other"), "database");
        assert_eq!(
            enter("a@example.com", &b, "main"),
            "account",
            "B's key does not open A"
        );
        assert_eq!(enter("a@example.com", "vu_bad", "main"), "unknown");
        assert_eq!(enter("b@example.com", &b, "other"), "ok");
        let b_prefix = &b[..11];
        assert_eq!(
            Spi::get_one::<bool>(&format!("SELECT vigil.revoke_key('{b_prefix}')")),
            Ok(Some(true))
        );
        assert_eq!(enter("b@example.com", &b, "other"), "revoked");
    }

    #[pg_test]
    fn user_keys_rotate_and_report_their_status() {
        let old = account("r@example.com", "ARRAY['main']");
        let old_prefix = &old[..11];
        let new = one(&format!(
            "SELECT key FROM vigil.rotate_key('{old_prefix}', interval '0')"
        ));
        let enter = |key: &str| {
            one(&format!(
                "SELECT outcome FROM vigil.enter_account('r@example.com', '{key}', 'main')"
            ))
        };
        assert_eq!(enter(&new), "ok");
        assert_eq!(enter(&old), "expired", "rotated with no overlap");
        assert_eq!(
            one(&format!("SELECT vigil.key_status('{old_prefix}')")),
            "expired"
        );
        assert_eq!(
            one(&format!("SELECT vigil.key_status('{}')", &new[..11])),
            "active"
        );
        assert_eq!(
            one(&format!(
                "SELECT outcome FROM vigil.enter_account('r@example.com', '{new}', 'other')"
            )),
            "database",
            "the new key keeps the old one's database limit"
        );
    }

    #[pg_test(error = "no active key with prefix \"vk_00000000\"")]
    fn rotating_an_unknown_key_is_an_error() {
        Spi::run("SELECT * FROM vigil.rotate_key('vk_00000000')").unwrap();
    }

    #[pg_test]
    fn rate_limit_overrides_come_with_a_successful_check() {
        let (key, _) = api_key("'limited', rate_per_second => 2.5, burst => 5");
        let (rate, burst) = Spi::get_two::<f32, i32>(&format!(
            "SELECT rate_per_second, burst FROM vigil.authenticate_api_key('{key}', 'transaction', NULL)"
        ))
        .unwrap();
        assert_eq!((rate, burst), (Some(2.5), Some(5)));
    }

    #[pg_test]
    fn deleting_an_account_removes_its_keys_and_databases() {
        account("gone@example.com", "NULL");
        assert_eq!(
            Spi::get_one::<bool>("SELECT vigil.delete_account('gone@example.com')"),
            Ok(Some(true))
        );
        let left = Spi::get_one::<i64>(
            "SELECT (SELECT count(*) FROM vigil.user_keys WHERE account = 'gone@example.com')
                  + (SELECT count(*) FROM vigil.vector_databases WHERE account = 'gone@example.com')",
        );
        assert_eq!(left, Ok(Some(0)));
    }

    #[pg_test]
    fn an_app_role_sees_only_the_entered_account() {
        let a = account("a@example.com", "NULL");
        account("b@example.com", "NULL");
        Spi::run("CREATE ROLE vigil_test_app NOSUPERUSER NOBYPASSRLS").unwrap();
        Spi::run("GRANT USAGE ON SCHEMA vigil TO vigil_test_app").unwrap();
        Spi::run("GRANT SELECT ON vigil.vector_databases TO vigil_test_app").unwrap();
        Spi::run(
            "GRANT EXECUTE ON FUNCTION vigil.enter_account(text, text, text) TO vigil_test_app",
        )
        .unwrap();
        Spi::run("SET ROLE vigil_test_app").unwrap();
        let visible = || {
            Spi::get_one::<i64>("SELECT count(*) FROM vigil.vector_databases")
                .unwrap()
                .unwrap()
        };
        assert_eq!(visible(), 0, "no account entered: nothing visible");
        assert_eq!(
            one(&format!(
                "SELECT outcome FROM vigil.enter_account('a@example.com', '{a}', NULL)"
            )),
            "ok"
        );
        assert_eq!(visible(), 2);
        let b_rows = Spi::get_one::<i64>(
            "SELECT count(*) FROM vigil.vector_databases WHERE account = 'b@example.com'",
        );
        assert_eq!(
            b_rows,
            Ok(Some(0)),
            "B's rows are invisible to a direct read"
        );
        let keys = PgTryBuilder::new(|| {
            Spi::get_one::<i64>("SELECT count(*) FROM vigil.api_keys").is_ok()
        })
        .catch_others(|_| false)
        .execute();
        assert!(!keys, "the app role cannot read key hashes");
        Spi::run("RESET ROLE").unwrap();
    }

    #[pg_test(error = "permission denied to set parameter \"vigil.account\"")]
    fn an_app_role_cannot_pick_its_account() {
        Spi::run("CREATE ROLE vigil_test_app2 NOSUPERUSER NOBYPASSRLS").unwrap();
        Spi::run("SET ROLE vigil_test_app2").unwrap();
        Spi::run("SET vigil.account = 'b@example.com'").unwrap();
    }
}
