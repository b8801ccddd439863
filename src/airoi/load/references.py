"""References must resolve inside the record's own account, and a big record's stored row
never moves to another account (BUNDLE.md load rules)."""

from __future__ import annotations

from airoi.load.gathering import GatheredBundle
from airoi.load.kinds import KINDS, SINGULAR, Kind
from airoi.load.presence import MISSING, Presence, account_field, moved
from airoi.load.rates import NeededRates
from airoi.load.records import Problems, Rec


class ReferenceChecks:
    """Each small record's references, and each combination of a big kind's, against the
    rows present after the bundle; the currencies they are in noted for their FX rates."""

    def __init__(
        self,
        bundle: GatheredBundle,
        presence: Presence,
        rates: NeededRates,
        problems: Problems,
    ) -> None:
        self.bundle = bundle
        self.presence = presence
        self.rates = rates
        self.problems = problems

    def check_record(self, kind: Kind, rec: Rec) -> None:
        account = rec.account
        if account is None:
            return
        row = rec.row
        for column, target in kind.refs.items():
            value = row[column]
            if value is None or (kind.key == "tokens" and column == "user_id"):
                continue
            found = self.presence.present[target].get(value, MISSING)
            if found is None:
                continue  # the target itself is broken and reported
            if found is MISSING or found != account:
                name = "source.connection_id" if column == "source_connection_id" else column
                self.problems.add(
                    f"{rec.label}.{name}: no {SINGULAR[target]} {value} in account {account}"
                )
        currency = row.get("currency")
        if kind.key not in ("accounts", "fx_rates") and currency is not None:
            self.rates.need(account, currency, rec.label, "currency")

    def check_big_kind(self, key: str) -> None:
        kind = KINDS[key]
        presence = self.presence
        for group_key, ids in self.bundle.big_groups[key].items():
            initiative_id, metric_id, given_account, currency, vendor_id, connection_id = group_key
            account, found = presence.entry_account(
                kind.account, initiative_id, metric_id, given_account
            )
            if account is not None:
                for column, value in (
                    ("vendor_id", vendor_id),
                    ("source_connection_id", connection_id),
                ):
                    if value is None:
                        continue
                    target = kind.refs[column]
                    found_account = presence.present[target].get(value, MISSING)
                    if found_account is MISSING or (
                        found_account is not None and found_account != account
                    ):
                        name = (
                            "source.connection_id" if column == "source_connection_id" else column
                        )
                        found.append((name, f"no {SINGULAR[target]} {value} in account {account}"))
                if currency is not None:
                    for record_id in ids:
                        self.rates.need(account, currency, f"{key}[id={record_id}]", "currency")
            for field_name, message in found:
                for record_id in ids:
                    self.problems.add(f"{key}[id={record_id}].{field_name}: {message}")
        deleted = self.bundle.deletes.get(key, set())
        deleted_initiatives = self.bundle.deletes.get("initiatives", set())
        for group_key, ids in self.bundle.big_existing[key].items():
            initiative_id, metric_id, given_account, stored_account, stored_initiative = group_key
            if stored_initiative is not None and stored_initiative in deleted_initiatives:
                continue
            account, _ = presence.entry_account(
                kind.account, initiative_id, metric_id, given_account
            )
            if account is None or account == stored_account:
                continue
            field_name, given = account_field(kind, initiative_id, metric_id)
            for record_id in ids:
                if record_id not in deleted:
                    self.problems.add(
                        f"{key}[id={record_id}].{field_name}: "
                        + moved(record_id, given, account, stored_account)
                    )
