"""``python -m reduced_odes._native._precompile PATH NAME PARENT``: compile the scans of a
twin's integrator.

Started by :func:`reduced_odes._native._twin.load_twin` on the integrator's first compile
for a leg size, with a core idle, so that its scans compile there while the first run
compiles the stepping.  It
exits with the run that started it (``PARENT``, its pid): a run killed during its first
compile leaves no helper compiling on (up to 870 s at ``K = M = 5``).
"""

import sys
from pathlib import Path

from .._lifetime import exit_with_parent

if __name__ == "__main__":
    path, name, parent = sys.argv[1:]
    exit_with_parent(int(parent))  # first: importing numba and the twin takes seconds

    from ._solve import compile_scans
    from ._twin import import_twin

    compile_scans(import_twin(Path(path), name))
