#!/usr/bin/env python3
"""`make bench-vectordb`'s driver: storing and searching over real HTTP.

Run by bench/vectordb/bench.sh with a cluster and a sidecar up; reads
VIGIL_HTTP, VIGIL_USER_KEY, VIGIL_ACCOUNT and PSQL (a command line that runs
psql as the superuser on the bench cluster).

1. Records: paragraphs of Debian package long descriptions (all packages,
   deduplicated, content cut to 500 characters as the published client cuts
   it), title the package's short description; then, as many as still
   wanted, the packages' one-line descriptions; the first BENCH_RECORDS.
2. Storing, same texts both ways: BENCH_SAMPLE records through
   /storeEmbeddings in batches of 100 from one client, against the raw
   baseline of vigil.embed(text[]) over the same texts in the same batches on
   one connection (the model call alone, nothing stored).
3. The rest stored by 2 clients at once (the machine's cores).
4. Searching: first one client in SQL (the 300 queries of queries.tsv
   through query_embeddings, keyword_search and hybrid_search: the cost of a
   search without HTTP or queueing); then over HTTP /queryEmbeddings and
   /hybridSearch (limit 10), 16 clients at once (wrk's 16 connections, or
   with BENCH_DRIVER=python this script's 16 threads), BENCH_QUERIES
   requests each: p50 and p99, requests per second, and how many passed the
   time limit. The 300 queries come round again (the sidecar's
   cache of query embeddings then answers most without the model); in the
   big database a second run asks only queries never asked before (the
   model runs for each). Then the same in a database holding 1% as many
   records as the big one, which must still answer `limit` records.
   After each, from the sidecar's /metrics: how long its requests waited
   for a connection and for their query's embedding, and how many queries
   each model call embedded.

BENCH_REUSE=1 keeps databases already stored at these sizes (searches only).
BENCH_PERF=1 also samples the whole machine (`perf record -a -g`, 499 Hz)
while each search of the big database runs (queries in turn, then new ones),
and prints where its time went: idle, ONNX Runtime, the rest of PostgreSQL,
the sidecar, the load generator, as shares of the cores and per request.
"""

import contextlib
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
import corpus  # noqa: E402

RECORDS = int(os.environ.get("BENCH_RECORDS", "100000"))
SAMPLE = int(os.environ.get("BENCH_SAMPLE", "1000"))
QUERIES = int(os.environ.get("BENCH_QUERIES", "1600"))
CLIENTS = 16
DRIVER = os.environ.get("BENCH_DRIVER", "wrk")
WRK_SCRIPT = os.path.join(os.path.dirname(__file__), "search.lua")
BASE = urllib.parse.urlparse(os.environ["VIGIL_HTTP"])
CREDS = {"userKey": os.environ["VIGIL_USER_KEY"], "account": os.environ["VIGIL_ACCOUNT"]}
PSQL = os.environ["PSQL"].split()
QUERY_LINES = open(os.path.join(os.path.dirname(__file__), "queries.tsv")).read().splitlines()[1:]


def records():
    dump = subprocess.run(["apt-cache", "dumpavail"], check=True, stdout=subprocess.PIPE).stdout
    translations = None
    seen, out = set(), []
    stanzas = sorted(
        (st for st in corpus.parse_stanzas(dump.decode("utf-8", "replace")) if st.get("Description")),
        key=lambda st: st.get("Package", ""),
    )
    for st in stanzas:
        title, lines = corpus.split_description(st["Description"])
        if not any(line.strip() for line in lines):
            if translations is None:
                translations = corpus.load_translations()
            lines = translations.get(st.get("Description-md5", ""), [])
        for paragraph in corpus.long_to_text(lines).split("\n\n"):
            content = paragraph.strip()[:500]
            if len(content) < 80 or content in seen:
                continue
            seen.add(content)
            out.append({"title": title[:100], "content": content, "metadata": {"package": st.get("Package")}})
            if len(out) == RECORDS:
                return out
    # Not enough paragraphs: the packages' one-line descriptions, titled by name.
    for st in stanzas:
        title, _ = corpus.split_description(st["Description"])
        content = f"{st.get('Package')}: {title}"
        if content in seen:
            continue
        seen.add(content)
        out.append({"title": st.get("Package", "")[:100], "content": content, "metadata": {"package": st.get("Package")}})
        if len(out) == RECORDS:
            return out
    sys.exit(f"only {len(out)} distinct records; set BENCH_RECORDS lower")


def request(conn, path, body):
    """(status, body bytes) of one POST."""
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp.status, resp.read()


def post(conn, path, body):
    status, data = request(conn, path, body)
    if status >= 300:
        raise RuntimeError(f"{path}: {status} {data[:300]!r}")
    return json.loads(data)


def connect():
    return http.client.HTTPConnection(BASE.hostname, BASE.port, timeout=600)


WAITS = {
    "vigil_db_pool_wait_seconds": "for a database connection",
    "vigil_query_embedding_wait_seconds": "for the query's embedding",
}


def waits():
    """{histogram: (count, sum in seconds)} of the sidecar's histograms of
    the time requests waited (`WAITS`), from its /metrics; also the model
    calls that embedded queries under "batches" as (calls, texts)."""
    conn = connect()
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    values = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        values[name] = value
    found = {h: (float(values[f"{h}_count"]), float(values[f"{h}_sum"])) for h in WAITS}
    found["batches"] = (float(values["vigil_query_batches_total"]), float(values["vigil_query_cache_misses_total"]))
    return found


def run_clients(items, clients, handle):
    """Hands `items` out, in order, to `clients` threads with a connection
    each, calling handle(conn, item); returns the seconds it all took. Any
    exception ends the run and is raised here."""
    lock = threading.Lock()
    items = list(items)
    failures = []

    def work():
        conn = connect()
        try:
            while True:
                with lock:
                    if not items:
                        return
                    item = items.pop(0)
                handle(conn, item)
        except Exception as e:  # noqa: BLE001 - handed to the caller
            with lock:
                failures.append(e)
                items.clear()

    start = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return time.perf_counter() - start


def store_all(db, recs, clients):
    """Stores `recs` in batches of 100 from `clients` threads; returns seconds."""
    batches = [recs[i : i + 100] for i in range(0, len(recs), 100)]
    return run_clients(
        batches, clients, lambda conn, batch: post(conn, "/storeEmbeddings", {**CREDS, "dbName": db, "records": batch})
    )


def raw_embed(recs):
    """Seconds vigil.embed(text[]) takes over `recs` in batches of 100, one connection."""
    script = ["\\timing on"]
    for i in range(0, len(recs), 100):
        texts = [r["title"] + "\n" + r["content"] for r in recs[i : i + 100]]
        script.append(
            "SELECT count(*) FROM vigil.embed(ARRAY(SELECT jsonb_array_elements_text($b$%s$b$::jsonb)));"
            % json.dumps(texts)
        )
    out = subprocess.run(PSQL, input="\n".join(script), text=True, check=True, stdout=subprocess.PIPE).stdout
    return sum(float(line.split()[1]) for line in out.splitlines() if line.startswith("Time:")) / 1000


def latencies(path, db, queries, count):
    """p50 and p99 in ms, requests per second, the fewest results in an
    answer, how many got 503 timeout, and the share of one core the load
    generator itself used (it runs on the same 2 cores), of `count`
    requests from 16 clients, each asking the next of `queries` (in turn).
    The clients are wrk's (`DRIVER`, default) or this script's threads."""
    if DRIVER == "wrk":
        return wrk_latencies(path, db, queries, count)
    return thread_latencies(path, db, queries, count)


def wrk_latencies(path, db, queries, count):
    """latencies() from wrk (one thread, 16 connections, search.lua): a C
    event loop that costs the machine a few percent of one core, where the
    threads below cost 16 to 28%. wrk's percentiles count every answer, so a
    503 timeout counts at its time (there are none in a normal run)."""
    asked = [queries[i % len(queries)] for i in range(count + CLIENTS)]  # + those in flight at the stop
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as qf:
        qf.write("".join(json.dumps(q) + "\n" for q in asked))
        qf.flush()
        env = {**os.environ, "BENCH_QUERY_FILE": qf.name, "BENCH_REQUESTS": str(count),
               "BENCH_USER_KEY_JSON": json.dumps(CREDS["userKey"]), "BENCH_ACCOUNT_JSON": json.dumps(CREDS["account"]),
               "BENCH_DB_JSON": json.dumps(db)}
        cpu = os.times()
        wrk = subprocess.Popen(
            ["wrk", "-t1", f"-c{CLIENTS}", "-d600s", "--timeout", "30s", "-s", WRK_SCRIPT,
             f"{os.environ['VIGIL_HTTP']}{path}"],
            env=env, text=True, stdout=subprocess.PIPE)
        out = []
        for line in wrk.stdout:  # search.lua's line when the answers are in: end the run as Ctrl-C does
            out.append(line)
            if line == "ANSWERED\n":
                wrk.send_signal(signal.SIGINT)
        if wrk.wait() != 0:
            raise RuntimeError(f"{path}: wrk exited with {wrk.returncode}: {''.join(out)}")
        cpu_after = os.times()
    got = json.loads(next(line for line in out if line.startswith("{")))
    if got["other"] or got["answered"] < count:
        raise RuntimeError(f"{path}: wrk: {got}")
    client_cpu = (cpu_after.children_user + cpu_after.children_system
                  - cpu.children_user - cpu.children_system) / got["seconds"]
    return got["p50"], got["p99"], got["requests"] / got["seconds"], got["fewest"], got["timeouts"], client_cpu


def thread_latencies(path, db, queries, count):
    """latencies() from 16 threads of this script (`BENCH_DRIVER=python`),
    each with a connection, timing only the answered requests."""
    lock = threading.Lock()
    times, results, timeouts = [], [], []

    def handle(conn, i):
        body = {**CREDS, "dbName": db, "query": queries[i % len(queries)], "limit": 10}
        t0 = time.perf_counter()
        status, data = request(conn, path, body)
        elapsed = time.perf_counter() - t0
        if status == 503 and b'"timeout"' in data:
            with lock:
                timeouts.append(elapsed)
            return
        if status != 200:
            raise RuntimeError(f"{path}: {status} {data[:300]!r}")
        with lock:
            times.append(elapsed * 1000)
            results.append(len(json.loads(data)))

    cpu = time.process_time()
    wall = run_clients(range(count), CLIENTS, handle)
    cpu = time.process_time() - cpu
    times.sort()
    return (
        statistics.median(times),
        times[min(len(times) - 1, int(len(times) * 0.99))],
        count / wall,
        min(results),
        len(timeouts),
        cpu / wall,
    )


class MachineProfile:
    """`perf record -a -g` of the whole machine for as long as the `with`
    block runs; `shares()` then gives each part's share of both cores."""

    PARTS = (
        ("idle", lambda comm, dso: comm == "swapper"),
        ("ONNX Runtime", lambda comm, dso: "libonnxruntime" in dso),
        ("PostgreSQL", lambda comm, dso: comm == "postgres"),
        ("sidecar", lambda comm, dso: comm.startswith("tokio") or comm.startswith("vigil")),
        ("load generator", lambda comm, dso: comm.startswith("python") or comm.startswith("wrk")),
    )

    def __enter__(self):
        if not shutil.which("perf"):
            sys.exit("BENCH_PERF=1 needs perf (Debian's package linux-perf)")
        self.data = tempfile.NamedTemporaryFile(suffix=".perf", delete=False).name
        self.perf = subprocess.Popen(["perf", "record", "-a", "-g", "-F", "499", "-o", self.data],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc):
        self.perf.send_signal(signal.SIGINT)
        self.perf.wait()

    def shares(self, rate):
        """Each part's share of both cores, and what that is per request at
        `rate` requests a second."""
        out = subprocess.run(["perf", "report", "-i", self.data, "--no-children", "--sort", "comm,dso",
                              "-g", "none", "--stdio", "--percent-limit", "0"],
                             check=True, text=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
        os.unlink(self.data)
        totals = {name: 0.0 for name, _ in self.PARTS}
        totals["other"] = 0.0
        for line in out.splitlines():
            fields = line.split()
            if len(fields) < 3 or not fields[0].endswith("%"):
                continue
            share, comm, dso = float(fields[0][:-1]), fields[1], " ".join(fields[2:])
            name = next((n for n, match in self.PARTS if match(comm, dso)), "other")
            totals[name] += share
        cores = os.cpu_count()
        return ", ".join(f"{name} {share:.0f}%" for name, share in totals.items()) + "; per request " + ", ".join(
            f"{name} {share / 100 * cores / rate * 1000:.2f} ms" for name, share in totals.items() if name != "idle")


def sql_latencies():
    """One client in SQL, no HTTP: p50/p99/max of each search over the
    labelled queries in the big database, and of the model alone on the same
    queries: the machine's speed today, beside the figures it sets."""
    rows = [line.split("\t", 1)[1] for line in QUERY_LINES]
    script = f"""
SET vigil.account = '{CREDS["account"]}';
CREATE TEMP TABLE q (i serial, query text);
INSERT INTO q (query) VALUES {",".join("($q$%s$q$)" % r for r in rows)};
CREATE TEMP TABLE t (kind text, ms float8);
SELECT count(*) FROM vigil.hybrid_search('warm up', 10, 'bench');
DO $$
DECLARE r record; t0 timestamptz;
BEGIN
    FOR r IN SELECT query FROM q ORDER BY i LOOP
        t0 := clock_timestamp(); PERFORM vigil.embed(r.query);
        INSERT INTO t VALUES ('vigil.embed, the model alone', extract(epoch FROM clock_timestamp() - t0) * 1000);
        t0 := clock_timestamp(); PERFORM count(*) FROM vigil.query_embeddings(r.query, 'bench', 10);
        INSERT INTO t VALUES ('query_embeddings k 10', extract(epoch FROM clock_timestamp() - t0) * 1000);
        t0 := clock_timestamp(); PERFORM count(*) FROM vigil.keyword_search(r.query, 50, 'bench');
        INSERT INTO t VALUES ('keyword_search k 50', extract(epoch FROM clock_timestamp() - t0) * 1000);
        t0 := clock_timestamp(); PERFORM count(*) FROM vigil.hybrid_search(r.query, 10, 'bench');
        INSERT INTO t VALUES ('hybrid_search k 10', extract(epoch FROM clock_timestamp() - t0) * 1000);
    END LOOP;
END $$;
SELECT 'RESULT ' || kind || ', one client in SQL, ' || count(*) || ' queries: p50 '
       || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) || ' ms, p99 '
       || round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1) || ' ms, max '
       || round(max(ms)::numeric, 1) || ' ms'
FROM t GROUP BY kind ORDER BY kind;
"""
    out = subprocess.run(PSQL, input=script, text=True, check=True, stdout=subprocess.PIPE).stdout
    for line in out.splitlines():
        if line.startswith("RESULT "):
            print(line[len("RESULT ") :], flush=True)


def paths(n_small):
    """The two paths of a search in the 1% database, in SQL: the exact scan
    vigil._nearest takes there, against the filtered graph scan it declines."""
    script = f"""
SET vigil.account = '{CREDS["account"]}';
CREATE TEMP TABLE qv AS SELECT i, vigil.embed('query number ' || i || ' about software') AS v
FROM generate_series(1, 50) i;
DO $$
DECLARE db_id bigint := vigil._database('small'); t0 timestamptz; exact float8; graph float8; n bigint;
BEGIN
    t0 := clock_timestamp();
    PERFORM (SELECT count(*) FROM (SELECT r.id FROM vigil.vector_records r WHERE r.db = db_id
             ORDER BY vigil.cosine_distance(r.embedding, q.v) LIMIT 10) x) FROM qv q;
    exact := extract(epoch FROM clock_timestamp() - t0) * 1000 / 50;
    SET LOCAL vigil.hnsw_iterative_scan = strict;
    SET LOCAL enable_sort = off;  -- so the plan is the graph, not a sort of the database
    t0 := clock_timestamp();
    SELECT min(c) INTO n FROM (SELECT (SELECT count(*) FROM (SELECT r.id FROM vigil.vector_records r WHERE r.db = db_id
             ORDER BY r.embedding OPERATOR(vigil.<=>) q.v LIMIT 10) x) AS c FROM qv q) y;
    graph := extract(epoch FROM clock_timestamp() - t0) * 1000 / 50;
    RAISE NOTICE 'RESULT 1%% database ({n_small} records), limit 10, in SQL: exact scan % ms, filtered graph scan % ms (fewest results %)',
        round(exact::numeric, 2), round(graph::numeric, 2), n;
END
$$;
"""
    out = subprocess.run(PSQL, input=script, text=True, check=True, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT).stdout
    for line in out.splitlines():
        if "RESULT" in line:
            print(line.split("RESULT ", 1)[1], flush=True)


def load(recs, small):
    """Stores the records, measuring against the raw model (see the module doc)."""
    conn = connect()
    for db in ("bench", "small"):
        try:
            post(conn, "/deleteDatabase", {**CREDS, "dbName": db})
        except RuntimeError:
            pass
        post(conn, "/createDatabase", {**CREDS, "dbName": db})

    sample = recs[:SAMPLE]
    raw = raw_embed(sample)
    stored = store_all("bench", sample, 1)
    print(
        f"RESULT store {SAMPLE} records, one client, batches of 100: {SAMPLE / stored:.1f} records/s; "
        f"raw vigil.embed(text[]) same texts and batches: {SAMPLE / raw:.1f} texts/s; ratio {raw / stored:.2f}",
        flush=True,
    )
    rest = recs[SAMPLE:]
    seconds = store_all("bench", rest, 2)
    print(f"RESULT store {len(rest)} more records, two clients: {len(rest) / seconds:.1f} records/s "
          f"({seconds / 60:.1f} min)", flush=True)
    store_all("small", small, 2)
    # The searches are timed on a settled cluster: vacuumed, analysed, and
    # with the storing's dirty pages written (else a timed checkpoint may
    # write them beside the first searches).
    subprocess.run(PSQL, input="VACUUM ANALYZE vigil.vector_records; VACUUM ANALYZE vigil.vector_terms; CHECKPOINT;",
                   text=True, check=True, stdout=subprocess.DEVNULL)


def main():
    print(f"records: {RECORDS} paragraphs of Debian package descriptions", flush=True)
    recs = records()
    small = recs[: max(RECORDS // 100, 10)]
    stored_count = subprocess.run(
        PSQL, input="SELECT string_agg(name || '=' || records, ' ' ORDER BY name) FROM vigil.vector_databases;",
        text=True, check=True, stdout=subprocess.PIPE).stdout.strip()
    if os.environ.get("BENCH_REUSE") == "1" and stored_count == f"bench={RECORDS} small={len(small)}":
        print(f"reusing the stored databases ({stored_count}): no storing figures this run", flush=True)
    else:
        load(recs, small)
    paths(len(small))
    sql_latencies()
    queries = [line.split("\t", 1)[1] for line in QUERY_LINES]
    # Every request a query never asked before: a labelled query with one
    # word added, a different set of words for each path (the cache is
    # shared), so the sidecar's cache of query embeddings never hits and every
    # search runs the model. Each word is one word piece, so a query stays as
    # long as a real one (11.1 word pieces on average, 12.1 with the word); a
    # number such as a run id would add about eight.
    extra = {
        "/queryEmbeddings": "today please now again online quickly here also really simply free new".split(),
        "/hybridSearch": "fast easy small good best latest useful common basic simple modern portable".split(),
    }
    for db, n in (("bench", RECORDS), ("small", len(small))):
        for path in ("/queryEmbeddings", "/hybridSearch"):
            # Every pooled backend loads the model on its first call (16 at
            # once on 2 cores can outlast a request's time limit): not measured.
            latencies(path, db, queries, 8 * CLIENTS)
            kinds = [("the 300 labelled queries in turn", queries)]
            if db == "bench":
                # New to this path and to the other (the cache is shared).
                words = extra[path]
                assert QUERIES <= len(queries) * len(words), "BENCH_QUERIES: more than the distinct queries"
                distinct = [f"{queries[i % len(queries)]} {words[i // len(queries)]}" for i in range(QUERIES)]
                kinds.append(("every query new", distinct))
            for kind, asked in kinds:
                sampled = db == "bench" and os.environ.get("BENCH_PERF") == "1"
                waited_before = waits()
                with MachineProfile() if sampled else contextlib.nullcontext() as profile:
                    p50, p99, rate, fewest, timeouts, client_cpu = latencies(path, db, asked, QUERIES)
                waited = {h: (c - waited_before[h][0], t - waited_before[h][1]) for h, (c, t) in waits().items()}
                print(f"RESULT {path} over {n} records ({db}), {CLIENTS} clients, {QUERIES} requests, "
                      f"{kind}: p50 {p50:.1f} ms, p99 {p99:.1f} ms (of those answered), "
                      f"{rate:.0f} requests/s, fewest results {fewest}, {timeouts} over the time limit (503); "
                      f"the load generator ({DRIVER}) used {client_cpu:.0%} of one core",
                      flush=True)
                calls, texts = waited.pop("batches")
                if calls > 0:
                    print(f"  the model's calls for queries: {calls:.0f}, {texts / calls:.2f} queries a call on average",
                          flush=True)
                for h, (count, total) in waited.items():
                    if count > 0:
                        print(f"  waiting {WAITS[h]} ({h}): {count:.0f} requests, "
                              f"{1000 * total / count:.1f} ms on average", flush=True)
                if fewest < 10 and n >= 10:
                    print(f"WRONG: {path} over {n} records answered a search with {fewest} results of 10", flush=True)
                if profile:
                    print(f"PROFILE {path}, {kind}, share of both cores: {profile.shares(rate)}", flush=True)


if __name__ == "__main__":
    main()
