"""`python -m pytest_jaxperf`: the `jaxperf` command."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
