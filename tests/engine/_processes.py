"""What the tests of helper processes share: whether a process is still running."""


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie has exited); reads /proc."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "\nState:\tZ" not in fh.read()
    except FileNotFoundError:
        return False
