"""Tests of report.py, the summary of `make bench-hnsw`; `make test` runs them
(python3 -m unittest discover -s bench -p 'test_*.py')."""

import contextlib
import io
import os
import sys
import tempfile
import unittest

# Found both by discovery (as hnsw.test_report) and when run as a file.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402


class Interpolate(unittest.TestCase):
    # Recall 0.5 at 100 q/s is beaten by 0.6 at 150 q/s: a wider beam that
    # measured faster. The frontier is 0.8 at 50 q/s and 0.6 at 150 q/s.
    CURVE = [(0.5, 100.0), (0.6, 150.0), (0.8, 50.0)]

    def test_the_frontier_leaves_out_a_point_a_wider_beam_beats(self):
        self.assertEqual(report.frontier(self.CURVE), [(0.8, 50.0), (0.6, 150.0)])

    def test_linear_between_two_frontier_points(self):
        self.assertAlmostEqual(report.interpolate(0.7, self.CURVE), 100.0)
        self.assertAlmostEqual(report.interpolate(0.65, self.CURVE), 125.0)

    def test_on_a_frontier_point_its_qps(self):
        self.assertEqual(report.interpolate(0.8, self.CURVE), 50.0)
        self.assertEqual(report.interpolate(0.6, self.CURVE), 150.0)

    def test_below_the_frontier_but_within_the_curve_the_lowest_frontier_point(self):
        # 0.55 lies between the beaten point and the frontier: not 125, the
        # line to the beaten point, but the faster wider beam's 150.
        self.assertEqual(report.interpolate(0.55, self.CURVE), 150.0)
        self.assertEqual(report.interpolate(0.5, self.CURVE), 150.0)

    def test_outside_the_curve_none(self):
        self.assertIsNone(report.interpolate(0.49, self.CURVE))
        self.assertIsNone(report.interpolate(0.81, self.CURVE))
        self.assertIsNone(report.interpolate(0.5, []))

    def test_of_two_points_at_one_recall_the_faster(self):
        curve = [(0.7, 80.0), (0.7, 120.0), (0.9, 40.0)]
        self.assertEqual(report.interpolate(0.7, curve), 120.0)
        self.assertAlmostEqual(report.interpolate(0.8, curve), 80.0)

    def test_a_curve_without_qps_has_no_frontier(self):
        self.assertIsNone(report.interpolate(0.5, [(0.5, 0.0)]))

    def test_a_real_curve(self):
        # vigil_hnsw's points of .vigil/bench-hnsw/real.txt (ef 10, 40, 160).
        curve = [(0.9325, 2844.7), (0.9925, 1471.6), (0.9975, 303.3)]
        self.assertAlmostEqual(report.interpolate(0.95, curve), 2444.2125)
        self.assertAlmostEqual(report.interpolate(0.99, curve), 1528.8125)
        self.assertIsNone(report.interpolate(0.90, curve))


class Ratio(unittest.TestCase):
    def test_two_decimals_and_an_x(self):
        self.assertEqual(report.ratio(3.0, 2.0), "1.50x")
        self.assertEqual(report.ratio(1.0, 3.0), "0.33x")
        self.assertEqual(report.ratio(0.0, 3.0), "0.00x")

    def test_na_when_either_is_missing_or_the_divisor_zero(self):
        self.assertEqual(report.ratio(None, 2.0), "n/a")
        self.assertEqual(report.ratio(2.0, None), "n/a")
        self.assertEqual(report.ratio(None, None), "n/a")
        self.assertEqual(report.ratio(2.0, 0.0), "n/a")


class Median(unittest.TestCase):
    def test_odd_count_the_middle_value(self):
        self.assertEqual(report.median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(report.median([7.5]), 7.5)

    def test_even_count_the_mean_of_the_two_middle_values(self):
        self.assertEqual(report.median([4.0, 1.0, 3.0, 2.0]), 2.5)
        self.assertEqual(report.median([1.0, 10.0]), 5.5)

    def test_no_values_none(self):
        self.assertIsNone(report.median([]))


class Values(unittest.TestCase):
    def test_a_repeated_key_keeps_every_value_and_the_last_counts(self):
        v = report.parse("vigil_build_s=303.36\nnot a result\nvigil_build_s=247.84\nrows=5\n")
        self.assertEqual(v["vigil_build_s"], ["303.36", "247.84"])
        self.assertEqual(report.last(v, "vigil_build_s"), "247.84")
        self.assertIsNone(report.last(v, "queries"))

    def test_the_fastest_build_as_written(self):
        v = report.parse("b=10.50\nb=9.75\nb=12\n")
        self.assertEqual(report.fastest(v, "b"), "9.75")
        self.assertIsNone(report.fastest(v, "missing"))


# Two builds of each side (the faster counts), two points of each curve
# (usearch's wider beam measured faster), inserts, no pgvector.
TINY = """rows=1000
queries=100
exact_qps=50.5
exact_mem_qps=400.0
exact_mem_recall=1.0000
vigil_build_s=2.50
vigil_index_bytes=1640000
unreachable_built=0
faiss_build_s=1.00
faiss_index_bytes=1680000
usearch_build_s=2.00
usearch_index_bytes=820000
vigil_build_s=2.00
vigil_index_bytes=1640000
unreachable_built=0
faiss_build_s=1.25
faiss_index_bytes=1680000
usearch_build_s=1.60
usearch_index_bytes=820000
vigil_qps_10=2000.0
vigil_recall_10=0.9000
vigil_short_10=0
faiss_qps_10=8000.0
faiss_short_10=0
faiss_recall_10=0.8000
usearch_qps_10=4000.0
usearch_short_10=2
usearch_recall_10=0.9500
vigil_qps_40=1000.0
vigil_recall_40=1.0000
vigil_short_40=0
faiss_qps_40=4000.0
faiss_short_40=0
faiss_recall_40=1.0000
usearch_qps_40=5000.0
usearch_short_40=0
usearch_recall_40=0.9900
vigil_insert1_rps=500.4
vigil_insert2_rps=900.6
unreachable_inserted=0
unreachable_vacuumed=1
"""

# pgbench's rounds: three at one client (an odd count), four at 16 (even).
ROUNDS = """pgvector_qps_10=3000.0
pgvector_recall_10=0.9000
pgvector_short_10=0
pgvector_qps_40=1500.0
pgvector_recall_40=0.9800
pgvector_short_40=0
pgvector_build_s=3.00
pgvector_index_bytes=2000000
pgvector_insert1_rps=400
pgvector_insert2_rps=600
vigil_client1_qps=100
pgvector_client1_qps=50
client1_ratio=2
vigil_client1_qps=300
pgvector_client1_qps=150
client1_ratio=2.5
vigil_client1_qps=200
pgvector_client1_qps=100
client1_ratio=1.5
vigil_clients_qps=1000
pgvector_clients_qps=500
clients_ratio=2
vigil_clients_qps=2000
pgvector_clients_qps=1250
clients_ratio=1.6
vigil_clients_qps=3000
pgvector_clients_qps=2000
clients_ratio=1.5
vigil_clients_qps=4000
pgvector_clients_qps=1500
clients_ratio=2.2
"""


def run_main(files, *extra):
    """report.py's output over `files` ({dataset: text}) in a directory."""
    with tempfile.TemporaryDirectory() as d:
        for name, text in files.items():
            with open(os.path.join(d, name + ".txt"), "w", encoding="utf-8") as f:
                f.write(text)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            report.main([d, "--datasets", ",".join(files), "--ef-search", "10 40", "--recalls", "0.90 0.95 0.99",
                         "--threads", "4", "--dims", "384", "--clients", "16", "--client-rounds", "3", *extra])
        return out.getvalue().splitlines()


class WholeReport(unittest.TestCase):
    def test_a_small_results_file(self):
        lines = run_main({"tiny": TINY})
        self.assertTrue(lines[0].startswith("Builds on 4 threads (vigil_hnsw: every core)"))
        faiss, usearch = "faiss IndexHNSWFlat (f32)", "usearch (f16)"
        self.assertEqual([line for line in lines if line.startswith("|")], [
            "| dataset | rows | queries | exact scan in SQL (q/s) | exact in memory, faiss IndexFlatIP (q/s)"
            " | its recall@10 (checks the export) |",
            "|---|---|---|---|---|---|",
            "| tiny | 1000 | 100 | 50.5 | 400.0 | 1.0000 |",
            "| dataset | recall@10 | vigil_hnsw (q/s) | %s (q/s) | vigil_hnsw / faiss | %s (q/s)"
            " | vigil_hnsw / usearch |" % (faiss, usearch),
            "|---|---|---|---|---|---|---|",
            # vigil at its lowest point; faiss halfway; usearch below its curve.
            "| tiny | 0.90 | 2000 | 6000 | 0.33x | n/a | n/a |",
            # usearch below its frontier, at the faster wider beam.
            "| tiny | 0.95 | 1500 | 5000 | 0.30x | 5000 | 0.30x |",
            "| tiny | 0.99 | 1100 | 4200 | 0.26x | 5000 | 0.22x |",
            "| dataset | index | build (s) | vigil_hnsw's build / its | size (MB) | vigil_hnsw's size / its"
            " | bytes a row |",
            "|---|---|---|---|---|---|---|",
            "| tiny | vigil_hnsw | 2.00 | 1.00x | 1.6 | 1.00x | 1640 |",
            "| tiny | %s | 1.00 | 2.00x | 1.7 | 0.98x | 1680 |" % faiss,
            "| tiny | %s | 1.60 | 1.25x | 0.8 | 2.00x | 820 |" % usearch,
            "| tiny: ef_search | vigil_hnsw recall@10 | q/s | %s recall@10 | q/s | %s recall@10 | q/s |"
            % (faiss, usearch),
            "|---|---|---|---|---|---|---|",
            "| 10 | 0.9000 | 2000.0 | 0.8000 | 8000.0 | 0.9500 (2 short) | 4000.0 |",
            "| 40 | 1.0000 | 1000.0 | 1.0000 | 4000.0 | 0.9900 | 5000.0 |",
            "| dataset | index | inserts/s, one session | two sessions | two over one |",
            "|---|---|---|---|---|",
            "| tiny | vigil_hnsw | 500 | 901 | 1.80x |",
        ])
        self.assertIn("(raw vectors: 384 f32 = 1536 bytes a row)", lines)
        self.assertIn("tiny: vigil_hnsw elements no search reaches (hnsw_check): 0 after the last build,"
                      " 0 after the inserts, 1 after VACUUM", lines)
        self.assertFalse(any("pgbench" in line for line in lines))

    def test_with_pgvector_the_medians_of_the_rounds(self):
        lines = run_main({"tiny": TINY + ROUNDS}, "--pgvector", "0.8.0")
        self.assertIn("| tiny | pgvector 0.8.0 | 400 | 600 | 1.50x |", lines)
        # pgvector's curve: 0.90 its lowest point, 0.99 above its highest.
        self.assertIn("| tiny | 0.90 | 2000 | 6000 | 0.33x | n/a | n/a | 3000 | 0.67x |", lines)
        self.assertIn("| tiny | 0.99 | 1100 | 4200 | 0.26x | 5000 | 0.22x | n/a | n/a |", lines)
        at = lines.index("pgbench against pgvector 0.8.0, ef_search 40, medians over 3 rounds:")
        self.assertEqual(lines[at + 2:], [
            "| dataset | one client: vigil_hnsw / pgvector (q/s) | ratio | 16 clients: vigil_hnsw / pgvector (q/s)"
            " | ratio |",
            "|---|---|---|---|---|",
            "| tiny | 200 / 100 | 2.00x | 2500 / 1375 | 1.80x |",
            "",
            "tiny: each round's ratio, one client: 2.00 2.50 1.50; 16 clients: 2.00 1.60 1.50 2.20",
        ])

    def test_datasets_in_the_order_named_and_missing_values_na(self):
        partial = "rows=10\nqueries=2\nvigil_qps_10=100\nvigil_recall_10=0.5\n"
        lines = run_main({"b": partial, "a": TINY})
        rows = [line for line in lines if line.startswith(("| a |", "| b |"))]
        self.assertEqual(rows[0], "| b | 10 | 2 | n/a | n/a | n/a |")
        self.assertEqual(rows[1], "| a | 1000 | 100 | 50.5 | 400.0 | 1.0000 |")
        self.assertIn("| b | 0.90 | n/a | n/a | n/a | n/a | n/a |", lines)
        self.assertIn("| b | vigil_hnsw | n/a | n/a | n/a | n/a | n/a |", lines)
        self.assertIn("| 10 | 0.5 | 100 | n/a | n/a | n/a | n/a |", lines)


if __name__ == "__main__":
    unittest.main()
