"""``python -m reduced_odes._native._precompile PATH NAME``: compile a twin's scans.

Started by :func:`reduced_odes._native._twin.load_twin` on a twin's first compile, so
that its scans compile on a second core while the first run compiles the stepping.
"""

import sys
from pathlib import Path

from ._solve import compile_scans
from ._twin import import_twin

if __name__ == "__main__":
    path, name = sys.argv[1:]
    compile_scans(import_twin(Path(path), name))
