"""What pytest-jaxperf costs a real test suite, and where per-test isolation spends it.

Run: ``.venv/bin/python benchmarks/overhead.py [--tests N] [--rounds R] [--diagnose]``
(defaults: 120 tests, 3 rounds, about 4 minutes on 2 CPU cores; ``--tests 200 --rounds 5``
is the thorough run, about 12 minutes).

1. Generates, in a temporary directory with its own ``pytest.ini``, a suite of ``--tests``
   small JAX unit tests over up to 10 files: module-level jitted "library" functions of a
   few ``jnp`` ops on arrays of 8-32 elements, inputs from ``np.linspace``,
   ``jnp.linspace``, ``jnp.ones``/``jnp.arange`` or ``jax.random.normal``, numpy reference
   checks. A third of the tests call with two shapes (a retrace), a sixth wrap the library
   function in a local jit. Every 10th test carries ``@pytest.mark.jaxperf``.
2. Times ``python -m pytest -q -p no:cacheprovider --durations=0`` on it in subprocesses,
   interleaved in rotating order over ``--rounds`` rounds, in these configurations:

   A  ``-p no:jaxperf``                plugin not loaded at all
   B  (no flags)                       plugin installed but off
   C  ``--jaxperf --jaxperf-all``      every test recorded
   D  ``--jaxperf``                    only the marked ~10% recorded

   and reports the median and min wall time (and median CPU time) of each. Targets:
   B/A <= 1.01 (installed but off costs nothing) and C/B <= 1.10 (recording every test
   costs at most 10%). ``--durations=0`` (same for every configuration) gives per-test call
   times, which split the extra time of C and D into what recorded and unrecorded tests pay.
3. E: in a fresh interpreter, whether ``import pytest_jaxperf.plugin`` imports jax (it must
   not) and what that import costs (``-X importtime``).
4. In-process: before every recorded test the plugin makes JAX forget the user's compiled
   functions so that counts do not depend on test order; it falls back to
   ``jax.clear_caches()`` when JAX's private caches are not as expected. Measured here,
   for that fallback: the cost of the call with N = 1, 10, 200 jitted functions cached,
   and of re-paying JAX's own helper compiles of a typical test preamble (``jnp.ones``,
   ``jnp.arange``, ``jax.random.normal``...) after it.

Runs start only once other processes leave the machine quiet (up to ``--quiet-wait`` s);
the CPU time other processes used during each run is reported, with a warning when it is
large enough to spoil wall-time ratios (the CPU-time ratios are printed too).

``--diagnose`` adds what-if configurations that patch the plugin's internals from a helper
plugin (``-p``) in the temporary directory, to show where C's and D's overhead would go:
F = C without isolation, G = C clearing only the test modules' jitted functions
(``jitted.clear_cache()``) instead of every cache, H = D with the recorded tests run last,
P = C with a run-private persistent compilation cache.

Only the standard library and jax are used.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    PYTEST,
    add_quiet_wait,
    clean_env,
    fmt,
    prepend_pythonpath,
    print_total,
    usage,
    wait_for_quiet,
)

TARGET_B_OVER_A = 1.01
TARGET_C_OVER_B = 1.10


@dataclass
class Config:
    key: str
    what: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    fresh_cache_dir: bool = False  # a new persistent-cache directory for every run


CONFIGS = [
    Config("A", "plugin disabled (-p no:jaxperf)", ["-p", "no:jaxperf"]),
    Config("B", "installed, off (no flags)", []),
    Config("C", "--jaxperf --jaxperf-all", ["--jaxperf", "--jaxperf-all"]),
    Config("D", "--jaxperf, ~10% marked", ["--jaxperf"]),
]
DIAG = "-p _jaxperf_overhead_diag"
DIAG_CONFIGS = [
    Config(
        "F",
        "C, no isolation (what-if)",
        [*DIAG.split(), "--jaxperf", "--jaxperf-all"],
        {"JAXPERF_DIAG": "noiso"},
    ),
    Config(
        "G",
        "C, evict test fns only (what-if)",
        [*DIAG.split(), "--jaxperf", "--jaxperf-all"],
        {"JAXPERF_DIAG": "targeted"},
    ),
    Config(
        "H",
        "D, recorded tests last (what-if)",
        [*DIAG.split(), "--jaxperf"],
        {"JAXPERF_DIAG": "marked_last"},
    ),
    Config(
        "P",
        "C + private persistent cache",
        ["--jaxperf", "--jaxperf-all"],
        {
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
        },
        fresh_cache_dir=True,
    ),
]

# A helper plugin for --diagnose; it patches pytest_jaxperf internals (Recorder.isolate).
DIAG_PLUGIN = '''\
"""What-if variants of pytest-jaxperf's per-test isolation (benchmarks/overhead.py)."""
import os
import sys

import pytest


MODE = os.environ.get("JAXPERF_DIAG", "")


def _evict_test_functions():
    for mod in list(sys.modules.values()):
        if os.path.basename(getattr(mod, "__file__", None) or "").startswith("test_"):
            for obj in list(vars(mod).values()):
                if hasattr(obj, "lower") and callable(getattr(obj, "clear_cache", None)):
                    obj.clear_cache()


def pytest_configure(config):
    if MODE in ("noiso", "targeted"):
        from pytest_jaxperf.measure import recorder

        if not hasattr(recorder.Recorder, "isolate"):
            raise pytest.UsageError("pytest_jaxperf.measure.recorder.Recorder.isolate is gone")
        isolate = (lambda: None) if MODE == "noiso" else _evict_test_functions
        recorder.Recorder.isolate = staticmethod(isolate)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    if MODE == "marked_last":
        items.sort(key=lambda item: item.get_closest_marker("jaxperf") is not None)
'''

# Library functions: (name, body in terms of x). The numpy reference is the same body with
# `jnp.` replaced by `np.`, so every body only uses names both modules share.
FUNCTIONS = [
    ("relu_sq", "jnp.maximum(x, 0.0) ** 2"),
    ("softplus", "jnp.log1p(jnp.exp(-jnp.abs(x))) + jnp.maximum(x, 0.0)"),
    ("gelu", "0.5 * x * (1.0 + jnp.tanh(0.7978846 * (x + 0.044715 * x**3)))"),
    ("standardize", "(x - x.mean()) / (x.std() + 1e-6)"),
    ("logsumexp", "jnp.log(jnp.sum(jnp.exp(x - x.max()))) + x.max()"),
    ("softmax", "jnp.exp(x - x.max()) / jnp.sum(jnp.exp(x - x.max()))"),
    ("mse", "jnp.mean((x - 0.5) ** 2)"),
    ("huber", "jnp.sum(jnp.where(jnp.abs(x) < 1.0, 0.5 * x**2, jnp.abs(x) - 0.5))"),
    ("running_mean", "jnp.cumsum(x) / jnp.arange(1, x.shape[0] + 1)"),
    ("gram", "jnp.outer(x, x) + jnp.eye(x.shape[0])"),
    ("horner", "((3.0 * x + 2.0) * x - 1.0) * x"),
    ("laplacian", "x[2:] - 2.0 * x[1:-1] + x[:-2]"),
    ("sq_norm", "jnp.sqrt(jnp.sum(x * x))"),
    ("sigmoid_xent", "jnp.mean(jnp.maximum(x, 0.0) - x * 0.3 + jnp.log1p(jnp.exp(-jnp.abs(x))))"),
    ("clip_scale", "jnp.clip(x, -1.0, 1.0) * 2.0 + jnp.sin(x)"),
    ("tv", "jnp.sum(jnp.abs(jnp.diff(x)))"),
    ("rbf", "jnp.exp(-((x[:, None] - x[None, :]) ** 2))"),
    ("l1_prox", "jnp.sign(x) * jnp.maximum(jnp.abs(x) - 0.1, 0.0)"),
    ("cosine", "jnp.dot(x, x[::-1]) / (jnp.dot(x, x) + 1e-6)"),
    ("poly_feat", "jnp.stack([x, x**2, x**3]).T @ jnp.ones(3)"),
]
MODULES = [
    "activations",
    "losses",
    "linalg",
    "norms",
    "optim",
    "stats",
    "signal",
    "geometry",
    "kernels",
    "metrics",
]
FUNCS_PER_MODULE = 5
SHAPES = (8, 16, 32)

PYTEST_INI = """\
[pytest]
markers =
    jaxperf: recorded by pytest-jaxperf (declared here too, for runs with -p no:jaxperf)
"""


# ----------------------------------------------------------------------------------------
# The generated suite
# ----------------------------------------------------------------------------------------
def _module_source(m: int, n_tests: int, first_test: int) -> str:
    funcs = [
        FUNCTIONS[(m * FUNCS_PER_MODULE + k) % len(FUNCTIONS)] for k in range(FUNCS_PER_MODULE)
    ]
    out = [
        f'"""Generated tests of a small JAX library module ({MODULES[m % len(MODULES)]})."""',
        "",
        "import jax",
        "import jax.numpy as jnp",
        "import numpy as np",
        "import pytest",
        "",
    ]
    for name, body in funcs:
        out += [
            "",
            "@jax.jit",
            f"def {name}(x):",
            f"    return {body}",
            "",
            "",
            f"def {name}_ref(x):",
            f"    return {body.replace('jnp.', 'np.')}",
            "",
        ]
    for t in range(n_tests):
        g = first_test + t  # global test index: decides marking, variants and shapes
        name, _ = funcs[t % len(funcs)]
        n1 = SHAPES[g % len(SHAPES)]
        n2 = SHAPES[(g + 1) % len(SHAPES)]
        variant = g % 6
        lines = []
        if g % 10 == 3:
            lines.append("@pytest.mark.jaxperf")
        lines.append(f"def test_{name}_{t}():")
        check = f"np.testing.assert_allclose(out, {name}_ref(np.asarray(x)), rtol=2e-4, atol=2e-5)"
        if variant == 0:  # numpy input, one shape
            lines += [
                f"    x = np.linspace(-2.0, 2.0, {n1}, dtype=np.float32)",
                f"    out = {name}(x)",
                f"    {check}",
            ]
        elif variant in (1, 4):  # two shapes: the library function retraces
            make = "np.linspace" if variant == 1 else "jnp.linspace"
            dtype = "np.float32" if variant == 1 else "jnp.float32"
            lines += [
                f"    for n in ({n1}, {n2}):",
                f"        x = {make}(-2.0, 2.0, n, dtype={dtype})",
                f"        out = {name}(x)",
                f"        {check}",
            ]
        elif variant == 2:  # a local jit around the library function (nested jit)
            lines += [
                "    @jax.jit",
                "    def step(x):",
                f"        return {name}(x) * 2.0 + 1.0",
                "",
                f"    x = jnp.linspace(-1.0, 1.0, {n1}, dtype=jnp.float32)",
                "    out = step(x)",
                f"    np.testing.assert_allclose(out, 2.0 * {name}_ref(np.asarray(x)) + 1.0, "
                "rtol=2e-4, atol=2e-5)",
            ]
        elif variant == 3:  # random input
            lines += [
                f"    x = jax.random.normal(jax.random.key({g}), ({n1},))",
                f"    out = {name}(x)",
                f"    {check}",
            ]
        else:  # ones/arange preamble, eager check of the output
            lines += [
                f"    x = jnp.ones(({n1},)) * 0.5 + jnp.arange({n1}) / {n1}",
                f"    out = {name}(x)",
                "    assert bool(jnp.all(jnp.isfinite(out)))",
                f"    {check}",
            ]
        out += ["", ""] + lines
    return "\n".join(out) + "\n"


@dataclass
class Suite:
    root: Path
    n_tests: int
    n_files: int
    marked: set[str]


def generate_suite(root: Path, n_tests: int) -> Suite:
    """Writes the suite under root."""
    n_files = min(len(MODULES), max(1, math.ceil(n_tests / 12)))
    (root / "pytest.ini").write_text(PYTEST_INI)
    tests_dir = root / "tests"
    tests_dir.mkdir()
    first = 0
    marked: set[str] = set()
    for m in range(n_files):
        count = n_tests // n_files + (1 if m < n_tests % n_files else 0)
        path = tests_dir / f"test_{MODULES[m]}.py"
        src = _module_source(m, count, first)
        path.write_text(src)
        lines = src.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("@pytest.mark.jaxperf"):
                test = lines[i + 1].split()[1].split("(")[0]
                marked.add(f"tests/{path.name}::{test}")
        first += count
    return Suite(root, n_tests, n_files, marked)


# ----------------------------------------------------------------------------------------
# Timed pytest runs
# ----------------------------------------------------------------------------------------
@dataclass
class Run:
    wall: float
    cpu: float  # user + system seconds of the pytest process and its children
    background: float | None  # CPU seconds used by other processes meanwhile (Linux only)
    call_marked: float  # summed "call" durations of the marked tests
    call_unmarked: float
    recorded: int | None  # "N new" of the jaxperf summary line, when there is one


_DURATION = re.compile(r"^([\d.]+)s call\s+(\S+)$", re.M)
_NEW = re.compile(r"\b(\d+) new\b")


def run_pytest(suite: Suite, cfg: Config, diag_dir: Path | None = None) -> Run:
    cmd = [*PYTEST, "--durations=0", "--durations-min=0", *cfg.args]
    env = clean_env(cfg.env)
    if diag_dir is not None:
        prepend_pythonpath(env, diag_dir)
    cache_dir = tempfile.mkdtemp(prefix="jaxperf-pcache-") if cfg.fresh_cache_dir else None
    if cache_dir:
        env["JAX_COMPILATION_CACHE_DIR"] = cache_dir
    with usage() as used:
        proc = subprocess.run(cmd, cwd=suite.root, env=env, capture_output=True, text=True)
    if cache_dir:
        shutil.rmtree(cache_dir, ignore_errors=True)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0 or not re.search(rf"\b{suite.n_tests} passed\b", out):
        sys.exit(
            f"config {cfg.key} ({' '.join(cfg.args)}) failed, rc={proc.returncode}:\n{out[-4000:]}"
        )
    marked = unmarked = 0.0
    for secs, nodeid in _DURATION.findall(out):
        if nodeid in suite.marked:
            marked += float(secs)
        else:
            unmarked += float(secs)
    new = _NEW.findall(out)
    return Run(used.wall, used.cpu, used.others(), marked, unmarked, int(new[-1]) if new else None)


# ----------------------------------------------------------------------------------------
# E: import check
# ----------------------------------------------------------------------------------------
def import_check() -> tuple[list[str], float]:
    """(heavy modules that `import pytest_jaxperf.plugin` pulled in, its import ms)."""
    code = (
        "import sys, pytest\n"
        "import pytest_jaxperf.plugin\n"
        "print(' '.join(m for m in ('jax', 'jaxlib', 'numpy') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    plugin_us = 0
    for line in proc.stderr.splitlines():
        # "import time: self [us] | cumulative | imported package"; the package's own line
        # (pytest_jaxperf, imported first) covers the plugin module and all its imports.
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "pytest_jaxperf":
            plugin_us = int(parts[1])
    return proc.stdout.split(), plugin_us / 1000.0


# ----------------------------------------------------------------------------------------
# In-process: cost of jax.clear_caches() and of re-paying helper compiles
# ----------------------------------------------------------------------------------------
def _make_functions(n: int) -> list[Callable[[Any], Any]]:
    import jax
    import jax.numpy as jnp

    fns = []
    for i in range(n):
        # A fresh function object per i, hence its own cache entries.
        def f(x: Any, c: float = i + 1.0) -> Any:
            return jnp.sin(x) * c + x

        fns.append(jax.jit(f))
    return fns


def clear_cost(sizes: tuple[int, ...]) -> dict[int, tuple[float, float]]:
    """N -> (median ms of jax.clear_caches() with N jitted functions cached, ms to refill)."""
    import jax
    import jax.numpy as jnp

    result: dict[int, tuple[float, float]] = {}
    for n in sizes:
        reps = 15 if n <= 10 else 2
        clears, fills = [], []
        fns = _make_functions(n)
        for _ in range(reps):
            jax.clear_caches()
            x = jnp.ones((8,))  # its helper compiles are in the cache too
            t0 = time.perf_counter()
            for f in fns:
                f(x).block_until_ready()
            fills.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            jax.clear_caches()
            clears.append(time.perf_counter() - t0)
        result[n] = (statistics.median(clears) * 1e3, statistics.median(fills) * 1e3)
    return result


def _preamble() -> None:
    import jax
    import jax.numpy as jnp

    x = jnp.ones((16,))
    y = jnp.zeros((4, 4))
    z = jnp.arange(16.0)
    w = y @ y
    v = jnp.sin(x) + z
    k = jax.random.normal(jax.random.key(0), (16,))
    jax.block_until_ready((w, v, k))


def preamble_cost(reps: int = 7) -> tuple[float, float, int]:
    """(ms after jax.clear_caches(), ms warm, backend compiles after a clear) of _preamble."""
    import jax
    import jax.monitoring

    compiles = [0]

    def on_duration(event: str, secs: float, **kwargs: Any) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles[0] += 1

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    cold, warm, counts = [], [], []
    try:
        for _ in range(reps):
            jax.clear_caches()
            compiles[0] = 0
            t0 = time.perf_counter()
            _preamble()
            cold.append(time.perf_counter() - t0)
            counts.append(compiles[0])
            t0 = time.perf_counter()
            _preamble()
            warm.append(time.perf_counter() - t0)
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
    return statistics.median(cold) * 1e3, statistics.median(warm) * 1e3, max(counts)


# ----------------------------------------------------------------------------------------
def _cpus() -> int:
    return os.cpu_count() or 1


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="pytest-jaxperf overhead on a generated suite")
    ap.add_argument("--tests", type=int, default=120, help="generated tests (default 120)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of A,B,C,D (default 3)")
    ap.add_argument(
        "--diagnose",
        action="store_true",
        help="also run the what-if configurations F, G, H, P (patches internals)",
    )
    add_quiet_wait(ap)
    ap.add_argument("--keep", action="store_true", help="keep the generated suite")
    ns = ap.parse_args(argv)
    if ns.tests < 1 or ns.rounds < 1:
        ap.error("--tests and --rounds must be >= 1")
    t_start = time.perf_counter()

    import jax

    print(
        f"pytest-jaxperf overhead: python {sys.version.split()[0]}, jax {jax.__version__}, "
        f"{os.cpu_count()} CPUs"
    )

    # E first: cheap, and a failure here matters regardless of the timings.
    heavy, plugin_ms = import_check()
    print(
        f"E  `import pytest_jaxperf.plugin` (pytest already imported) pulls in: "
        f"{', '.join(heavy) or 'neither jax nor numpy'} -> {_verdict('jax' not in heavy)}; "
        f"import time {plugin_ms:.1f} ms"
    )

    root = Path(tempfile.mkdtemp(prefix="jaxperf-overhead-"))
    (root / "suite").mkdir()
    suite = generate_suite(root / "suite", ns.tests)
    configs = list(CONFIGS)
    diag_dir = None
    if ns.diagnose:
        diag_dir = root / "diag"
        diag_dir.mkdir()
        (diag_dir / "_jaxperf_overhead_diag.py").write_text(DIAG_PLUGIN)
        configs += DIAG_CONFIGS
    n_marked = len(suite.marked)
    print(
        f"suite: {suite.n_tests} tests in {suite.n_files} files, {n_marked} marked "
        f"@pytest.mark.jaxperf; {ns.rounds} rounds of {','.join(c.key for c in configs)} "
        "in rotating order"
    )

    # Warm-up (imports, OS file cache), not timed.
    subprocess.run(
        [*PYTEST, "--collect-only"],
        cwd=suite.root,
        env=clean_env(),
        capture_output=True,
        check=True,
    )

    runs: dict[str, list[Run]] = {c.key: [] for c in configs}
    waited = 0.0
    for r in range(ns.rounds):
        k = r % len(configs)
        order = configs[k:] + configs[:k]
        for cfg in order:
            waited += wait_for_quiet(ns.quiet_wait)
            runs[cfg.key].append(run_pytest(suite, cfg, diag_dir))
        print(
            f"  round {r + 1}/{ns.rounds}: "
            + "  ".join(f"{c.key}={runs[c.key][-1].wall:.2f}s" for c in order)
            + "   (other processes' CPU s: "
            + " ".join(fmt(runs[c.key][-1].background, ".1f", missing="?") for c in order)
            + ")",
            flush=True,
        )
    if waited:
        print(f"  (waited {waited:.0f} s in all for other processes to go quiet before runs)")

    for key, want in (("C", suite.n_tests), ("D", n_marked)):
        got = {run.recorded for run in runs[key]}
        if got != {want}:
            print(f"warning: config {key} reported {got} recorded tests, expected {want}")

    med = {key: statistics.median(r.wall for r in rs) for key, rs in runs.items()}
    cpu = {key: statistics.median(r.cpu for r in rs) for key, rs in runs.items()}
    a = med["A"]
    print()
    print(
        f"{'':<3}{'configuration':<36}{'median s':>9}{'min s':>8}{'max s':>8}{'x A':>7}"
        f"{'cpu s':>8}{'calls s: marked':>17}{'unmarked':>10}{'others cpu s':>14}"
    )
    for cfg in configs:
        rs = runs[cfg.key]
        walls = [r.wall for r in rs]
        cm = statistics.median(r.call_marked for r in rs)
        cu = statistics.median(r.call_unmarked for r in rs)
        bgs = [r.background for r in rs if r.background is not None]
        bg = fmt(statistics.median(bgs) if bgs else None, ".1f", missing="?")
        print(
            f"{cfg.key:<3}{cfg.what:<36}{med[cfg.key]:>9.2f}{min(walls):>8.2f}"
            f"{max(walls):>8.2f}{med[cfg.key] / a:>7.3f}{cpu[cfg.key]:>8.2f}"
            f"{cm:>17.2f}{cu:>10.2f}{bg:>14}"
        )
    bg_total = [r.background for rs in runs.values() for r in rs]
    if None not in bg_total:
        share = sum(bg_total) / (sum(r.wall for rs in runs.values() for r in rs) * _cpus())
        if share > 0.05:
            print(
                f"WARNING: other processes used {share * 100:.0f}% of the machine during the "
                "timed runs; wall-time ratios are unreliable, compare the CPU-time ones"
            )
    b_a = med["B"] / med["A"]
    c_b = med["C"] / med["B"]
    d_b = med["D"] / med["B"]
    noise = statistics.median(
        (max(r.wall for r in rs) - min(r.wall for r in rs)) / med[key]
        for key, rs in runs.items()
        if key in "AB"
    )
    spread = f"{noise * 100:.1f}%" if ns.rounds > 1 else "n/a"
    print()
    print(
        f"B/A = {b_a:.3f}  target <= {TARGET_B_OVER_A:.2f}  {_verdict(b_a <= TARGET_B_OVER_A)}"
        f"  (run-to-run spread of A/B: {spread}; the plugin's import, E, is "
        f"{plugin_ms / 1e3 / a * 100:.2f}% of A; in CPU time B/A = {cpu['B'] / cpu['A']:.3f})"
    )
    print(
        f"C/B = {c_b:.3f}  target <= {TARGET_C_OVER_B:.2f}  {_verdict(c_b <= TARGET_C_OVER_B)}"
        f"  (in CPU time: {cpu['C'] / cpu['B']:.3f})"
    )
    print(
        f"D/B = {d_b:.3f}  no target; {n_marked} of {suite.n_tests} tests recorded"
        f"  (in CPU time: {cpu['D'] / cpu['B']:.3f})"
    )

    def split(key: str) -> tuple[float, float, float]:
        """(extra s in marked tests' calls, in unmarked tests' calls, elsewhere) vs B."""

        def m(attr: str, k: str) -> float:
            return statistics.median(getattr(r, attr) for r in runs[k])

        dm = m("call_marked", key) - m("call_marked", "B")
        du = m("call_unmarked", key) - m("call_unmarked", "B")
        return dm, du, med[key] - med["B"] - dm - du

    n_unmarked = suite.n_tests - n_marked
    dm, du, rest = split("C")
    extra = med["C"] - med["B"]
    print(
        f"C-B = {extra:+.2f} s = {extra / suite.n_tests * 1e3:.0f} ms per recorded test: "
        f"{dm + du:+.2f} s inside the test calls, {rest:+.2f} s elsewhere (start-up, "
        "collection, summary)"
    )
    dm, du, rest = split("D")
    extra = med["D"] - med["B"]
    print(
        f"D-B = {extra:+.2f} s = {extra / max(n_marked, 1) * 1e3:.0f} ms per recorded test: "
        f"{dm:+.2f} s in the calls of the {n_marked} recorded tests, {du:+.2f} s in those of "
        f"the {n_unmarked} unrecorded ones (recompiling what the clears evicted), "
        f"{rest:+.2f} s elsewhere"
    )
    if ns.diagnose:
        for key, base, text in (
            ("F", "C", "C without isolation: what recording itself costs"),
            ("G", "C", "C evicting only the test modules' jitted functions"),
            ("H", "D", "D with the recorded tests moved to the end"),
            ("P", "C", "C with a run-private persistent compilation cache"),
        ):
            print(
                f"{key}/B = {med[key] / med['B']:.3f} (vs {base}/B = "
                f"{med[base] / med['B']:.3f}): {text}"
            )

    # In-process isolation costs.
    print()
    print("isolation fallback, in-process (jax.clear_caches() before every recorded test):")
    for n, (clear_ms, fill_ms) in clear_cost((1, 10, 200)).items():
        print(
            f"  jax.clear_caches() with {n:>3} jitted functions cached: {clear_ms:7.2f} ms "
            f"(compiling them again afterwards: {fill_ms:7.0f} ms)"
        )
    cold_ms, warm_ms, n_compiles = preamble_cost()
    print(
        f"  preamble ones/zeros/arange/@/sin+/random.normal: {cold_ms:.0f} ms after a clear "
        f"({n_compiles} helper compiles) vs {warm_ms:.2f} ms warm: {cold_ms - warm_ms:.0f} ms"
    )
    print("  paid again by every recorded test, and by the next unrecorded test using them")

    if ns.keep:
        print(f"\nsuite kept in {suite.root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    print_total(t_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
