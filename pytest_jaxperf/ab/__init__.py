"""`jaxperf ab`: the change measured against its base commit on the same machine, in the same
job, in alternating fresh processes.

Modules: `command` (the subcommand: options, the flow, exit codes), `worktree` (git: refs, the
temporary worktree of the base commit and its removal), `runner` (one pytest process per tree
and round, with the plugin's JSON report), `worker` (the pytest plugin loaded in each such
process: where the code under test was imported from), `stats` (head/base ratios and their
confidence intervals), `table` (run records of both trees -> one row per test and metric),
`render` (terminal table, markdown, JSON).

Importing this package imports neither jax nor numpy: `worker` is loaded into every run.
"""
