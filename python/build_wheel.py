#!/usr/bin/env python3
"""Builds the zeus wheel: the pure-Python package python/zeus plus
libzeus_c.so, tagged py3-none-linux_x86_64 (one wheel for every CPython >= 3.9:
the library is reached through ctypes, so nothing depends on the Python ABI).

    build_wheel.py --library build/python/libzeus_c.so [--cli build/tools/zeus] --out dist/

With --cli, the wheel also holds the `zeus` tool (zeus/bin/zeus), the bundled
data it reads (zeus/share/zeus, from data/) and a `zeus` console command
(zeus._cli) that runs it.

Needs only the standard library (no setuptools, no network).
"""

import argparse
import base64
import csv
import hashlib
import io
import os
import platform
import re
import stat
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.join(HERE, "zeus")
DATA_DIR = os.path.join(os.path.dirname(HERE), "data")
# A fixed timestamp makes the wheel reproducible (zip cannot store < 1980).
EPOCH = (1980, 1, 1, 0, 0, 0)


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def package_files():
    files = []
    for root, dirs, names in os.walk(PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                files.append((os.path.relpath(path, HERE), path))
    return files


def data_files():
    """(archive name, path) of the bundled data, under zeus/share/zeus: the
    tool finds it at <its directory>/../share/zeus."""
    files = []
    for root, dirs, names in os.walk(DATA_DIR):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            files.append(("zeus/share/zeus/" + os.path.relpath(path, DATA_DIR), path))
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True, help="path of libzeus_c.so")
    parser.add_argument("--cli", help="path of the zeus tool to bundle (default: none)")
    parser.add_argument("--version",
                        help="the package version (default: zeus.__core_version__)")
    parser.add_argument("--out", required=True, help="directory the wheel is written to")
    parser.add_argument("--platform-tag", default="linux_" + platform.machine(),
                        help="wheel platform tag (default linux_<machine>)")
    args = parser.parse_args()
    if not os.path.isfile(args.library):
        sys.exit(f"build_wheel.py: --library {args.library}: no such file")
    if args.cli is not None and not os.path.isfile(args.cli):
        sys.exit(f"build_wheel.py: --cli {args.cli}: no such file")

    name = "zeus"
    with open(os.path.join(PACKAGE_DIR, "__init__.py")) as f:
        package_version = re.search(r'^__core_version__ = "([^"]+)"', f.read(),
                                    re.M).group(1)
    if args.version is None:
        args.version = package_version
    elif args.version != package_version:
        sys.exit(f"build_wheel.py: --version {args.version} differs from zeus.__core_version__ "
                 f"{package_version} (python/zeus/__init__.py)")
    tag = f"py3-none-{args.platform_tag}"
    dist_info = f"{name}-{args.version}.dist-info"
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {name}\n"
        f"Version: {args.version}\n"
        "Summary: GPU energy measurement and optimisation for deep learning "
        "(Zeus API on a C++ core)\n"
        "Requires-Python: >=3.9\n"
        "License: Apache-2.0\n")
    wheel = ("Wheel-Version: 1.0\n"
             "Generator: zeus build_wheel.py\n"
             "Root-Is-Purelib: false\n"
             f"Tag: {tag}\n")

    entries = []  # (archive name, bytes, mode)
    for arcname, path in package_files():
        with open(path, "rb") as f:
            entries.append((arcname, f.read(), 0o644))
    with open(args.library, "rb") as f:
        entries.append((f"{name}/libzeus_c.so", f.read(), 0o755))
    if args.cli is not None:
        with open(args.cli, "rb") as f:
            entries.append((f"{name}/bin/zeus", f.read(), 0o755))
        for arcname, path in data_files():
            with open(path, "rb") as f:
                entries.append((arcname, f.read(), 0o644))
        entries.append((f"{dist_info}/entry_points.txt",
                        b"[console_scripts]\nzeus = zeus._cli:main\n", 0o644))
    entries.append((f"{dist_info}/METADATA", metadata.encode(), 0o644))
    entries.append((f"{dist_info}/WHEEL", wheel.encode(), 0o644))
    # RECORD is CSV: names with commas (some bundled profiles) are quoted.
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for n, d, _ in entries:
        writer.writerow([n, record_hash(d), len(d)])
    writer.writerow([f"{dist_info}/RECORD", "", ""])
    entries.append((f"{dist_info}/RECORD", record.getvalue().encode(), 0o644))

    os.makedirs(args.out, exist_ok=True)
    wheel_path = os.path.join(args.out, f"{name}-{args.version}-{tag}.whl")
    with zipfile.ZipFile(wheel_path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for arcname, data, mode in entries:
            info = zipfile.ZipInfo(arcname, date_time=EPOCH)
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    print(wheel_path)


if __name__ == "__main__":
    main()
