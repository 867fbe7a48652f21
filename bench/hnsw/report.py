"""The summary of `make bench-hnsw` (bench/hnsw/bench.sh), from its results.

usage: report.py DIR --datasets real,random --ef-search "5 10 ..." --recalls "0.90 0.95"
                 --threads N --dims D --clients C --client-rounds R [--pgvector VERSION]

Reads DIR/<dataset>.txt, the `key=value` lines the bench appends as it goes
(a key repeats where a step runs more than once: a build, a pgbench round),
and prints the summary's tables in Markdown: the exact scans, queries/s at
equal recall@10 and vigil_hnsw's over each side's, builds and sizes, each
curve, the elements no search reaches, inserts, and with pgvector the medians
of pgbench's rounds. A value the results lack prints as n/a. The standard
library only, so the system's python3 runs it; test_report.py tests it.
"""

import argparse
import os
import re
import sys

NA = "n/a"


def parse(text):
    """Every value of each key, in the order written."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values.setdefault(key, []).append(value)
    return values


def last(values, key):
    """The last value of `key`, as written (a rerun step's appends the last)."""
    found = values.get(key)
    return found[-1] if found else None


def number(text):
    return None if text is None else float(text)


def frontier(points):
    """The (recall, q/s) points that no point of higher recall beats in q/s,
    highest recall first: on a shared machine a wider beam can measure faster
    than a narrower one, and such a point says nothing about the trade-off."""
    out, best = [], 0.0
    for recall, qps in sorted(points, reverse=True):
        if qps > best:
            out.append((recall, qps))
            best = qps
    return out


def interpolate(recall, points):
    """The q/s at `recall` on a curve of (recall, q/s) points: linear between
    the two frontier points around it; below the frontier's lowest point but
    within the curve, that point's q/s; None outside the curve."""
    front = frontier(points)
    if not front or recall > front[0][0] or recall < min(r for r, _ in points):
        return None
    if recall <= front[-1][0]:
        return front[-1][1]
    for (r_high, q_high), (r_low, q_low) in zip(front, front[1:]):
        if r_low < recall <= r_high:
            return q_low + (q_high - q_low) * (recall - r_low) / (r_high - r_low)
    raise AssertionError("a recall within the frontier lies between two of its points")


def ratio(a, b):
    """a / b as `0.00x`; n/a where either is missing or b is 0."""
    if a is None or not b:
        return NA
    return "%.2fx" % (a / b)


def median(values):
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def fmt(spec, value):
    return NA if value is None else spec % value


def show(text):
    return NA if text is None else text


def fastest(values, key):
    """The smallest of every value of `key`, as written (the fastest build)."""
    found = values.get(key)
    return min(found, key=float) if found else None


def row(*cells):
    """A Markdown table row."""
    return "| %s |" % " | ".join(cells)


def label(side, pgvector):
    return {
        "vigil": "vigil_hnsw",
        "faiss": "faiss IndexHNSWFlat (f32)",
        "usearch": "usearch (f16)",
        "pgvector": "pgvector %s" % pgvector,
    }[side]


def curve(values, side, ef_search):
    """`side`'s (recall, q/s) points, one an ef_search that has both."""
    points = []
    for ef in ef_search:
        recall = last(values, "%s_recall_%s" % (side, ef))
        qps = last(values, "%s_qps_%s" % (side, ef))
        if recall is not None and qps is not None:
            points.append((float(recall), float(qps)))
    return points


def report(results, ef_search, recalls, threads, dims, clients, client_rounds, pgvector=None):
    """The summary's lines after its header, for `results`: each dataset's
    name and parsed values, in order. `pgvector` is its version where it was
    measured, None where it was not."""
    sides = ["vigil", "faiss", "usearch"] + (["pgvector"] if pgvector is not None else [])
    others = sides[1:]
    name = {side: label(side, pgvector) for side in sides}
    out = [
        "Builds on %s threads (vigil_hnsw: every core), queries on one thread: vigil_hnsw (and pgvector) in" % threads,
        "one backend, a PL/pgSQL loop of SELECT ... ORDER BY v <=> q LIMIT 10; faiss and usearch in memory, all",
        "queries in one call. An in-memory library is the limit an index inside PostgreSQL approaches: vigil_hnsw",
        "over a library tells what PostgreSQL's buffers, locks, tuple fetches and executor cost.",
        "",
        "| dataset | rows | queries | exact scan in SQL (q/s) | exact in memory, faiss IndexFlatIP (q/s) | its recall@10 (checks the export) |",
        "|---|---|---|---|---|---|",
    ]
    for ds, v in results:
        keys = ("rows", "queries", "exact_qps", "exact_mem_qps", "exact_mem_recall")
        out.append(row(ds, *(show(last(v, k)) for k in keys)))

    out += [
        "",
        "Queries/s at equal recall@10 (linear between the points of each curve's frontier; n/a outside the curve),",
        "and vigil_hnsw's over each:",
        "",
        row("dataset", "recall@10", "vigil_hnsw (q/s)",
            *(c for s in others for c in ("%s (q/s)" % name[s], "vigil_hnsw / " + s))),
        "|---|---|---|" + "---|---|" * len(others),
    ]
    for ds, v in results:
        for r in recalls:
            ours = interpolate(float(r), curve(v, "vigil", ef_search))
            cells = [ds, r, fmt("%.0f", ours)]
            for side in others:
                theirs = interpolate(float(r), curve(v, side, ef_search))
                cells += [fmt("%.0f", theirs), ratio(ours, theirs)]
            out.append(row(*cells))

    out += [
        "",
        "| dataset | index | build (s) | vigil_hnsw's build / its | size (MB) | vigil_hnsw's size / its | bytes a row |",
        "|---|---|---|---|---|---|---|",
    ]
    for ds, v in results:
        our_build = number(fastest(v, "vigil_build_s"))
        our_size = number(last(v, "vigil_index_bytes"))
        rows = number(last(v, "rows"))
        for side in sides:
            build = fastest(v, side + "_build_s")
            size = number(last(v, side + "_index_bytes"))
            out.append(row(ds, name[side], show(build), ratio(our_build, number(build)),
                           fmt("%.1f", None if size is None else size / 1e6), ratio(our_size, size),
                           fmt("%.0f", None if size is None or not rows else size / rows)))
    out += ["(raw vectors: %d f32 = %d bytes a row)" % (dims, dims * 4), ""]

    for ds, v in results:
        out.append(row(ds + ": ef_search", *(c for s in sides for c in (name[s] + " recall@10", "q/s"))))
        out.append("|---|" + "---|---|" * len(sides))
        for ef in ef_search:
            cells = [ef]
            for side in sides:
                short = last(v, "%s_short_%s" % (side, ef))
                note = "" if short in (None, "0") else " (%s short)" % short
                cells += [show(last(v, "%s_recall_%s" % (side, ef))) + note, show(last(v, "%s_qps_%s" % (side, ef)))]
            out.append(row(*cells))
        out.append("")
    out += [
        "(ef_search: vigil.hnsw_ef_search, the first round of a beam twice as wide; faiss's efSearch and usearch's",
        "expansion_search, a beam at least the 10 rows asked for; pgvector's hnsw.ef_search. Equal ef is not equal work:",
        "compare at equal recall.)",
        "",
    ]

    for ds, v in results:
        out.append("%s: vigil_hnsw elements no search reaches (hnsw_check): %s after the last build, "
                   "%s after the inserts, %s after VACUUM" % (
                       ds, show(last(v, "unreachable_built")), show(last(v, "unreachable_inserted")),
                       show(last(v, "unreachable_vacuumed"))))
    out += [
        "",
        "| dataset | index | inserts/s, one session | two sessions | two over one |",
        "|---|---|---|---|---|",
    ]
    for ds, v in results:
        for side in [s for s in sides if s in ("vigil", "pgvector")]:
            one = number(last(v, side + "_insert1_rps"))
            two = number(last(v, side + "_insert2_rps"))
            out.append(row(ds, name[side], fmt("%.0f", one), fmt("%.0f", two), ratio(two, one)))

    if pgvector is not None:
        out += [
            "",
            "pgbench against pgvector %s, ef_search 40, medians over %s rounds:" % (pgvector, client_rounds),
            "",
            row("dataset", "one client: vigil_hnsw / pgvector (q/s)", "ratio",
                "%s clients: vigil_hnsw / pgvector (q/s)" % clients, "ratio"),
            "|---|---|---|---|---|",
        ]

        def med(v, key):
            return median([float(x) for x in v.get(key, [])])

        for ds, v in results:
            cells = [ds]
            for n in ("client1", "clients"):
                qps = (fmt("%.0f", med(v, "%s_%s_qps" % (side, n))) for side in ("vigil", "pgvector"))
                cells += [" / ".join(qps), fmt("%.2fx", med(v, n + "_ratio"))]
            out.append(row(*cells))
        out.append("")
        for ds, v in results:
            each = {n: " ".join("%.2f" % float(x) for x in v.get(n + "_ratio", [])) or NA
                    for n in ("client1", "clients")}
            out.append("%s: each round's ratio, one client: %s; %s clients: %s"
                       % (ds, each["client1"], clients, each["clients"]))
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("dir", help="the bench's directory, holding <dataset>.txt")
    p.add_argument("--datasets", required=True, help="comma- or space-separated, in the order to print")
    p.add_argument("--ef-search", required=True, help="the ef_search values of the curves, space-separated")
    p.add_argument("--recalls", required=True, help="the recalls to compare at, as they are to print")
    p.add_argument("--threads", required=True)
    p.add_argument("--dims", type=int, required=True)
    p.add_argument("--clients", required=True)
    p.add_argument("--client-rounds", required=True)
    p.add_argument("--pgvector", metavar="VERSION", help="pgvector's version, where it was measured")
    a = p.parse_args(argv)
    results = []
    for ds in re.split(r"[,\s]+", a.datasets.strip()):
        with open(os.path.join(a.dir, ds + ".txt"), encoding="utf-8") as f:
            results.append((ds, parse(f.read())))
    lines = report(results, a.ef_search.split(), a.recalls.split(), a.threads, a.dims,
                   a.clients, a.client_rounds, a.pgvector)
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
