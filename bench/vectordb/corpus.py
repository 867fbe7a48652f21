#!/usr/bin/env python3
"""Build a JSON-lines corpus of Debian package long descriptions.

Usage:
    python3 bench/vectordb/corpus.py [OUT] [--limit N] [--repeat-to N]

Reads `apt-cache dumpavail` and writes one JSON object per line:
    {"name": ..., "title": <short description>, "content": <long description>}
to OUT (or stdout).

Long descriptions: on Debian the Packages index carries only the one-line
description plus a Description-md5; the long text lives in the
Translation-en index, which apt does not download when Acquire::Languages is
"none" (the Docker default). When a record from dumpavail has no long
description, it is looked up by Description-md5 in the Translation-en files
under /var/lib/apt/lists (read through `apt-helper cat-file`, which handles
lz4/gz/xz). If they are missing, run once:
    apt-get update -o Acquire::Languages=en

Filters (see docs/vector-database.md): first record per package name wins; names ending in
-dbgsym, -dbg, -doc, -dev, -common, -data or starting with lib are dropped;
long descriptions shorter than 200 characters are dropped; after sorting by
name, a package whose long description is identical to an earlier kept one is
dropped. Output is sorted by name and deterministic for a given set of apt
lists.

--limit N      keep an evenly spread sample of N records (record
               floor(i * total / N) for i in 0..N-1 of the sorted corpus).
--repeat-to N  emit exactly N lines, cycling through the (possibly limited)
               corpus; the i-th repeat of a record gets " (copy i)" appended to
               its title (name and content are unchanged).
"""

import argparse
import glob
import json
import os
import subprocess
import sys

LISTS_DIR = "/var/lib/apt/lists"
APT_HELPER = "/usr/lib/apt/apt-helper"
MIN_CONTENT_CHARS = 200
SKIP_SUFFIXES = ("-dbgsym", "-dbg", "-doc", "-dev", "-common", "-data")
SKIP_PREFIXES = ("lib",)


def parse_stanzas(text):
    """Yield dicts {field: value} from deb822 text; continuation lines kept
    verbatim (with their leading space), joined by newlines."""
    for block in text.split("\n\n"):
        fields = {}
        key = None
        for line in block.split("\n"):
            if not line:
                continue
            if line[0] in " \t":
                if key is not None:
                    fields[key] += "\n" + line
                continue
            k, sep, v = line.partition(":")
            if not sep:
                key = None
                continue
            key = k.strip()
            fields[key] = v.strip()
        if fields:
            yield fields


def split_description(value):
    """Return (title, long_lines) from a Description field value."""
    lines = value.split("\n")
    return lines[0].strip(), lines[1:]


def long_to_text(lines):
    """Turn deb822 long-description lines into plain text.

    The leading space is removed; " ." lines become paragraph breaks. Within a
    paragraph, ordinary lines are re-flowed with single spaces; a line that is
    indented further or starts with a bullet begins a new line, so lists stay
    readable.
    """
    paragraphs = []
    current = []  # list of output lines of the current paragraph
    for raw in lines:
        line = raw[1:] if raw.startswith(" ") else raw.lstrip("\t")
        if line.strip() == ".":
            if current:
                paragraphs.append("\n".join(current))
                current = []
            continue
        stripped = line.strip()
        if not stripped:
            continue
        starts_block = (
            line[:1].isspace()
            or stripped[:2] in ("* ", "- ", "+ ", "o ", "• ")
            or stripped[:1] in ("*", "•")
        )
        if current and not starts_block:
            current[-1] = current[-1] + " " + stripped
        else:
            current.append(stripped)
    if current:
        paragraphs.append("\n".join(current))
    return "\n\n".join(paragraphs).strip()


def read_apt_file(path):
    if path.endswith((".lz4", ".gz", ".xz", ".bz2", ".zst", ".lzma")):
        out = subprocess.run(
            [APT_HELPER, "cat-file", path], check=True, stdout=subprocess.PIPE
        ).stdout
    else:
        with open(path, "rb") as f:
            out = f.read()
    return out.decode("utf-8", errors="replace")


def load_translations():
    """Map Description-md5 -> list of long-description lines (from
    Translation-en). Files are read in sorted path order; first wins."""
    table = {}
    paths = sorted(glob.glob(os.path.join(LISTS_DIR, "*_i18n_Translation-en*")))
    for path in paths:
        if path.endswith((".diff", ".IndexDiff")) or os.path.isdir(path):
            continue
        for st in parse_stanzas(read_apt_file(path)):
            md5 = st.get("Description-md5")
            desc = st.get("Description-en")
            if md5 and desc and md5 not in table:
                table[md5] = split_description(desc)[1]
    return table


def skipped_name(name):
    return name.endswith(SKIP_SUFFIXES) or name.startswith(SKIP_PREFIXES)


def build_corpus(stats=None):
    dump = subprocess.run(
        ["apt-cache", "dumpavail"], check=True, stdout=subprocess.PIPE
    ).stdout.decode("utf-8", errors="replace")
    translations = None

    records = {}
    total = 0
    for st in parse_stanzas(dump):
        name = st.get("Package")
        desc = st.get("Description")
        if not name or desc is None:
            continue
        total += 1
        if name in records:
            continue  # keep first record per name
        title, long_lines = split_description(desc)
        if not any(l.strip() for l in long_lines):
            if translations is None:
                translations = load_translations()
            long_lines = translations.get(st.get("Description-md5", ""), [])
        records[name] = (title, long_to_text(long_lines))

    if translations is not None and not translations:
        sys.exit(
            "corpus.py: apt-cache dumpavail has no long descriptions and no "
            "Translation-en index was found in %s; run once:\n"
            "    apt-get update -o Acquire::Languages=en" % LISTS_DIR
        )

    out = []
    seen_content = set()
    n_name = n_short = n_dupe = 0
    for name in sorted(records):
        title, content = records[name]
        if skipped_name(name):
            n_name += 1
            continue
        if len(content) < MIN_CONTENT_CHARS:
            n_short += 1
            continue
        if content in seen_content:
            n_dupe += 1
            continue
        seen_content.add(content)
        out.append({"name": name, "title": title, "content": content})

    if stats is not None:
        stats.update(
            records=total,
            unique_names=len(records),
            dropped_by_name=n_name,
            dropped_short=n_short,
            dropped_duplicate_text=n_dupe,
            kept=len(out),
        )
    return out


def sample(corpus, limit):
    n = len(corpus)
    if limit is None or limit >= n:
        return corpus
    return [corpus[(i * n) // limit] for i in range(limit)]


def repeat_to(corpus, count):
    if not corpus:
        return
    n = len(corpus)
    for j in range(count):
        rec = corpus[j % n]
        copy = j // n
        if copy:
            rec = dict(rec, title="%s (copy %d)" % (rec["title"], copy))
        yield rec


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="output path (default: stdout)")
    ap.add_argument("--limit", type=int, default=None,
                    help="evenly spread deterministic sample of N records")
    ap.add_argument("--repeat-to", type=int, default=None, metavar="N",
                    help="emit exactly N lines, cycling through the corpus")
    ap.add_argument("--stats", action="store_true",
                    help="print filter counts to stderr")
    args = ap.parse_args(argv)
    if args.limit is not None and args.limit < 0:
        ap.error("--limit must be >= 0")

    stats = {}
    corpus = sample(build_corpus(stats), args.limit)
    if args.stats:
        for k, v in stats.items():
            print("%s: %d" % (k, v), file=sys.stderr)
        print("emitted_sample: %d" % len(corpus), file=sys.stderr)
    records = repeat_to(corpus, args.repeat_to) if args.repeat_to is not None else corpus

    f = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    try:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    finally:
        if args.out:
            f.close()


if __name__ == "__main__":
    main()
