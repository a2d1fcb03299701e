"""``python -m reduced_odes`` is the ``reduced-odes`` command."""

from .cli import run

run()
