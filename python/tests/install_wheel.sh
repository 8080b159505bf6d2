#!/bin/sh
# Makes a fresh venv at $ZEUS_VENV with $ZEUS_PYTHON (--system-site-packages,
# so Debian's torch and pytest are visible) and installs the wheel of
# $ZEUS_WHEEL_DIR into it with pip, offline.
set -eu
rm -rf "$ZEUS_VENV"
"$ZEUS_PYTHON" -m venv --system-site-packages "$ZEUS_VENV"
"$ZEUS_VENV/bin/python" -m pip install --no-index --no-deps --disable-pip-version-check \
  --force-reinstall -q "$ZEUS_WHEEL_DIR"/zeus-*.whl
cd /
"$ZEUS_VENV/bin/python" -c "import zeus, zeus.monitor, zeus.optimizer.power_limit; print('zeus', zeus.__version__, 'from', zeus.__file__)"
