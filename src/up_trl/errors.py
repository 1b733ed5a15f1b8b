"""The one error every layer raises for a mistake the user makes: `up-trl` prints it as one line and exits 2."""


class UsageError(ValueError):
    """A mistake on the command line, in a recipe or in what they name: `main` prints it as one line and exits 2,
    like argparse."""
