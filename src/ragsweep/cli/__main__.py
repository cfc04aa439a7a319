"""`python -m ragsweep.cli`."""

from ragsweep.cli import main

raise SystemExit(main())
