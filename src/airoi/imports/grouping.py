"""Source rows into cost entries (SEMANTICS R40).

Rows a rule takes are grouped by (initiative_id, period_start, period_end, currency,
cost_category, cost_type, vendor_name, description, billing account); each group is one cost
entry whose `amount_cents` is the exact decimal sum of the group's amounts in cents, rounded
half to even to a whole cent once. A null amount adds nothing; a group whose amounts are all
null is not imported. Rows no rule takes are counted, with their money, by what the report
names them by.
"""

from __future__ import annotations

import decimal
import hashlib
import json
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any, Final, NamedTuple

# Exact sums: far more digits than any amount has, and a trap should one ever not fit.
EXACT: Final = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_EVEN, traps=[decimal.Inexact])
ROUNDING: Final = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_EVEN)
ONE_CENT: Final = Decimal(1)
SOURCE_TYPE: Final = "import"


class EntryKey(NamedTuple):
    initiative_id: int
    period_start: date
    period_end: date
    currency: str
    cost_category: str
    cost_type: str
    vendor_name: str | None
    description: str | None
    billing_account: str | None


def billing_part(billing_account: str | None) -> str:
    """The part of a ref that tells the billing account (R41), without showing it."""
    if billing_account is None:
        return "-"
    return hashlib.sha256(billing_account.encode()).hexdigest()[:16]


def source_ref(kind: str, key: EntryKey) -> str:
    """R40: made from the source kind and the group key alone, so the same group always has
    the same ref: `kind/billing/key`, each part a digest."""
    text = json.dumps([kind, *(str(part) if part is not None else None for part in key)])
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    return f"{kind}/{billing_part(key.billing_account)}/{digest}"


def cents(amount_cents: Decimal) -> int:
    """One rounding, half to even, to a whole cent."""
    return int(amount_cents.quantize(ONE_CENT, context=ROUNDING))


@dataclass
class Unmatched:
    first: str  # where the first such row is
    rows: int = 0
    amounts: dict[str, Decimal] = field(default_factory=dict)  # by currency, in cents


@dataclass
class Groups:
    """What a cost import read: its entries' sums and the rows no rule took."""

    kind: str  # focus, openai, anthropic: the ref's first part
    sums: dict[EntryKey, Decimal | None] = field(default_factory=dict)  # in cents
    where: dict[EntryKey, str] = field(default_factory=dict)  # first row, for problems
    unmatched: dict[tuple[str, ...], Unmatched] = field(default_factory=dict)
    rows_read: int = 0
    rows_matched: int = 0
    rows_outside: int = 0  # outside --from / --to
    first: date | None = None
    last: date | None = None
    billing_accounts: set[str | None] = field(default_factory=set)

    def saw(self, start: date, billing_account: str | None) -> None:
        """A row's start date and billing account (R41: what the files cover)."""
        if self.first is None or start < self.first:
            self.first = start
        if self.last is None or start > self.last:
            self.last = start
        self.billing_accounts.add(billing_account)

    def add(self, key: EntryKey, amount_cents: Decimal | None, rows: int, where: str) -> None:
        self.rows_matched += rows
        if key not in self.sums:
            self.sums[key] = None
            self.where[key] = where
        if amount_cents is not None:
            current = self.sums[key]
            self.sums[key] = amount_cents if current is None else EXACT.add(current, amount_cents)

    def miss(
        self,
        label: tuple[str, ...],
        currency: str | None,
        amount_cents: Decimal | None,
        rows: int,
        first: str,
    ) -> None:
        """Rows no rule takes, counted with their money by `label` (R40: not imported)."""
        slot = self.unmatched.get(label)
        if slot is None:
            slot = self.unmatched[label] = Unmatched(first)
        amount = amount_cents
        slot.rows += rows
        if amount is not None:
            code = currency or "?"
            slot.amounts[code] = EXACT.add(slot.amounts.get(code, Decimal(0)), amount)

    def entries(self, account_id: int, connection_id: int) -> list[dict[str, Any]]:
        """The bundle's cost entries (matched by source ref, R42), one per group with money."""
        records = []
        for key, total in self.sums.items():
            if total is None:
                continue
            records.append(
                {
                    "account_id": account_id,
                    "initiative_id": key.initiative_id,
                    "amount_cents": cents(total),
                    "currency": key.currency,
                    "cost_category": key.cost_category,
                    "cost_type": key.cost_type,
                    "period_start": key.period_start.isoformat(),
                    "period_end": key.period_end.isoformat(),
                    "vendor_name": key.vendor_name,
                    "description": key.description,
                    "is_estimated": False,
                    "source": {
                        "type": SOURCE_TYPE,
                        "ref": source_ref(self.kind, key),
                        "connection_id": connection_id,
                    },
                }
            )
        return records
