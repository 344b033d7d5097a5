"""The error every storage module raises for a file that cannot be used (its own module, so
that reading entries lazily needs nothing of the store that reads the file)."""


class BaselineError(Exception):
    """A baseline or report file cannot be used; the message names the file and the fix."""
