"""``python -m minipaimon_core.cli``: the command line."""

import sys

from . import main

sys.exit(main())
