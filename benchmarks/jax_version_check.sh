#!/usr/bin/env bash
# The recorder on the installed JAX (made for jax 0.11.2 on the GPU machine), in one command,
# from the repository root, with pytest-jaxperf NOT installed (it is loaded from this
# checkout) and no network:
#   (a) the start-up self-check, under JAX_PLATFORMS=cpu (and on the default backend when it
#       is not the CPU), printed as a dict ({} = every metric measured);
#   (b) the example project's side-effect tests with --jaxperf (their trace counts);
#   (c) our `-m jax_internals` tests on JAX_PLATFORMS=cpu, with xdist, under a time limit.
# About 4 minutes at most. Writes only under $OUT (when set) or a fresh /tmp folder; the
# exit status is 1 when any part failed.
#   bash benchmarks/jax_version_check.sh            # python3, -n 8
#   PYTHON=.venv/bin/python N=2 LIMIT=900 bash benchmarks/jax_version_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
case $PY in /*) ;; */*) PY="$PWD/$PY" ;; esac  # (b) runs in example_project
N=${N:-8}
LIMIT=${LIMIT:-180}  # seconds for (c)
WORK=$(mktemp -d "${OUT:-/tmp}/jaxperf-version-check-XXXXXX")
# The plugin and the example from this checkout. Pytester's sessions (in-process and
# subprocess) load plugins named in PYTEST_PLUGINS as the outer one does (pytester removes
# PYTEST_ADDOPTS from their environment, and autoload is off).
export PYTHONPATH=".:example_project${PYTHONPATH:+:$PYTHONPATH}"
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
export PYTEST_PLUGINS="pytest_jaxperf.plugin,xdist.plugin"
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
unset JAX_COMPILATION_CACHE_DIR PYTEST_ADDOPTS
status=0
echo "work folder: $WORK"
"$PY" -c 'import sys, jax, jaxlib; print("python", sys.version.split()[0], "jax", jax.__version__, "jaxlib", jaxlib.__version__)'

selfcheck() {  # $1: JAX_PLATFORMS value ("" = unset: JAX's default backend)
    if [ -n "$1" ]; then export JAX_PLATFORMS=$1; else unset JAX_PLATFORMS; fi
    timeout 60 "$PY" - "$WORK" <<'EOF'
import sys
from pathlib import Path

import jax

from pytest_jaxperf.measure import _jaxhooks
from pytest_jaxperf.measure.recorder import RECORDER

RECORDER.install()
RECORDER.isolate()  # as the session does before a recorded test's self-check
problems = RECORDER.self_check(Path(sys.argv[1]))
print(f"self-check on {jax.default_backend()}: hook set {_jaxhooks.hook_set()}; "
      f"missing {_jaxhooks.missing()}; problems {problems}")
sys.exit(1 if problems else 0)
EOF
}

echo "== (a) self-check"
selfcheck cpu || status=1
if [ "$(env -u JAX_PLATFORMS timeout 60 "$PY" -c 'import jax; print(jax.default_backend())' 2>/dev/null)" != cpu ]; then
    selfcheck "" || status=1
fi
export JAX_PLATFORMS=cpu

echo "== (b) example project: tests/test_side_effects.py with --jaxperf on cpu"
(cd example_project && JAX_PLATFORMS=cpu PYTHONPATH="..:.${PYTHONPATH:+:$PYTHONPATH}" \
    timeout 90 "$PY" -m pytest -q -p no:cacheprovider -p pytest_jaxperf.plugin \
    --jaxperf --jaxperf-allow-partial --basetemp="$WORK/example" \
    --jaxperf-json="$WORK/example.json" --jaxperf-baseline="$WORK/none.json" \
    tests/test_side_effects.py >"$WORK/example.txt" 2>&1) || status=1
grep -E "jaxperf:|passed|failed|error" "$WORK/example.txt" | tail -6

echo "== (c) -m jax_internals tests on cpu, -n $N (limit $LIMIT s)"
JAX_PLATFORMS=cpu timeout "$LIMIT" "$PY" -m pytest -q -p no:cacheprovider -p pytest_jaxperf.plugin \
    -p xdist.plugin -m jax_internals -n "$N" --basetemp="$WORK/tests" -rfE \
    tests >"$WORK/tests.txt" 2>&1
rc=$?
[ $rc = 124 ] && echo "(timed out after $LIMIT s)"
[ $rc = 0 ] || status=1
grep -E "^(FAILED|ERROR)" "$WORK/tests.txt" | head -40
tail -1 "$WORK/tests.txt"
echo "full output: $WORK/tests.txt, $WORK/example.txt"
echo "overall: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
