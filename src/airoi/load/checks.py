"""Pass 1 of a load: every record checked, alone and against the rest of the bundle and
the store, before anything is written (BUNDLE.md).

The bundle is read once (gathering), the small kinds' records merged with their stored rows
and every row's account settled (presence), then the references (references), the rules
of single kinds (kind_rules) and the FX rates the records need (rates). The checks run in
one order, so a bundle's problems are always reported in the same order.
"""

from __future__ import annotations

from sqlalchemy import Connection

from airoi.load.gathering import GatheredBundle
from airoi.load.kind_rules import (
    check_decisions,
    check_simulated_connections,
    check_tokens,
    check_vendor_merges,
)
from airoi.load.kinds import BIG, KINDS
from airoi.load.presence import Presence
from airoi.load.rates import NeededRates
from airoi.load.reading import Source
from airoi.load.records import Problems
from airoi.load.references import ReferenceChecks


class Validation:
    """Pass 1, and what the writer needs of it: the bundle as read (`bundle`: its small
    records, deletes and big ids) and where its rows live (`presence`: stored rows, present
    rows and accounts)."""

    def __init__(self, conn: Connection, source: Source, *, keep_stamps: bool) -> None:
        self.conn = conn
        self.problems = Problems()
        self.bundle = GatheredBundle(conn, source, self.problems, keep_stamps=keep_stamps)
        self.presence = Presence(conn, self.bundle, self.problems)
        self.rates = NeededRates(conn, self.presence, self.problems)
        self.references = ReferenceChecks(self.bundle, self.presence, self.rates, self.problems)

    def run(self) -> None:
        if self.bundle.read():
            self._check()

    def _check(self) -> None:
        conn, bundle, presence, problems = self.conn, self.bundle, self.presence, self.problems
        presence.merge_stored()
        bundle.check_duplicates()
        bundle.check_kept_required()
        presence.load_present()
        presence.resolve_small_accounts()
        presence.check_stored_ids()
        for key, recs in bundle.small.items():
            kind = KINDS[key]
            for rec in recs:
                self.references.check_record(kind, rec)
        check_tokens(conn, bundle, problems)
        check_vendor_merges(conn, bundle, presence, problems)
        check_simulated_connections(conn, bundle, presence, problems)
        check_decisions(bundle, presence, problems)
        for key in BIG:
            self.references.check_big_kind(key)
        self.rates.check(bundle.small["fx_rates"])
