"""The cost-model tests import their worked examples (``chapter.py``, docs/references.md) from this folder."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "examples")
for _path in (_HERE, _EXAMPLES):
    if _path not in sys.path:
        sys.path.insert(0, _path)
