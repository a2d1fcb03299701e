"""``python -m reduced_odes`` is the ``reduced-odes`` command."""

import sys

from .cli import main

sys.exit(main())
