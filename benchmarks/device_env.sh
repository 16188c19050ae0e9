# shellcheck shell=bash
# Sourced by the device_*.sh scripts: put carried wheels (.whl/, e.g. distro) and this checkout on
# PYTHONPATH, and make $OUT. The lent GPU machine has no network, so pip installs only carried files.
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
