//! Vector databases through SQL, as an entered account.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    fn enter(account: &str) {
        Spi::run(&format!("SELECT vigil.create_account('{account}')")).unwrap();
        let key = Spi::get_one::<String>(&format!(
            "SELECT key FROM vigil.create_user_key('{account}')"
        ))
        .unwrap()
        .unwrap();
        let outcome = Spi::get_one::<String>(&format!(
            "SELECT outcome FROM vigil.enter_account('{account}', '{key}', NULL)"
        ));
        assert_eq!(outcome, Ok(Some("ok".into())));
    }

    #[pg_test]
    fn create_database_is_idempotent_and_per_account() {
        enter("a@example.com");
        let created = || {
            Spi::get_one::<bool>("SELECT created FROM vigil.create_database('docs')")
                .unwrap()
                .unwrap()
        };
        assert!(created());
        assert!(!created(), "the second call finds it");
        enter("b@example.com");
        assert!(created(), "B's 'docs' is another database");
        let names = Spi::get_one::<i64>("SELECT count(*) FROM vigil.vector_databases");
        assert_eq!(names, Ok(Some(2)));
    }

    #[pg_test(
        error = "dbName must be 1 to 63 letters, digits, \"_\", \".\" or \"-\", starting with a letter or digit"
    )]
    fn a_bad_database_name_is_refused() {
        enter("a@example.com");
        Spi::run("SELECT * FROM vigil.create_database('../etc')").unwrap();
    }

    #[pg_test(error = "no account selected")]
    fn creating_needs_an_account() {
        Spi::run("SELECT * FROM vigil.create_database('docs')").unwrap();
    }

    #[pg_test]
    fn created_at_is_19_digit_nanoseconds() {
        let ns = Spi::get_one::<String>("SELECT vigil.epoch_ns('2026-11-21 10:00:00.123456+00')");
        assert_eq!(ns, Ok(Some("1795255200123456000".into())));
    }
}
