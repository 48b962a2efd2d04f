"""``python -m dualplane`` runs the CLI."""

from dualplane.cli.main import main

main()
