"""numeric/response.py, supplied tails in float64: an exact 0 (t beyond the largest possible time, confirmed
at 15 digits) is kept without a note; an underflow (0 in float64, positive at 15 digits) is recomputed with
the note. A stand-in law whose 15-digit tails are written here, so each branch is reached on purpose."""

import mpmath

from qderive.numeric.response import ResponseLaw, tails


def _law(f64: dict, mp15: dict):
    def supplied(ts, digits):
        table = f64 if digits is None else mp15
        return [table[t] for t in ts], (None if digits is None else 15)

    return ResponseLaw("wait", None, lambda ctx: 0, lambda k, d: [], smooth=False, why_not_smooth="kinks",
                       tails=supplied)


def test_an_exact_zero_has_no_note():
    law = _law({2: 0.25, 50: 0.0}, {2: mpmath.mpf("0.25"), 50: mpmath.mpf(0)})
    values, _, _, notes = tails(law, [2, 50], None)
    assert values == [0.25, 0.0] and notes == []


def test_an_underflow_is_recomputed_with_the_note():
    law = _law({2: 0.25, 50: 0.0}, {2: mpmath.mpf("0.25"), 50: mpmath.mpf("1e-434")})
    values, _, _, notes = tails(law, [2, 50], None)
    assert values[0] == 0.25 and len(notes) == 1 and "below 1e-290" in notes[0]
    # below the float64 range the value is kept as a decimal (never a silent 0)
    assert mpmath.almosteq(mpmath.mpf(values[1]), mpmath.mpf("1e-434"), rel_eps=1e-14)
