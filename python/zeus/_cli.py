"""The `zeus` console command of the pip package: runs the C++ `zeus` tool
bundled in the wheel (zeus/bin/zeus, with the bundled traces in
zeus/share/zeus), so every subcommand is there: simulate, monitor,
power-limit, show-env, serve, exporter and daemon (`zeus --help`).
`ZEUS_CLI` names another binary to run instead.
"""

import os
import sys


def binary_path():
    """The `zeus` binary this command runs; None when the wheel has none."""
    override = os.environ.get("ZEUS_CLI")
    if override:
        return override
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "zeus")
    return path if os.path.isfile(path) else None


def main():
    path = binary_path()
    if path is None:
        sys.stderr.write("zeus: this zeus package has no command-line tool (built without "
                         "zeus/bin/zeus); install it with `pip install ./python` from a clone\n")
        return 127
    try:
        os.execv(path, ["zeus"] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write(f"zeus: cannot run {path}: {e}\n")
        return 126


if __name__ == "__main__":
    sys.exit(main())
