"""The spec's closed forms (induction_head.md section 5), typed in as independent references.

Only tests import this module; the package derives everything itself.
"""

import sympy as sp

from reduced_odes._positions import SEQ_LEN as L
from reduced_odes.models.induction_head.declaration import ALPHA, W_KQ, W_V1, W_V2, WSTAR, P

Z = (1 - sp.exp(-(L - 1) * P)) / (1 - sp.exp(-P))
SPEC_PHI = 1 / Z
SPEC_PSI = ((1 - sp.exp(-2 * (L - 2) * P)) / (1 - sp.exp(-2 * P))) / Z**2
SPEC_G4 = (SPEC_PSI * W_V1**2 - 2 * ALPHA * SPEC_PHI * W_V1 + ALPHA**2) / 2
SPEC_IH = {
    "linear": (L - 2) / (2 * L**2) * (
        W_V2**2 / sp.sqrt(1 - 4 * W_KQ**2)
        - 2 * (1 - ALPHA) * W_V2 / sp.sqrt(1 - (W_KQ + WSTAR) ** 2)
        + (1 - ALPHA) ** 2 / sp.sqrt(1 - 4 * WSTAR**2)),
    "meanfield": 1 / (2 * (L - 2)) * (
        W_V2**2 / sp.sqrt(1 - 2 * W_KQ**2)
        - 2 * (1 - ALPHA) * W_V2 / sp.sqrt(1 - 2 * W_KQ * WSTAR)
        + (1 - ALPHA) ** 2 / sp.sqrt(1 - 2 * WSTAR**2)),
}
SPEC_DOMAIN = {
    "linear": {1 - 4 * W_KQ**2, 1 - (W_KQ + WSTAR) ** 2, 1 - 4 * WSTAR**2},
    "meanfield": {1 - 2 * W_KQ**2, 1 - 2 * W_KQ * WSTAR, 1 - 2 * WSTAR**2},
}



def spec_loss_numeric(closure, length, alpha, wstar):
    """The spec's total loss as a complex-capable NumPy function of (w_v1, p, w_v2, w_kq)."""
    import numpy as np

    def loss(w_v1, p, w_v2, w_kq):
        z = (1 - np.exp(-(length - 1) * p)) / (1 - np.exp(-p))
        psi = ((1 - np.exp(-2 * (length - 2) * p)) / (1 - np.exp(-2 * p))) / z**2
        g4 = (psi * w_v1**2 - 2 * alpha * w_v1 / z + alpha**2) / 2
        if closure == "linear":
            ih = (length - 2) / (2 * length**2) * (
                w_v2**2 / np.sqrt(1 - 4 * w_kq**2)
                - 2 * (1 - alpha) * w_v2 / np.sqrt(1 - (w_kq + wstar) ** 2)
                + (1 - alpha) ** 2 / np.sqrt(1 - 4 * wstar**2))
        else:
            ih = 1 / (2 * (length - 2)) * (
                w_v2**2 / np.sqrt(1 - 2 * w_kq**2)
                - 2 * (1 - alpha) * w_v2 / np.sqrt(1 - 2 * w_kq * wstar)
                + (1 - alpha) ** 2 / np.sqrt(1 - 2 * wstar**2))
        return g4 + ih

    return loss


def spec_rhs(closure, length, alpha, wstar):
    """Spec section 4 flow of (w_v1, p, w_v2, w_kq); gradients by complex step (exact to eps)."""
    import numpy as np

    loss = spec_loss_numeric(closure, length, alpha, wstar)
    h = 1e-30

    def rhs(t, y):
        grad = np.empty(4)
        for i in range(4):
            z = np.array(y, dtype=complex)
            z[i] += 1j * h
            grad[i] = loss(*z).imag / h
        return [-grad[0], -grad[1], -grad[2], -2 * y[3] * grad[3]]

    return rhs
