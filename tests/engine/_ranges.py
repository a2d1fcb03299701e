"""What the range tests share: values drawn from a model's declared ranges (inside and just
outside), an in-process run of the command line under a hang guard, and the outcome every
run must have."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import re
import signal

from hypothesis import strategies as st

from reduced_odes import SolverConfig
from reduced_odes.cli import main

#: The solver options of ``solve``, named by the messages as the model's parameters are.
SOLVER_NAMES = ("method", "rtol", "atol", "backend")
#: A hang guard in CPU seconds of this process, not wall seconds: a loaded machine slows a
#: run's wall time, not its CPU time, so it cannot fail a correct run.  Every run is bounded
#: by the steppers' 100,000-step budget; the costliest in-range run measured spends ~60 CPU
#: seconds on it (Radau on the pure path, then the retry on the native backend).
RUN_CPU_SECONDS = 600


def edges(allowed) -> tuple[float, float]:
    """The smallest and largest value inside a real range."""
    first = allowed.lo if not allowed.lo_open else math.nextafter(allowed.lo, math.inf)
    last = allowed.hi if not allowed.hi_open else math.nextafter(allowed.hi, -math.inf)
    return first, last


def _accepts(allowed, name: str):
    def accepted(value) -> bool:
        try:
            allowed.check(name, value)
        except ValueError:
            return False
        return True
    return accepted


def inside(name: str, allowed) -> st.SearchStrategy:
    """Values inside ``allowed``: its ends, the values next to them, tiny and huge
    magnitudes, subnormals and a log-uniform interior."""
    if allowed.kind == "flag":
        return st.booleans()
    if allowed.kind == "choice":
        return st.sampled_from(allowed.options)
    if allowed.kind == "integer":
        lo, hi = int(allowed.lo), int(min(allowed.hi, 10**18))
        ends = [lo, lo + 1, hi - 1, hi]
        log_uniform = st.floats(0, math.log(hi - lo + 1)).map(lambda x: lo + int(math.exp(x)))
        return st.one_of(st.sampled_from(ends), st.integers(lo, hi), log_uniform).filter(
            _accepts(allowed, name))
    first, last = edges(allowed)
    last = min(last, 1.7976931348623157e308)
    positive = max(first, 5e-324)
    ends = [first, last, math.nextafter(first, math.inf), math.nextafter(last, -math.inf),
            *(x for x in (5e-324, 2.2250738585072014e-308, 1e-300, 1e-100, 1e-16, 1e-8, 1.0,
                          1e8, 1e100, 1e300) if first <= x <= last)]
    log_uniform = st.floats(math.log(positive), math.log(last)).map(math.exp)
    return st.one_of(st.sampled_from(ends), st.floats(first, last), log_uniform).filter(
        _accepts(allowed, name))


def outside(allowed) -> st.SearchStrategy:
    """Command-line tokens just outside ``allowed`` (or not of its kind at all)."""
    if allowed.kind == "flag":
        return st.sampled_from(["maybe", "2"])
    if allowed.kind == "choice":
        return st.sampled_from(["nonsense", ""])
    tokens = ["nan", "inf", "-inf", "abc", "1e400"]
    if math.isfinite(allowed.lo):
        below = allowed.lo if allowed.lo_open else math.nextafter(allowed.lo, -math.inf)
        tokens += [repr(float(below)), repr(allowed.lo - 1.0)]
    if math.isfinite(allowed.hi):
        above = allowed.hi if allowed.hi_open else math.nextafter(allowed.hi, math.inf)
        tokens += [repr(float(above)), repr(allowed.hi * 2 + 1.0)]
    if allowed.kind == "integer":
        tokens.append(repr(allowed.lo + 0.5))
    return st.sampled_from(tokens)


def declared(cls) -> dict:
    """``{name: allowed range}`` of a parameter dataclass."""
    return {f.name: f.metadata["allowed"] for f in cls.declared()}


def structural(model) -> set[str]:
    """The parameters whose value selects another derived system (a new derivation costs
    seconds to minutes of SymPy): each is moved alone to its range's ends and checked."""
    defaults = model.Params()
    base = model.structure(defaults)
    found = set()
    for name, allowed in declared(model.Params).items():
        if allowed.kind in ("choice", "flag"):
            trials = list(allowed.options) if allowed.kind == "choice" else [True, False]
        else:
            first, last = edges(allowed)
            trials = [first, min(last, 1e300), (first + min(last, 1e300)) / 2]
            if allowed.kind == "integer":
                trials = [int(x) for x in trials]
        for value in trials:
            try:
                changed = dataclasses.replace(defaults, **{name: value})
            except ValueError:
                continue
            if model.structure(changed) != base:
                found.add(name)
    return found


def token(value) -> str:
    """``value`` as the command line spells it (a float to the last bit)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


#: Variants whose flow comes from the same rules as one the default run derives: the committee
#: machine's numerical-kernel activations beyond tanh.  Each is tens of seconds of SymPy (and
#: of 30-digit evaluation in the contract); their kernels are held against mpmath in
#: tests/engine/test_activations.py, and the slow runs (``-m slow``) draw and check them.
SLOW_VARIANTS = frozenset(("committee_machine", v) for v in ("sigmoid", "gelu", "softplus",
                                                              "silu"))


def default_run_variants(model) -> tuple[str, ...]:
    """``model``'s variants but its :data:`SLOW_VARIANTS`."""
    return tuple(v for v in model.variants if (model.name, v) not in SLOW_VARIANTS)


@st.composite
def settings(draw, model, pinned=frozenset(), solver: bool = True,
             slow: bool = True) -> dict:
    """``{"variant", "values", "solver"}``: a variant (not one of :data:`SLOW_VARIANTS`
    unless ``slow``), every unpinned parameter drawn inside its range or left at its
    default, and sometimes solver settings inside theirs."""
    values = {}
    for name, allowed in declared(model.Params).items():
        if name not in pinned and draw(st.booleans()):
            values[name] = draw(inside(name, allowed))
    options = {}
    if solver and draw(st.integers(0, 3)) == 0:
        ranges = declared(SolverConfig)
        options = {name: draw(inside(name, ranges[name])) for name in ("method", "rtol", "atol")
                   if draw(st.booleans())}
    variants = model.variants if slow else default_run_variants(model)
    return {"variant": draw(st.sampled_from(variants)), "values": values,
            "solver": options}


def argv(model, setting: dict) -> list[str]:
    """``solve --json`` on the pure backend with ``setting``."""
    words = ["solve", "--model", model.name, f"--{model.variant_option}", setting["variant"],
             "--json", "--backend", "python"]
    for name, value in {**setting["values"], **setting["solver"]}.items():
        words += [f"--{name}", token(value)]
    return words


class Hang(Exception):
    """A run went on past RUN_CPU_SECONDS of CPU time."""


def _hung(signum, frame):
    raise Hang


def run_cli(words: list[str], cpu_seconds: int = RUN_CPU_SECONDS) -> tuple[int, str, str]:
    """``(exit status, stdout, stderr)`` of ``reduced-odes *words``, in this process; a run
    past ``cpu_seconds`` of this process's CPU time fails the test with its command line."""
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGPROF, _hung)
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)  # CPU time: the machine's load aside
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(words)
    except SystemExit as exc:  # argparse's usage errors leave through sys.exit
        code = exc.code
    except Hang:
        raise AssertionError(f"no result after {cpu_seconds} CPU seconds: "
                             f"{' '.join(words)}") from None
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    return code, out.getvalue(), err.getvalue()


#: A stderr line that is a note, not a problem: a warning, or a one-time compile message.
NOTE = re.compile(r"reduced-odes( \w+)?: (warning: |compiling )")


def _no_constant(name: str):
    raise ValueError(f"non-finite number {name} in the JSON document")


def names_one(line: str, names) -> bool:
    """Whether ``line`` names one of ``names`` as a word (``sigma`` is not ``sigma_att``)."""
    return any(re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", line) for n in names)


def check_outcome(code: int, out: str, err: str, names, words: list[str]) -> None:
    """Exit 0 or 3 with one strict JSON document (3: one stderr line saying why), or exit 2
    with one stderr line naming one of ``names``; nothing else."""
    setting = " ".join(words)
    lines = [line for line in err.splitlines() if line.strip()]
    problems = [line for line in lines if not NOTE.match(line)]
    if code in (0, 3):
        json.loads(out, parse_constant=_no_constant)  # one document, every number finite
        assert len(problems) == (code == 3), (setting, err)
    elif code == 2:
        assert out == "" and len(problems) == 1, (setting, out, err)
        assert names_one(problems[0], names), (setting, problems[0])
    else:
        raise AssertionError(f"exit status {code}: {setting}\n{err}")
