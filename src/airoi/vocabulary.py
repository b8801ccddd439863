"""SPEC's enumerations (sections 2 and 3), each written once.

The served rows type their fields with these (api/, and the tools' results made from them),
and the loader takes its allowed values from them (load/kinds.py: `get_args(Stage)`), so a
value added to SPEC is added here and nowhere else.
"""

from typing import Literal, get_args

Stage = Literal[
    "identified",
    "reviewing",
    "implementing",
    "live",
    "paused",
    "completed",
    "rejected",
    "dismissed",
]
CostCategory = Literal["capex", "opex"]
ValueStatus = Literal["draft", "calculated", "reviewed", "approved", "disputed", "archived"]
# In SPEC 3's order, which by=value_status rows keep (SEMANTICS R37).
VALUE_STATUSES: tuple[ValueStatus, ...] = get_args(ValueStatus)
Outcome = Literal["continue", "scale", "fix", "pause", "retire"]
IntegrationStatus = Literal["active", "paused", "error", "disconnected"]
AuthType = Literal["oauth", "api_key", "basic", "webhook", "github_app", "service_account"]
OpexCadence = Literal["monthly", "quarterly", "annually"]
BudgetSource = Literal["approval", "revision", "manual"]
BudgetVersionStatus = Literal["approved", "pending", "rejected"]
# The lists whose removed rows leave a tombstone (SEMANTICS R34), as GET /deletions names them.
ServedList = Literal[
    "initiatives",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "decisions",
    "integrations",
]
# The trailing windows of GET /roi and get_roi_summary (SPEC 4.A.3, 4.B).
Window = Literal["1yr", "3yr", "5yr", "all"]
# SEMANTICS R37: what GET /roi/breakdown splits by.
BreakdownBy = Literal["initiative", "month", "quarter", "cost_type", "vendor", "value_status"]

# What the search tool finds (SPEC 4.B), in the order its hits of one rank are listed.
SearchKind = Literal[
    "initiative",
    "page",
    "metric",
    "connection",
    "platform",
    "vendor",
    "person",
    "template",
    "help_article",
    "assessment",
]
SEARCH_KINDS: tuple[SearchKind, ...] = get_args(SearchKind)
# An initiative's stage rolled up, as the tools report it (SEMANTICS R26).
RolledUpStatus = Literal["not_started", "active", "completed", "inactive"]
