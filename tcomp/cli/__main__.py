"""``python -m tcomp.cli``: the ``tcomp`` command."""

import sys

from . import main

sys.exit(main())
