"""``python -m keep_sdk`` runs the ``keep`` command line."""

from keep_sdk.cli import main

main()
