"""The write side, used by `airoi load` and `airoi demo` only: a bundle (BUNDLE.md) read,
checked, written and stamped in one transaction.

    reading   the file or mapping, streamed as (key, position, item)
    values    one field's value converted, or why not
    kinds     each kind of record: table, fields, defaults, references
    records   one record: its label, its given fields, merged with its stored row
    checks    pass 1: every record against the bundle and the store, in one order
      gathering   the bundle read once: small kinds whole, big kinds as ids and groups
      presence    records merged with stored rows; which rows exist, in which account
      references  references resolve in the record's account; no row moves account
      kind_rules  tokens, vendor merges, simulated connections, decisions
      rates       the FX rates the records' currencies need
    writing   pass 2: deletes and tombstones, upserts, knock-on changes, all stamped
      upserts     each row merged with its stored row, written where it changed, counted
      deleting    the bundle's deletes and their tombstones
      knock_on    what new rows change in rows the bundle does not give
      big_kinds   the big kinds, streamed a second time
    stamping  one load at a time per store, and the store's clock
    pipeline  load_bundle: the two passes under the lock, in one transaction
"""

from airoi.load.outcome import BundleError, LoadBusy, LoadReport
from airoi.load.pipeline import load_bundle
from airoi.load.reading import ProgressHook

__all__ = ["BundleError", "LoadBusy", "LoadReport", "ProgressHook", "load_bundle"]
