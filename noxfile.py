"""The test matrix over the supported JAX versions (`pip install nox`, then `nox`).

    nox -s tests                     # every JAX version below, one virtualenv each
    nox -s "tests(jax='0.6.2')"      # the oldest supported only
    nox -s tests -- -x               # arguments after `--` go to pytest

nox is not a dependency of the package. The newest JAX runs the whole suite; the older
ones run the tests whose outcome depends on JAX's internals (recording, causes, trust,
invariance, the example project): the rest of the suite is plain Python over records.
"""

from __future__ import annotations

import nox

NEWEST = "0.10.2"
JAX_VERSIONS = ["0.6.2", "0.7.2", "0.8.3", "0.9.2", NEWEST]
JAX_DEPENDENT = [
    "tests/test_recording.py",
    "tests/test_causes.py",
    "tests/test_citizen.py",
    "tests/test_trust.py",
    "tests/test_invariance.py",
    "tests/test_example_project.py",
    "tests/test_example_regressions.py",
    "tests/test_user_settings.py",
    "tests/test_program_sizes.py",
    "tests/test_cross_machine.py",
    "tests/test_instructions.py",
]

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
@nox.parametrize("jax", JAX_VERSIONS)
def tests(session: nox.Session, jax: str) -> None:
    session.install("-e", ".[test]", "-e", "./example_project", f"jax=={jax}", f"jaxlib=={jax}")
    paths = [] if jax == NEWEST else JAX_DEPENDENT
    session.run(
        "python", "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider",
        *paths, *session.posargs,
        env={"JAX_PLATFORMS": "cpu"},
    )  # fmt: skip
