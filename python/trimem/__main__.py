"""``python -m trimem``: see :mod:`trimem.cli`."""

import sys

from trimem.cli import main

sys.exit(main())
