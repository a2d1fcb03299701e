"""A cluster engine for sweeps: dask.distributed behind a plain ``concurrent.futures.Executor``.

:func:`cluster_executor` turns the value of ``--scheduler`` into an executor
that :func:`~reduced_odes._sweep.run_sweep` (and anything else that takes an
``Executor``) can use.  Workers only compute: the client receives every result
and writes the results file, so workers need no shared filesystem, and a
rerun resumes from that file exactly as a local run does.  A worker lost
mid-run costs only its unfinished tasks, which the scheduler runs again.
"""

from __future__ import annotations

import concurrent.futures as cf
import re

from ._params import ParameterError

__all__ = ["CONNECT_TIMEOUT_S", "MAX_CONNECT_TIMEOUT_S", "check_connect_timeout",
           "cluster_executor"]

#: How long to wait for a scheduler before declaring it unreachable (``--connect-timeout``).
CONNECT_TIMEOUT_S = 5.0
#: The longest wait ``--connect-timeout`` accepts: an hour.
MAX_CONNECT_TIMEOUT_S = 3600.0
_ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx|ws|wss)://[^\s/]+(:\d+)?/?$|^[^\s:/]+:\d+$")


class _DaskExecutor(cf.Executor):
    """A dask client's executor that closes the client (and its local cluster) on shutdown."""

    def __init__(self, client, cluster=None):
        self.client, self.cluster = client, cluster
        self._inner = client.get_executor(pure=False)  # a rerun must recompute, not reuse

    @property
    def max_workers(self) -> int:
        """Worker threads on the cluster now (sizes the work kept in flight)."""
        return max(1, sum(self.client.nthreads().values()))

    def submit(self, fn, /, *args, **kwargs):
        return self._inner.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._inner.shutdown(wait=wait)
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def check_connect_timeout(seconds: float) -> None:
    """Refuse a wait for the scheduler outside ``(0, MAX_CONNECT_TIMEOUT_S]`` seconds.

    Examples
    --------
    >>> check_connect_timeout(0.5)
    >>> check_connect_timeout(0)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: connect_timeout=0 s; allowed: 0 < seconds <= 3600
    """
    if not (0 < seconds <= MAX_CONNECT_TIMEOUT_S):  # NaN fails too
        raise ParameterError(f"connect_timeout={seconds:g} s; allowed: 0 < seconds <= "
                             f"{MAX_CONNECT_TIMEOUT_S:g}")


def cluster_executor(scheduler: str, *, workers: int | None = None,
                     connect_timeout: float = CONNECT_TIMEOUT_S) -> cf.Executor:
    """The executor for ``--scheduler ADDRESS|local``; shut it down to release the cluster.

    Parameters
    ----------
    scheduler : str
        ``"local"``: start a ``LocalCluster`` with ``workers`` worker processes
        (default: one per core) on this machine.  Otherwise the address of a
        running dask scheduler, ``tcp://host:port`` or ``host:port``.
    workers : int, optional
        Worker processes of the local cluster (only with ``"local"``).
    connect_timeout : float, optional
        Seconds to wait for the scheduler at an address before declaring it
        unreachable (default ``CONNECT_TIMEOUT_S``, 5; at most an hour).

    Returns
    -------
    concurrent.futures.Executor

    Raises
    ------
    ParameterError
        dask.distributed is not installed, the address is malformed, or no
        scheduler answers there within ``connect_timeout`` (checked here,
        before any work).

    Examples
    --------
    >>> cluster_executor("tcp://127.0.0.1:1", workers=None)  # doctest: +SKIP
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: scheduler='tcp://127.0.0.1:1': no dask scheduler ...
    >>> cluster_executor("not an address")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: scheduler='not an address'; allowed: local,
    tcp://HOST:PORT or HOST:PORT
    """
    _check_arguments(scheduler, workers, connect_timeout)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ParameterError(f"scheduler={scheduler!r} needs dask.distributed: "
                             f"pip install 'reduced-odes[distributed]'") from None
    if scheduler == "local":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        return _DaskExecutor(Client(cluster), cluster)
    try:
        client = Client(scheduler, timeout=connect_timeout)
    except (OSError, TimeoutError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ParameterError(f"scheduler={scheduler!r}: no dask scheduler answered within "
                             f"{connect_timeout:g} s ({reason})") from None
    return _DaskExecutor(client)


def _check_arguments(scheduler: str, workers: int | None, connect_timeout: float) -> None:
    """:func:`cluster_executor`'s arguments, refused in one line before anything starts."""
    if scheduler != "local" and not _ADDRESS.match(scheduler):
        raise ParameterError(f"scheduler={scheduler!r}; allowed: local, tcp://HOST:PORT "
                             f"or HOST:PORT")
    check_connect_timeout(connect_timeout)
    if workers is not None and (scheduler != "local" or workers < 1):
        raise ParameterError(f"workers={workers!r}: an integer >= 1, only with scheduler=local")
