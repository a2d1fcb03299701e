"""The soft committee machine: teacher–student online learning, derived (see :mod:`.model`)."""

from .model import MODEL, CommitteeMachine
from .params import CommitteeParams, overlap_state

__all__ = ["MODEL", "CommitteeMachine", "CommitteeParams", "overlap_state"]
