"""``python -m conformance``: the command line."""

from conformance.cli import main

raise SystemExit(main())
