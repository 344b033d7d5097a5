"""The test matrix over the supported JAX versions (`pip install nox`, then `nox`).

    nox -s tests                     # every JAX version below, one virtualenv each
    nox -s "tests(jax='0.6.2')"      # the oldest supported only
    nox -s tests -- -x               # arguments after `--` go to pytest

nox is not a dependency of the package. The newest JAX runs the whole suite; the older
ones run `-m jax_internals`: the test files whose outcome depends on JAX's internals (those
that record real JAX programs and check what the plugin reads out of them), each marked with
`pytestmark = pytest.mark.jax_internals`. The rest is plain Python over records, or runs
JAX only to carry records through the plugin's other parts.
"""

from __future__ import annotations

import nox

NEWEST = "0.10.2"
JAX_VERSIONS = ["0.6.2", "0.7.2", "0.8.3", "0.9.2", NEWEST]

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
@nox.parametrize("jax", JAX_VERSIONS)
def tests(session: nox.Session, jax: str) -> None:
    session.install("-e", ".[test]", "-e", "./example_project", f"jax=={jax}", f"jaxlib=={jax}")
    selection = [] if jax == NEWEST else ["-m", "jax_internals"]
    session.run(
        "python", "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider",
        *selection, *session.posargs,
        env={"JAX_PLATFORMS": "cpu"},
    )  # fmt: skip
