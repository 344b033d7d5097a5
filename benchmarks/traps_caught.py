"""Whether the example project's traps are still caught with the default tolerances, on the
same machine and across machines, quiet and beside two CPU hogs (issue 31's second half:
the settings that keep whole suites free of false failures must not let real regressions
through).

Backs docs/methodology.md: "The traps the gates are for are still caught on the same
machine and across machines with the defaults: `benchmarks/traps_caught.py`".

Run: ``.venv/bin/python benchmarks/traps_caught.py [--workdir W] [--conditions quiet,hogs]
[--traps a,b,...]`` (about 10 s per trap and condition on 2 cores).

A baseline of the whole example is saved on this machine first (quiet, into ``--workdir``;
the committed baselines are never touched). Then, per condition, the example's test file
that guards each trap (``tests/test_<module>.py``, the module named first in the trap's
description in ``jaxperf_example/regression.py``) runs with the trap switched on
(``JAXPERF_EXAMPLE_REGRESSION``), and once with none (``clean``), gated against the
committed baseline, which was measured on another machine: **across machines**, with the
run's own confirmation of compile-time breaches. The same run's report is then gated with
``jaxperf compare`` against the baseline saved here: **same machine** (compare judges the
recorded figures; it does not recompile). Printed per trap and condition: the tests the run
failed, the regressed tests of each verdict and the first line of each failure.

A trap counts as caught when at least one test regresses; ``clean`` must show none. The
traps of the steady-state runtime (``slow_2x``, ``slow_1_25x``, ``more_work``) are left to
the runtime gate's own measurements (``compile_under_load.py``, ``instructions_clock.py``):
their verdict is a timing verdict, printed here but not expected.

Exit code 0 whatever is found; non-zero when a run could not be made.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import COMMITTED, EXAMPLE, PYTEST, REGRESSION_VARIABLE, clean_env, hogs

HOGS, HOG_LIMIT = 2, 600
RUNTIME_TRAPS = frozenset({"slow_2x", "slow_1_25x", "more_work"})
_SUMMARY = re.compile(r"(\d+) failed")
_HEADLINE = re.compile(r"^jaxperf: (\S+::\S+): (.*)$")


def traps() -> dict[str, str]:
    """Trap name -> the example's test file that guards it."""
    sys.path.insert(0, str(EXAMPLE))
    from jaxperf_example.regression import REGRESSIONS

    return {name: f"tests/test_{desc.split('.', 1)[0]}.py" for name, desc in REGRESSIONS.items()}


def pytest(args: list[str], log: Path, trap: str | None, condition: str) -> int:
    env = clean_env({REGRESSION_VARIABLE: trap} if trap else None)
    ctx = hogs(HOGS, HOG_LIMIT) if condition == "hogs" else _null()
    with ctx, log.open("w") as f:
        proc = subprocess.run([*PYTEST, *args], cwd=EXAMPLE, env=env, stdout=f,
                              stderr=subprocess.STDOUT)  # fmt: skip
    if proc.returncode not in (0, 1):
        raise SystemExit(f"pytest rc={proc.returncode}: see {log}")
    return proc.returncode


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def compare(baseline: Path, report: Path) -> list[str]:
    """The first line of each regressed test's failure in `jaxperf compare`'s output."""
    cmd = [sys.executable, "-m", "pytest_jaxperf", "compare", str(baseline), str(report)]
    proc = subprocess.run(cmd, cwd=EXAMPLE, env=clean_env(), capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"jaxperf compare rc={proc.returncode}: {proc.stderr.strip()}")
    return failures(proc.stdout)


def failures(text: str) -> list[str]:
    """`test -> first reason` for each test whose failure `terminal.failure_text` printed
    (its headline ``jaxperf: NODEID: N metric(s) over the baseline or a limit``, or a
    marker error, then indented reason lines), each followed by the first source line and
    cause its failure names (``from ...``, ``cause: ...``: `diagnose`'s where and why)."""
    out: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _HEADLINE.match(line)
        if m and m.group(1) not in {o.split(" -> ")[0] for o in out}:
            reason = next((x.strip() for x in lines[i + 1 : i + 3] if x.startswith("  ")), "")
            out.append(f"{m.group(1)} -> {(reason or m.group(2))[:110]}")
            body = []
            for x in lines[i + 1 :]:
                if not x.startswith("  "):
                    break
                body.append(x.strip())
            for prefix in ("from ", "cause: "):
                said = next((x for x in body if x.startswith(prefix)), None)
                if said is not None:
                    out.append(f"{' ' * 8}{said[:150]}")
    return out


def _tests(lines: list[str]) -> int:
    """The failed tests among `failures`' lines (their causes are indented)."""
    return sum(not line.startswith(" ") for line in lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, help="baseline, reports and logs")
    parser.add_argument("--conditions", default="quiet,hogs", help="quiet and/or hogs")
    parser.add_argument("--traps", help="comma-separated trap names (default: all)")
    ns = parser.parse_args()
    work = ns.workdir or Path(tempfile.mkdtemp(prefix="jaxperf-traps-"))
    work.mkdir(parents=True, exist_ok=True)
    guarded = traps()
    chosen = ns.traps.split(",") if ns.traps else list(guarded)
    local = work / "baseline.json"
    if not local.exists():
        pytest(["--jaxperf", f"--jaxperf-baseline={local}", "--jaxperf-save"], work / "save.log",
               None, "quiet")  # fmt: skip
    print(f"same machine: {local} (saved here); across machines: {COMMITTED}")
    for condition in ns.conditions.split(","):
        for trap in ["clean", *chosen]:
            file = "tests" if trap == "clean" else guarded[trap]
            report = work / f"{condition}-{trap}.json"
            log = report.with_suffix(".log")
            args = ["--jaxperf", f"--jaxperf-baseline={COMMITTED}", f"--jaxperf-json={report}"]
            pytest([*args, file], log, None if trap == "clean" else trap, condition)
            text = log.read_text(errors="replace")
            failed = _SUMMARY.search(text.splitlines()[-1] if text else "")
            across, same = compare(COMMITTED, report), compare(local, report)
            expected = "" if trap == "clean" else (
                " (runtime: timing verdict)" if trap in RUNTIME_TRAPS else ""
            )  # fmt: skip
            print(f"\n{condition:<5} {trap:<20} {file:<26} pytest failed "
                  f"{failed.group(1) if failed else 0}; regressed across machines "
                  f"{_tests(across)}, same machine {_tests(same)}{expected}")  # fmt: skip
            for label, lines in (("across", across), ("same", same)):
                for line in lines[:12]:
                    print(f"    {label:<6} {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
