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
# Bytecode as `python3 -m pip install .` leaves it (pip compiles every module at install): this machine's
# environment sets PYTHONDONTWRITEBYTECODE, so a checkout run by path would compile every gpudoctor module from
# source on every run, a cost no installed copy pays. GD_NO_PYC=1 keeps that condition (to measure it).
if [ -z "${GD_NO_PYC:-}" ]; then
  [ -d /tmp/site ] && python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1
  for tree in "$PWD" "$PWD"/.carry/*/; do
    [ -d "$tree/gpudoctor" ] && python3 -m compileall -q -j 0 "$tree/gpudoctor" >/dev/null 2>&1
  done
fi
