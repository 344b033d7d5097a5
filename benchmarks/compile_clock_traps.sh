#!/bin/bash
# The compile clock (--jaxperf-compile-clock=instructions) on the example project's traps:
# a copy of example_project in WORKDIR (the committed baselines are never touched), a
# baseline of the selected tests saved there under the clock with no trap on, then one run
# of the same tests per trap (JAXPERF_EXAMPLE_REGRESSION), gated against it. Printed per
# run: exit code, seconds, the counted phases and every breach or not-gated line.
#
# Run: benchmarks/compile_clock_traps.sh WORKDIR "TEST_ID [TEST_ID ...]" TRAP [TRAP ...]
#   e.g. benchmarks/compile_clock_traps.sh /tmp/traps \
#        tests/test_layer.py::test_forward_passes_compile_once double_work
# Needs valgrind and pytest-jaxperf[instructions]; PYTHON (default: python) runs pytest,
# under `nice -n 5`. 4-5 minutes per run of one test on 2 shared cores.
set -u
work=$1 sel=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && cp -r "$here/example_project" "$work" && rm -rf "$work/.jaxperf"
cd "$work" || exit 1
export PYTHONPATH="$here:$work${PYTHONPATH:+:$PYTHONPATH}"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(nproc) CPUs; $(valgrind --version)"
echo "tests: $sel"
run() {  # NAME TRAP [EXTRA]
  echo "=== $1 (JAXPERF_EXAMPLE_REGRESSION=$2) $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
  local start
  start=$(date +%s)
  # shellcheck disable=SC2086
  JAXPERF_EXAMPLE_REGRESSION=$2 nice -n 5 "${PYTHON:-python}" -m pytest -q -p no:cacheprovider \
    --jaxperf --jaxperf-compile-clock=instructions --jaxperf-baseline=.jaxperf/traps.json \
    --jaxperf-json="run-$1.json" ${3:-} $sel > "log-$1.txt" 2>&1
  echo "exit $? in $(( $(date +%s) - start )) s"
  grep -E "instructions counted|instructions of|not gated|not applied|failed|passed|FAILED" "log-$1.txt"
}
run save "" --jaxperf-save
for trap in "$@"; do run "$trap" "$trap"; done
