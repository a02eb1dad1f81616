"""Write ember/quasirandom/_sobol_direction_numbers.npz: Joe and Kuo's Sobol' direction numbers.

The table is "new-joe-kuo-6.21201" (S. Joe and F. Y. Kuo, "Constructing Sobol sequences with better
two-dimensional projections", SIAM J. Sci. Comput. 30, 2635-2654, 2008; https://web.maths.unsw.edu.au/~fkuo/sobol/),
the table torch's SobolEngine compiles in.  It is read here from SciPy's copy of the published file
(scipy/stats/_sobol_direction_numbers.npz: `poly`, the primitive polynomials with their leading and trailing
bits, and `vinit`, the initial direction numbers m_1..m_s, zero-padded to 18 columns), and written as the two
arrays ember needs, compressed.  Run once at development time (needs SciPy); with torch installed it also
checks the resulting direction numbers against torch.quasirandom.SobolEngine's `sobolstate`.  ember itself
reads only the .npz, never SciPy or torch.
"""

from __future__ import annotations

import os
import sys

import numpy as np

TARGET = os.path.join(os.path.dirname(__file__), "..", "ember", "quasirandom", "_sobol_direction_numbers.npz")


def main() -> None:
    import scipy.stats

    source = os.path.join(os.path.dirname(scipy.stats.__file__), "_sobol_direction_numbers.npz")
    with np.load(source) as table:
        poly = table["poly"].astype(np.uint32)
        vinit = table["vinit"].astype(np.uint32)
    assert poly.shape == (21201,) and vinit.shape == (21201, 18)
    np.savez_compressed(TARGET, poly=poly, vinit=vinit)
    print(f"wrote {TARGET}: {os.path.getsize(TARGET)} bytes")
    _check_against_torch()


def _check_against_torch() -> None:
    try:
        import torch
    except ImportError:
        print("torch not installed: not checked")
        return
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from ember.quasirandom._direction_numbers import direction_numbers

    ours = direction_numbers(21201)
    theirs = torch.quasirandom.SobolEngine(21201).sobolstate.numpy()
    assert np.array_equal(ours, theirs), "direction numbers differ from torch's"
    print("direction numbers equal torch's sobolstate for all 21201 dimensions")


if __name__ == "__main__":
    main()
