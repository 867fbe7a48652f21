"""The soak of `make bench-soak`: a steady, mixed load on a live sidecar,
with its memory and its database backends' sampled over time.

Requests start at a fixed rate (a scheduler thread, not a closed loop, so a
slow answer does not slow the load down) and are served by a pool of
threads. The mix, per 100 requests: 30 risk assessments of 500 customers
(so their history grows), 5 feedback labels, 3 identity checks (a PNG made
here), 15 stores, 25 similarity searches, 10 hybrid searches, 5 listings,
and 7 refusals (a wrong API key, a malformed body), each with the status it
must get. An error is any other status, a 5xx, or no answer.

Memory is from /proc: the sidecar's resident memory (VmRSS), and each
backend's private memory (RssAnon: its resident memory less the shared
buffers and mapped files, the model among them, which it shares with the
others) for the backends of the application role (`vigil_app`), whose pids
the superuser's psql lists.
"""

import argparse
import json
import random
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

WORDS = ("refund parcel invoice warehouse courier battery charger laptop screen "
         "delivery address payment card receipt order return warranty repair "
         "shipping tracking customer account password login").split()


def png(width, height, seed):
    """A small RGB PNG of noise, made with zlib alone."""
    rng = random.Random(seed)
    rows = b"".join(b"\0" + bytes(rng.randrange(256) for _ in range(3 * width)) for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def multipart(field, filename, data):
    boundary = "soak%016x" % random.getrandbits(64)
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{filename}\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


class Soak:
    def __init__(self, args):
        self.base = args.base
        self.api_key = args.api_key
        self.accounts = [a.split("=", 1) for a in args.accounts]
        self.transactions = []
        self.lock = threading.Lock()
        self.requests = 0
        self.errors = Counter()
        self.latency = defaultdict(list)
        self.image = png(320, 200, 7)

    def send(self, name, path, body=None, headers=None, expect=(200,), raw=None, content_type="application/json"):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.base + path, data=data, method="POST" if data is not None else "GET")
        if data is not None:
            request.add_header("content-type", content_type)
        for k, v in (headers or {}).items():
            request.add_header(k, v)
        start = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, payload = response.status, response.read()
        except urllib.error.HTTPError as e:
            status, payload = e.code, e.read()
        except Exception as e:  # no answer at all
            status, payload = None, str(e).encode()
        elapsed = time.monotonic() - start
        with self.lock:
            self.requests += 1
            self.latency[name].append(elapsed)
            if status not in expect:
                self.errors[f"{name} {status}"] += 1
        return status, payload

    def account(self):
        account, user_key = random.choice(self.accounts)
        return {"account": account, "userKey": user_key, "dbName": "soak"}

    def one(self):
        r = random.randrange(100)
        key = {"x-api-key": self.api_key}
        if r < 30:
            n = random.randrange(500)
            status, payload = self.send("transaction", "/api/transaction", {
                "customerEmail": f"soak{n}@example.com", "amount": round(random.uniform(5, 900), 2),
                "deviceFingerprint": f"device-{n % 300}", "ipAddress": f"198.51.100.{n % 250 + 1}",
                "paymentMethod": f"card-{n}"}, key)
            if status == 200:
                with self.lock:
                    self.transactions.append(json.loads(payload)["transactionId"])
                    del self.transactions[:-1000]
        elif r < 35:
            with self.lock:
                chosen = random.choice(self.transactions) if self.transactions else None
            if chosen:
                label = random.choice(["legit", "legit", "legit", "chargeback"])
                self.send("feedback", f"/api/transaction/{chosen}/feedback", {"label": label}, key)
        elif r < 38:
            body, ctype = multipart("image", "id.png", self.image)
            self.send("identity", "/assess-id", headers=key, raw=body, content_type=ctype)
        elif r < 53:
            words = " ".join(random.choices(WORDS, k=12))
            self.send("store", "/storeEmbedding", {**self.account(), "title": words[:30], "content": words},
                      expect=(201,))
        elif r < 78:
            query = " ".join(random.choices(WORDS, k=3))
            self.send("query", "/queryEmbeddings", {**self.account(), "query": query, "limit": 10})
        elif r < 88:
            query = " ".join(random.choices(WORDS, k=3))
            self.send("hybrid", "/hybridSearch", {**self.account(), "query": query, "limit": 10})
        elif r < 93:
            self.send("list", "/getEmbeddings", {**self.account(), "start": 0, "limit": 20})
        elif r < 96:
            self.send("wrong key", "/api/transaction", {"amount": 1}, {"x-api-key": "vk_" + "0" * 64},
                      expect=(401, 429))
        else:
            self.send("bad body", "/queryEmbeddings", {**self.account(), "query": "q", "limit": -1}, expect=(400,))


def rss_kb(pid, field="VmRSS:"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cached_queries(base):
    """Query embeddings the sidecar has computed and kept (its cache's misses;
    the cache keeps at most --query-cache-entries, about 1.6 kB each)."""
    try:
        with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
            for line in response.read().decode().splitlines():
                if line.startswith("vigil_query_cache_misses_total "):
                    return int(float(line.split()[1]))
    except Exception:
        return -1
    return 0


def backends(psql):
    out = subprocess.run(psql.split() + ["-c", "SELECT pid FROM pg_stat_activity WHERE usename = 'vigil_app'"],
                         capture_output=True, text=True, check=True).stdout
    return [int(p) for p in out.split()]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base", required=True)
    p.add_argument("--api-key", required=True)
    p.add_argument("--sidecar-pid", type=int, required=True)
    p.add_argument("--psql", required=True)
    p.add_argument("--seconds", type=float, default=1800)
    p.add_argument("--rate", type=float, default=20)
    p.add_argument("--sample", type=float, default=60)
    p.add_argument("accounts", nargs="+", help="ACCOUNT=USER_KEY")
    args = p.parse_args()
    soak = Soak(args)
    for account, user_key in soak.accounts:
        soak.send("create", "/createDatabase", {"account": account, "userKey": user_key, "dbName": "soak"},
                  expect=(200, 201))

    rows = []

    def sample(t):
        pids = backends(args.psql)
        sizes = [s for s in (rss_kb(pid, "RssAnon:") for pid in pids) if s is not None]
        with soak.lock:
            rows.append((t, soak.requests, sum(soak.errors.values()), (rss_kb(args.sidecar_pid) or 0) / 1024,
                         cached_queries(args.base), len(sizes), sum(sizes) / 1024, max(sizes, default=0) / 1024))
        print("%6.0f s %8d requests %5d errors  sidecar %6.1f MB (%6d query embeddings computed)  "
              "%2d backends %7.1f MB private (largest %6.1f)" % rows[-1],
              flush=True)

    start = time.monotonic()
    next_sample = args.sample
    interval = 1.0 / args.rate
    with ThreadPoolExecutor(max_workers=32) as pool:
        n = 0
        while True:
            now = time.monotonic() - start
            if now >= args.seconds:
                break
            if now >= next_sample:
                sample(now)
                next_sample += args.sample
            due = n * interval
            if due > now:
                time.sleep(min(due - now, 0.05))
                continue
            pool.submit(soak.one)
            n += 1
    sample(time.monotonic() - start)

    print("\nlatency by request (ms): p50 p99 count")
    for name, times in sorted(soak.latency.items()):
        times.sort()
        print("  %-12s %8.1f %8.1f %7d" % (name, 1000 * times[len(times) // 2],
                                           1000 * times[min(len(times) - 1, int(len(times) * 0.99))], len(times)))
    print("errors:", dict(soak.errors) if soak.errors else "none")
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        print("after warm-up (%.0f s to %.0f s): sidecar %+.1f MB (%.1f to %.1f) while it computed %d more "
              "query embeddings, backends %+.1f MB in all (%.1f to %.1f), largest backend %.1f to %.1f MB" % (
                  first[0], last[0], last[3] - first[3], first[3], last[3], last[4] - first[4],
                  last[6] - first[6], first[6], last[6], first[7], last[7]))
    raise SystemExit(1 if soak.errors else 0)


if __name__ == "__main__":
    main()
