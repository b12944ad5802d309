"""`python -m runner`: the command line of runner.cli."""

import sys

from runner.cli import main

sys.exit(main())
