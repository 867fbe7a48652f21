"""The in-memory HNSW libraries `make bench-hnsw` measures vigil_hnsw against.

usage:
  libraries.py build LIB DATA INDEX --m M --ef-construction EF --threads N
  libraries.py search LIB DATA INDEX --ef EF --passes P --got GOT
  libraries.py exact DATA --got GOT
  libraries.py selftest

LIB is `faiss` (faiss-cpu's IndexHNSWFlat: vectors in f32, inner product) or
`usearch` (usearch's HNSW, cosine, vectors in f16: the two bytes a dimension
vigil_hnsw's cosine index keeps). Both come from PyPI, pinned by hash in
bench/hnsw/requirements.txt; bench/hnsw/bench.sh runs this in a venv
of them.

DATA names two files that bench/hnsw/bench.sh writes from the bench cluster,
DATA-items.copy and DATA-queries.copy: `COPY (SELECT id::int4, v::real[] ...
ORDER BY id) TO STDOUT (FORMAT binary)`, so the libraries index exactly the rows
and search exactly the queries vigil_hnsw does, bit for bit. Rows and queries
are scaled to unit length (cosine distance is one minus the inner product of
unit vectors); a zero vector has no direction and is left out, as vigil_hnsw
leaves it out of a cosine index.

  build   builds the index over the rows on N threads (the library's own
          threads: faiss's OpenMP, usearch's `threads`), graph parameters M
          (links per element, twice as many on the bottom layer, as in
          vigil_hnsw) and EF (the build's beam), and saves it to INDEX. Prints
          `LIB_build_s=` (the build alone: the vectors are in memory already)
          and `LIB_index_bytes=` (the size of the saved index: its vectors and
          links, what it holds in memory).
  search  loads INDEX and searches the top 10 of every query on one thread
          (vigil_hnsw's queries each run in one backend), beam EF (faiss's
          efSearch, usearch's expansion_search), all queries in one call of
          the library, so no interpreter time is counted: after a warm-up of
          3 queries, the best of P passes. Prints `LIB_qps_EF=` and
          `LIB_short_EF=` (queries that got fewer than 10 rows) and writes
          what each query got to GOT as `qid,id` lines, for the bench to
          score against its exact top 10 in SQL.
  exact   the exact top 10 of every query in memory (faiss's IndexFlatIP, one
          query at a time on one thread): `exact_mem_qps=` and GOT. Scored
          like the others, it checks that the files hold the bench's vectors:
          its recall must be 1.
  selftest  the above on small random vectors written in the same format.
"""

import argparse
import os
import struct
import sys
import tempfile
import time

# One thread unless a build asks for more (OpenBLAS, used by faiss's exact
# search, reads this when it loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

PGCOPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
FLOAT4OID = 700
K = 10


def read_copy(path):
    """(ids, vectors) from a binary COPY of (int4, real[]) rows, every array
    one-dimensional, without NULLs and of one length."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(PGCOPY_SIGNATURE):
        sys.exit(f"{path}: not a binary COPY")
    pos = len(PGCOPY_SIGNATURE) + 4
    (ext,) = struct.unpack_from(">i", data, pos)
    pos += 4 + ext
    if struct.unpack_from(">h", data, pos)[0] == -1:
        return np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
    # The first row tells the length of every row: 2 + 8 + 4 + 20 + 8 * dims bytes.
    dims = struct.unpack_from(">i", data, pos + 2 + 8 + 4 + 12)[0]
    row = np.dtype([
        ("fields", ">i2"), ("id_len", ">i4"), ("id", ">i4"), ("v_len", ">i4"),
        ("ndim", ">i4"), ("has_null", ">i4"), ("elem_type", ">i4"), ("dim", ">i4"), ("lbound", ">i4"),
        ("v", [("len", ">i4"), ("x", ">f4")], (dims,)),
    ])
    body = len(data) - pos - 2
    if body % row.itemsize or struct.unpack_from(">h", data, len(data) - 2)[0] != -1:
        sys.exit(f"{path}: rows of unequal length (every vector must have {dims} dimensions)")
    rows = np.frombuffer(data, row, body // row.itemsize, pos)
    ok = ((rows["fields"] == 2) & (rows["id_len"] == 4) & (rows["v_len"] == 20 + 8 * dims)
          & (rows["ndim"] == 1) & (rows["has_null"] == 0) & (rows["elem_type"] == FLOAT4OID)
          & (rows["dim"] == dims) & np.all(rows["v"]["len"] == 4, axis=1))
    if not ok.all():
        sys.exit(f"{path}: row {int(np.argmin(ok)) + 1} is not (int4, real[{dims}]) without NULLs")
    return rows["id"].astype(np.int64), np.ascontiguousarray(rows["v"]["x"], dtype=np.float32)


def unit(vectors):
    """Rows scaled to unit length (in f32, as the libraries compute), and the
    mask of the nonzero ones."""
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
    nonzero = norms > 0
    out = np.zeros_like(vectors)
    out[nonzero] = (vectors[nonzero] / norms[nonzero, None]).astype(np.float32)
    return out, nonzero


def load(data):
    ids, rows = read_copy(data + "-items.copy")
    qids, queries = read_copy(data + "-queries.copy")
    rows, nonzero = unit(rows)
    queries, _ = unit(queries)
    # Labels are positions among the indexed rows; ids[label] is the row's id.
    return ids[nonzero], np.ascontiguousarray(rows[nonzero]), qids, queries


def build(lib, rows, m, ef_construction, threads, index_path):
    if lib == "faiss":
        import faiss
        index = faiss.IndexHNSWFlat(rows.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        faiss.omp_set_num_threads(threads)
        t0 = time.perf_counter()
        index.add(rows)
        secs = time.perf_counter() - t0
        faiss.write_index(index, index_path)
    else:
        from usearch.index import Index
        index = Index(ndim=rows.shape[1], metric="cos", dtype="f16", connectivity=m,
                      expansion_add=ef_construction)
        keys = np.arange(len(rows), dtype=np.uint64)
        t0 = time.perf_counter()
        index.add(keys, rows, threads=threads)
        secs = time.perf_counter() - t0
        if len(index) != len(rows):
            sys.exit(f"usearch: {len(index)} of {len(rows)} rows indexed")
        index.save(index_path)
    return secs, os.path.getsize(index_path)


def searcher(lib, index_path, ef):
    """A function from the queries to their labels (-1 where none), one thread."""
    if lib == "faiss":
        import faiss
        faiss.omp_set_num_threads(1)
        index = faiss.read_index(index_path)
        index.hnsw.efSearch = ef

        def search(queries):
            return index.search(queries, K)[1]
    else:
        from usearch.index import Index
        index = Index.restore(index_path)
        index.expansion_search = ef

        def search(queries):
            found = index.search(queries, K, threads=1)
            labels = found.keys.astype(np.int64)
            labels[np.arange(K)[None, :] >= found.counts[:, None]] = -1
            return labels
    return search


def write_got(path, qids, ids, labels):
    with open(path, "w") as f:
        for qid, row in zip(qids.tolist(), labels.tolist()):
            for label in row:
                if label >= 0:
                    f.write(f"{qid},{ids[label]}\n")


def cmd_build(a):
    ids, rows, _, _ = load(a.data)
    secs, size = build(a.lib, rows, a.m, a.ef_construction, a.threads, a.index)
    print(f"{a.lib}_build_s={secs:.2f}")
    print(f"{a.lib}_index_bytes={size}")


def cmd_search(a):
    ids, _, qids, queries = load(a.data)
    search = searcher(a.lib, a.index, a.ef)
    search(queries[:3])
    best = 0.0
    for _ in range(a.passes):
        t0 = time.perf_counter()
        labels = search(queries)
        best = max(best, len(queries) / (time.perf_counter() - t0))
    write_got(a.got, qids, ids, labels)
    print(f"{a.lib}_qps_{a.ef}={best:.1f}")
    print(f"{a.lib}_short_{a.ef}={int(np.sum(np.sum(labels >= 0, axis=1) < K))}")


def cmd_exact(a):
    import faiss
    faiss.omp_set_num_threads(1)
    ids, rows, qids, queries = load(a.data)
    index = faiss.IndexFlatIP(rows.shape[1])
    index.add(rows)
    labels = np.empty((len(queries), K), np.int64)
    t0 = time.perf_counter()
    for i in range(len(queries)):
        labels[i] = index.search(queries[i:i + 1], K)[1][0]
    qps = len(queries) / (time.perf_counter() - t0)
    write_got(a.got, qids, ids, labels)
    print(f"exact_mem_qps={qps:.1f}")


def write_copy(path, ids, vectors):
    """A binary COPY file of (int4, real[]) rows, as PostgreSQL writes one."""
    with open(path, "wb") as f:
        f.write(PGCOPY_SIGNATURE + struct.pack(">ii", 0, 0))
        dims = vectors.shape[1]
        for i, v in zip(ids.tolist(), vectors):
            f.write(struct.pack(">hii", 2, 4, i))
            f.write(struct.pack(">iiiiii", 20 + 8 * dims, 1, 0, FLOAT4OID, dims, 1))
            body = np.empty(dims, [("len", ">i4"), ("x", ">f4")])
            body["len"] = 4
            body["x"] = v
            f.write(body.tobytes())
        f.write(struct.pack(">h", -1))


def cmd_selftest(_):
    """Every command on random clustered vectors: the file format read back
    bit for bit, the exact search against numpy, and each library's recall."""
    rng = np.random.default_rng(7)
    n, nq, dims = 3000, 100, 64
    centres = rng.normal(size=(30, dims))
    rows = (centres[rng.integers(0, 30, n)] + 0.3 * rng.normal(size=(n, dims))).astype(np.float32)
    rows[5] = 0  # left out, as vigil_hnsw leaves a zero vector out of a cosine index
    queries = (centres[rng.integers(0, 30, nq)] + 0.3 * rng.normal(size=(nq, dims))).astype(np.float32)
    ids, qids = np.arange(1, n + 1), np.arange(1, nq + 1)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "t")
        write_copy(data + "-items.copy", ids, rows)
        write_copy(data + "-queries.copy", qids, queries)
        got_ids, got_rows = read_copy(data + "-items.copy")
        assert (got_ids == ids).all() and (got_rows.view(np.uint32) == rows.view(np.uint32)).all()
        kept, unit_rows, _, unit_queries = load(data)
        assert len(kept) == n - 1 and 6 not in kept
        truth = np.argsort(-(unit_queries @ unit_rows.T), axis=1, kind="stable")[:, :K]

        def recall(got):
            pairs = {}
            for line in open(got):
                qid, i = map(int, line.split(","))
                pairs.setdefault(qid, set()).add(i)
            hits = sum(len(pairs.get(int(q), set()) & set(kept[truth[j]].tolist())) for j, q in enumerate(qids))
            return hits / (K * nq)

        def run(argv):
            out = os.path.join(tmp, "out")
            with open(out, "w") as f:
                old, sys.stdout = sys.stdout, f
                try:
                    main(argv)
                finally:
                    sys.stdout = old
            return dict(line.strip().split("=", 1) for line in open(out))

        got = os.path.join(tmp, "got")
        r = run(["exact", data, "--got", got])
        print(f"exact: {r}, recall {recall(got):.4f}")
        assert recall(got) > 0.999
        for lib in ("faiss", "usearch"):
            index = os.path.join(tmp, lib + ".index")
            r = run(["build", lib, data, index, "--m", "16", "--ef-construction", "64", "--threads", "2"])
            print(f"{lib} build: {r}")
            for ef in (10, 40, 160):
                r = run(["search", lib, data, index, "--ef", str(ef), "--passes", "2", "--got", got])
                print(f"{lib} ef {ef}: {r}, recall {recall(got):.4f}")
                assert int(r[f"{lib}_short_{ef}"]) == 0
            assert recall(got) > 0.95, lib
    print("selftest passed")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    # build and search take a library, the exported data and the index file, then their own options.
    options = {"build": ("--m", "--ef-construction", "--threads"), "search": ("--ef", "--passes", "--got")}
    for name, flags in options.items():
        c = sub.add_parser(name)
        c.add_argument("lib", choices=["faiss", "usearch"])
        c.add_argument("data")
        c.add_argument("index")
        for flag in flags:
            c.add_argument(flag, type=str if flag == "--got" else int, required=True)
    e = sub.add_parser("exact")
    e.add_argument("data")
    e.add_argument("--got", required=True)
    sub.add_parser("selftest")
    a = p.parse_args(argv)
    {"build": cmd_build, "search": cmd_search, "exact": cmd_exact, "selftest": cmd_selftest}[a.cmd](a)


if __name__ == "__main__":
    main()
