"""The test matrix over the supported JAX versions (`pip install nox`, then `nox`).

    nox -s tests                          # every JAX version below, one virtualenv each
    nox -s "tests(python='3.10', jax='0.6.2')"   # the oldest supported only
    nox -s tests -- -x                    # arguments after `--` go to pytest

nox is not a dependency of the package. The versions are `_jaxhooks.TESTED_JAX`, the one
list that pyproject.toml's bounds, the README and the documentation follow. The reference
JAX runs the whole suite (its numbers are the ones the tests and the example's baseline
pin); the others run `-m jax_internals`: the test files whose outcome depends on JAX's
internals (those that record real JAX programs and check what the plugin reads out of them),
each marked with `pytestmark = pytest.mark.jax_internals`. The rest is plain Python over
records, or runs JAX only to carry records through the plugin's other parts.

The oldest JAX runs on the oldest supported Python and the newest on the newest, so both
ends of both ranges are tested; the others on 3.11, or 3.12 where JAX needs it (0.11 on). A
Python nox cannot find is skipped, said in its output.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nox

PYTHONS = ("3.10", "3.11", "3.12", "3.13")  # pyproject.toml's classifiers say the same
REFERENCE = "0.10.2"


def _tested_jax() -> tuple[str, ...]:
    """`TESTED_JAX` as the package writes it, read without importing the package (nox's own
    interpreter has neither it nor jax)."""
    tree = ast.parse(Path(__file__).with_name("pytest_jaxperf").joinpath(
        "measure", "_jaxhooks.py").read_text())  # fmt: skip
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "TESTED_JAX" for t in node.targets
        ):
            return tuple(ast.literal_eval(node.value))
    raise LookupError("TESTED_JAX not found in pytest_jaxperf/measure/_jaxhooks.py")


def _python_for(jax: str, versions: tuple[str, ...]) -> str:
    if jax == versions[0]:
        return PYTHONS[0]
    if jax == versions[-1]:
        return PYTHONS[-1]
    # jax and jaxlib 0.11 and later are published for Python 3.12 and later only.
    return "3.12" if tuple(map(int, jax.split(".")[:2])) >= (0, 11) else "3.11"


JAX_VERSIONS = _tested_jax()
MATRIX = [(_python_for(jax, JAX_VERSIONS), jax) for jax in JAX_VERSIONS]

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
@nox.parametrize("python,jax", MATRIX)
def tests(session: nox.Session, jax: str) -> None:
    session.install("-e", ".[test]", "-e", "./example_project", f"jax=={jax}", f"jaxlib=={jax}")
    selection = [] if jax == REFERENCE else ["-m", "jax_internals"]
    session.run(
        "python", "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider",
        *selection, *session.posargs,
        env={"JAX_PLATFORMS": "cpu"},
    )  # fmt: skip
