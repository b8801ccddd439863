"""ROI figures of a scope (SEMANTICS R9, R10)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from airoi.finance.money import half_even

__all__ = ["RoiFigures", "roi_figures", "roi_percent"]


@dataclass(frozen=True)
class RoiFigures:
    approved_value_cents: int
    capex_cents: int
    opex_cents: int
    total_cost_cents: int
    net_value_cents: int
    roi: float | None

    @property
    def roi_exact(self) -> Fraction | None:
        """net / total as an exact fraction; None when there is no cost."""
        if self.total_cost_cents == 0:
            return None
        return Fraction(self.net_value_cents, self.total_cost_cents)

    @property
    def roi_percent(self) -> float | None:
        """roi × 100 to two decimals, from the exact fraction (SEMANTICS R10)."""
        return roi_percent(self.roi_exact)


def roi_figures(approved_value_cents: int, capex_cents: int, opex_cents: int) -> RoiFigures:
    """Finish the ROI summary from the converted sums (SEMANTICS R9).

    total = capex + opex; net = approved value - total; roi = net / total as a
    float, not rounded, None when total is 0 (no cost is not zero ROI).
    """
    total = capex_cents + opex_cents
    net = approved_value_cents - total
    # int / int is correctly rounded to the nearest float.
    roi = None if total == 0 else net / total
    return RoiFigures(
        approved_value_cents=approved_value_cents,
        capex_cents=capex_cents,
        opex_cents=opex_cents,
        total_cost_cents=total,
        net_value_cents=net,
        roi=roi,
    )


def roi_percent(roi: float | Fraction | None) -> float | None:
    """roi × 100 rounded half to even to two decimals (SEMANTICS R10); None stays None.

    Pass the exact Fraction when you have it (`RoiFigures.roi_exact`). A float
    is read as its shortest decimal form (`repr`), the number a reader sees,
    so an exact tie such as 0.12345 stays a tie instead of being decided by
    binary noise; for the ratios of real cent sums both give the same answer.
    """
    if roi is None:
        return None
    exact = roi if isinstance(roi, Fraction) else Fraction(Decimal(repr(float(roi))))
    hundredths = half_even(exact * 10_000)  # percent to two decimals, rounded once
    return float(Decimal(hundredths).scaleb(-2))
