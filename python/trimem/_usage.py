"""The command line's one error type, apart from the CLI so that commands (the demo, the
benchmark harness) can raise it without importing the CLI that imports them."""

__all__ = ["UsageError"]


class UsageError(Exception):
    """A bad command-line argument that only the command can see (a data folder that is not
    there, a value the engine would refuse). :func:`trimem.cli.main` reports it like argparse
    does, with the command's usage line, and exits 2. Start the message with ``argument --x:``
    when one option is to blame."""
