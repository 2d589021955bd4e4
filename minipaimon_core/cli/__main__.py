"""``python -m minipaimon_core.cli``: the command line."""

import sys

from .cli import main

sys.exit(main())
