"""What other code knows of the demo: its account, the user its token is for, its marker.

Ids live in a high range (900_000 and up), a block per kind, so the demo never
collides with an account's own records and an id says what it is. The ids of named
records are in the data files; the records numbered as they are generated start at
FIRST_IDS.
"""

from __future__ import annotations

DEMO_ACCOUNT_ID = 900_000
DEMO_ACCOUNT_NAME = "Northwind Freight (demo)"
DEMO_OWNER_USER_ID = 900_101

# Every credential, stored secret setting and error prose of the demo's connections
# contains this text, so a test can search any response or log for it (SEMANTICS R15).
DEMO_SECRET_MARKER = "demo-not-a-real"  # noqa: S105 - a marker, not a secret

# The first id of each kind that is numbered as it is generated.
FIRST_IDS = {
    "initiative_notes": 900_401,
    "budget_versions": 900_601,
    "decisions": 900_701,
    "cost_entries": 901_001,
    "value_entries": 902_001,
    "observations": 903_001,
}
