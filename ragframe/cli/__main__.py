"""``python -m ragframe.cli``: the ``ragframe`` command."""

import sys

from ragframe.cli import main

sys.exit(main())
