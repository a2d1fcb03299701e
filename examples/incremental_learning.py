"""Incremental learning in a deep linear network: two modes, learned one after the other.

A user's model, outside the package: ``reduced-odes solve --model
examples/incremental_learning.py:MODEL --json``.  It imports what it uses to
write a model from :mod:`reduced_odes.author`, as the built-in models do.

The network ``f(x) = a1 b1 x1 + a2 b2 x2`` learns the target ``s1 x1 + s2 x2``
from ``x ~ N(0, I_2)`` under ``1/2 E[(target - f)^2]``, from ``a_i = b_i =
sigma``.  The two modes decouple, and each follows the logistic law of Saxe
et al. (2014): mode ``i`` is learned at ``T_i = ln(s_i/sigma^2 - 1)/(2 s_i)``, so
the stronger mode (``s1 > s2``) comes first and the weaker one after a plateau.

The model supplies what ``solve`` and ``sweep`` need (the numbered contract of
:class:`reduced_odes.Model`), and then each optional hook once, so that every other
command runs on it too: ``verify`` (its claims are the exact times above), ``derive``,
``figures`` and ``compare`` (online SGD on the unreduced network), with an option of
its own (``compare --seeds``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from itertools import product
from pathlib import Path

from reduced_odes import solve
from reduced_odes.author import (
    Claim,
    Crossing,
    Model,
    ParameterError,
    Parameters,
    parameter,
    positive,
)


@dataclass(frozen=True)
class IncrementalParams(Parameters):
    """Singular values of the target and the initial scale."""

    s1: float = parameter(2.0, positive(1e6), "stronger singular value (learned first)")
    s2: float = parameter(0.5, positive(1e6), "weaker singular value (learned second)")
    sigma: float = parameter(1e-3, positive(0.1), "initial scale: a_i = b_i = sigma")

    def check(self) -> None:
        if not self.s1 > self.s2:
            raise ParameterError(f"s1={self.s1!r} must be > s2={self.s2!r}")


class IncrementalLearning(Model):
    """Two modes of a deep linear network; phases ``T_1``, ``T_2``: each mode half learned."""

    name = "incremental_learning"
    description = "deep linear network learning two modes in turn (Saxe et al. 2014)"
    Params = IncrementalParams
    phase_order = ("T_1", "T_2")

    def derive(self, variant):
        import sympy as sp

        from reduced_odes.author import (
            assert_conserved,
            gaussian_expectation,
            gradient_flow,
            log_coordinate,
        )

        a1, b1, a2, b2 = sp.symbols("a1 b1 a2 b2", positive=True)
        s1, s2 = sp.symbols("s1 s2", positive=True)
        x1, x2 = sp.symbols("x1 x2", real=True)
        error = (s1 - a1 * b1) * x1 + (s2 - a2 * b2) * x2
        loss = gaussian_expectation(error**2 / 2, [x1, x2]).value
        state = (a1, b1, a2, b2)
        flow = gradient_flow(state, loss, parameters=(s1, s2))
        laws = [assert_conserved(f"a{i}^2 - b{i}^2", a**2 - b**2, state, flow.rhs)
                for i, (a, b) in enumerate(((a1, b1), (a2, b2)), 1)]
        return gradient_flow(state, loss, parameters=(s1, s2), rhs=flow.rhs,
                             coordinates=[log_coordinate(v) for v in state],
                             observables={"u1": a1 * b1, "u2": a2 * b2, "loss": sp.factor(loss)},
                             identities=laws)

    def parameter_values(self, params, variant):
        return (params.s1, params.s2)

    def initial_state(self, params, variant):
        return (math.log(params.sigma),) * 4

    def phases(self, params, variant, initial, thresholds):
        return [Crossing("T_1", "u1", params.s1 / 2), Crossing("T_2", "u2", params.s2 / 2)]

    def settled(self, params, variant):
        # Both modes within 1e-9 (relative) of their targets: ln a_i + ln b_i = ln s_i.
        t1, t2 = math.log(params.s1), math.log(params.s2)
        return lambda y: max(abs(y[0] + y[1] - t1), abs(y[2] + y[3] - t2)) - 1e-9

    def horizon(self, params, variant):
        return 10 * (1 + math.log(1 / params.sigma**2)) / params.s2

    # -- optional hooks: the commands beyond solve and sweep ----------------------------
    grids = ("quick", "default")

    def verify_settings(self, grid, variants):
        """The settings of ``grid``, and those left out with the reason."""
        sigmas = (1e-3, 1e-6) if grid == "quick" else (1e-3, 1e-6, 1e-9, 1e-12)
        pairs = ((2.0, 0.5),) if grid == "quick" else ((1.0, 0.25), (2.0, 0.5), (4.0, 4.0))
        settings, skipped = [], []
        for (s1, s2), sigma, variant in product(pairs, sigmas, variants):
            row = {"s1": s1, "s2": s2, "sigma": sigma, "variant": variant}
            if s1 > s2:
                settings.append(row)
            else:
                skipped.append({**row, "reason": "s1 <= s2: no second plateau"})
        return settings, skipped

    def measure(self, setting):
        """One setting's measurements (JSON-safe; runs in a worker process)."""
        setting = dict(setting)
        variant = setting.pop("variant")
        traj = solve(IncrementalParams(**setting), variant, model=self)
        return {"T_1": traj.phases["T_1"], "T_2": traj.phases["T_2"]}

    def claims(self, records, variants):
        """Each phase time against the exact logistic law, the worst case over the grid."""
        rows = []
        for phase, s in (("T_1", "s1"), ("T_2", "s2")):
            errors = [(exact_time(r["setting"][s], r["setting"]["sigma"]), r["result"][phase])
                      for r in records]
            exact, measured = max(errors, key=lambda e: abs(e[1] / e[0] - 1))
            # Root-finding on the dense output of an rtol-1e-10 run: 1e-8 relative.
            rows.append(Claim(f"{phase} = ln(s/sigma^2 - 1)/(2 s)", exact, measured,
                              abs(measured / exact - 1), 1e-8, abs(measured / exact - 1) <= 1e-8,
                              f"worst of {len(errors)}"))
        ordered = all(r["result"]["T_1"] < r["result"]["T_2"] for r in records)
        rows.append(Claim("order T_1 < T_2", 1, float(ordered), float(not ordered), 0, ordered))
        return rows

    def verify_metadata(self):
        """Merged into ``verify-<grid>.json`` beside the claims."""
        return {"tolerance": "1e-8 relative: root-finding on an rtol-1e-10 dense output"}

    def export_derivations(self, directory):
        """``derive``: the flow in the state variables, as Markdown with LaTeX."""
        import sympy as sp

        derivation = self.derive("default")
        lines = [f"# {self.description}", ""]
        for name, rate in zip(derivation.state_names, derivation.rhs, strict=True):
            lines.append(f"- d{name}/dt: $${sp.latex(sp.factor(rate))}$$")
        path = Path(directory) / f"{self.name}.md"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return [path]

    def figures(self, out, data, formats):
        """``figures``: u1 and u2 against t, drawn from ``data/modes.json`` (made if missing)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        source = Path(data) / "modes.json"
        if not source.exists():
            traj = solve(IncrementalParams(), model=self)
            source.write_text(json.dumps({k: traj.series[k][1:].tolist() for k in ("u1", "u2")}
                                         | {"t": traj.t[1:].tolist()}))
        curves = json.loads(source.read_text())
        fig, ax = plt.subplots(figsize=(5, 3), layout="constrained")
        for name in ("u1", "u2"):
            ax.semilogx(curves["t"], curves[name], label=name)
        ax.set(xlabel="t", ylabel="mode strength")
        ax.legend()
        paths = [Path(out) / f"modes.{fmt}" for fmt in formats]
        for path in paths:
            fig.savefig(path)
        plt.close(fig)
        return paths

    def command_options(self, command, parser):
        """``compare --seeds N``; the value reaches :meth:`compare` as ``seeds``."""
        if command == "compare":
            parser.add_argument("--seeds", type=int, default=3, help="SGD runs (default: 3)")

    def compare(self, *, quick, out, seeds=3):
        """Ground truth: online SGD on the unreduced network against the ODE's phase times."""
        import numpy as np

        params, rate = IncrementalParams(), 1e-3 if quick else 2e-4
        ode = solve(params, model=self).phases
        runs = [_sgd_phase_times(params, rate, np.random.default_rng(seed))
                for seed in range(seeds)]
        result = {"learning_rate": rate, "ode": ode,
                  "sgd": {k: [run[k] for run in runs] for k in ("T_1", "T_2")}}
        (Path(out) / f"compare-{self.name}.json").write_text(json.dumps(result, indent=1))
        return result

    def format_compare(self, result):
        """The table ``compare`` prints without ``--json``."""
        rows = ["| phase | ODE | SGD (each seed) |", "|---|---|---|"]
        rows += [f"| {k} | {result['ode'][k]:.4g} | "
                 f"{', '.join(f'{v:.4g}' for v in result['sgd'][k])} |" for k in ("T_1", "T_2")]
        return "\n".join(rows)


def exact_time(s, sigma):
    """When mode ``s`` is half learned from ``a = b = sigma``: the logistic law."""
    return math.log(s / sigma**2 - 1) / (2 * s)


def _sgd_phase_times(params, rate, rng, batch=64):
    """Online SGD on ``1/2 (target - f)^2``, fresh ``x ~ N(0, I_2)`` each step; the times at
    which ``a_i b_i`` first reaches ``s_i / 2`` (time = steps x learning rate)."""
    import numpy as np

    s = np.array([params.s1, params.s2])
    a = b = np.full(2, params.sigma)
    found, step = {}, 0
    while len(found) < 2:
        x = rng.standard_normal((batch, 2))
        error = x @ (s - a * b)                       # target - f, per sample
        grad = -(error[:, None] * x).mean(axis=0)      # d loss / d (a_i b_i)
        a, b = a - rate * grad * b, b - rate * grad * a
        step += 1
        for i, name in enumerate(("T_1", "T_2")):
            if name not in found and a[i] * b[i] >= s[i] / 2:
                found[name] = step * rate
    return found


MODEL = IncrementalLearning()
