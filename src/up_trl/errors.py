"""The one error every layer raises for a mistake the user makes: `up-trl` prints it as one line and exits 2."""


class UsageError(ValueError):
    """A mistake on the command line, in a recipe or in what they name (one line, exit 2, like argparse)."""


def is_a_file(output_dir, flag: str = "--output_dir") -> str:
    """The one line for an output folder that names a file (the CLI's check and the run's lock)."""
    return f"{flag} {output_dir} is a file: name a folder (it is created if missing)."
