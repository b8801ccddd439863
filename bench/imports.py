"""`airoi import focus` against the plain read of the same FOCUS file: rows/s and peak memory.

    python -m bench.imports [--rows 1000000] [--rounds 3] [--postgres ADMIN_URL]
                            [--work DIR] [--json out.json] [--timeout S] [--quick]

A seeded FOCUS 1.2 CSV of `--rows` rows is written a row at a time (45 columns, 3,000
resources of six billing accounts at four providers, 20 services, one row a resource-hour
over 30 days in time order): `YYYY-MM-DD HH:MM:SS` and ISO-with-Z times, ChargeFrequency in
several cases, four amounts with up to 10 decimals, credits and corrections below zero,
`NULL` and empty cells, one billing account in EUR, and a Tags JSON object (application,
team, env; a few keys with a stray space). Beside it, a rules file mapping Tags.application
and ServiceCategory to five initiatives, leaving nearly half of the rows unmatched. The
file is kept in `--work` and used again when it is there.

Each store (a scratch SQLite file, and a scratch PostgreSQL database given an admin URL) gets
`airoi init` and a small bundle: account 1 (USD), its Owner, the rules' initiatives and an
EUR rate. Then, for `--rounds` rounds, in an order rotated every round:

- the plain read: `pyarrow.csv.open_csv(FILE)` with default options, every batch of every
  column, in a child process;
- `python -m airoi import focus FILE --account 1 --rules RULES` on each store, a child with
  AIROI_DATABASE_URL set. Round 1 inserts; later rounds import the same file again
  (every entry unchanged). The first import and the re-imports are reported apart.

Every child is timed by the wall clock from spawn to exit (interpreter start and imports
included alike), and its own peak RSS is read from `os.wait4`. The figure is the import's
rows/s over the plain read's (median of the rounds); the targets are a ratio of at least 0.3
and a peak RSS under 400 MB. The import's report (rows read, matched, unmatched, entries
inserted / unchanged) is checked against what the generator wrote; a failed or wrong import
makes the exit status 1, a missed target does not.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from bench.common import scratch_databases

SEED: Final = 20260301
GENERATOR: Final = 1  # bumped when the generated file changes; a kept file is made again
FIRST_HOUR: Final = datetime(2026, 3, 1)
HOURS: Final = 30 * 24
RESOURCES: Final = 3_000
ACCOUNT_ID: Final = 1
MAX_ROUNDS: Final = 10
QUICK_ROWS: Final = 100_000
QUICK_ROUNDS: Final = 2  # one first import and one re-import
TARGET_RATIO: Final = 0.3
TARGET_RSS_MB: Final = 400.0
MB: Final = 1 << 20

HEADER: Final = (
    "BillingAccountId",
    "BillingAccountName",
    "BillingAccountType",
    "SubAccountId",
    "SubAccountName",
    "SubAccountType",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "BillingCurrency",
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ContractedCost",
    "ListUnitPrice",
    "ContractedUnitPrice",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "PricingCategory",
    "PricingQuantity",
    "PricingUnit",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ProviderName",
    "PublisherName",
    "InvoiceIssuerName",
    "InvoiceId",
    "ServiceName",
    "ServiceCategory",
    "ServiceSubcategory",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "RegionId",
    "RegionName",
    "AvailabilityZone",
    "SkuId",
    "SkuPriceId",
    "SkuMeter",
    "CommitmentDiscountId",
    "CommitmentDiscountStatus",
    "Tags",
)
COLUMN: Final = {name: index for index, name in enumerate(HEADER)}
AI: Final = "AI and Machine Learning"


@dataclass(frozen=True)
class Service:
    provider: str
    name: str
    category: str
    subcategory: str
    resource_type: str
    pricing_unit: str
    unit_price: float  # list price of one pricing unit, USD
    recurring: bool = False


SERVICES: Final = (
    Service("AWS", "Amazon Elastic Compute Cloud", "Compute", "Virtual Machines",
            "Instance", "Hours", 0.192),
    Service("AWS", "Amazon Simple Storage Service", "Storage", "Object Storage",
            "Bucket", "GB-Month", 0.023),
    Service("AWS", "Amazon Relational Database Service", "Databases", "Relational Databases",
            "DB Instance", "Hours", 0.48),
    Service("AWS", "Amazon Bedrock", AI, "Generative AI", "Foundation Model", "1K Tokens",
            0.003),
    Service("AWS", "Amazon SageMaker", AI, "Machine Learning", "Endpoint", "Hours", 1.21),
    Service("AWS", "AWS Lambda", "Compute", "Serverless Compute", "Function", "Requests",
            0.0000002),
    Service("AWS", "Amazon CloudWatch", "Management and Governance", "Observability",
            "Log Group", "GB", 0.5),
    Service("AWS", "AWS Support (Business)", "Other", "Support", "Support Plan", "Months",
            0.0137, recurring=True),
    Service("Microsoft", "Virtual Machines", "Compute", "Virtual Machines",
            "Microsoft.Compute/virtualMachines", "1 Hour", 0.21),
    Service("Microsoft", "Azure OpenAI", AI, "Generative AI",
            "Microsoft.CognitiveServices/accounts", "1K Tokens", 0.01),
    Service("Microsoft", "Storage", "Storage", "Object Storage",
            "Microsoft.Storage/storageAccounts", "1 GB/Month", 0.0184),
    Service("Microsoft", "SQL Database", "Databases", "Relational Databases",
            "Microsoft.Sql/servers/databases", "1 Hour", 0.505),
    Service("Microsoft", "Azure AI Search", AI, "AI Platforms",
            "Microsoft.Search/searchServices", "1 Hour", 0.336),
    Service("Microsoft", "Azure Monitor", "Management and Governance", "Observability",
            "Microsoft.Insights/components", "1 GB", 2.3),
    Service("Google Cloud", "Compute Engine", "Compute", "Virtual Machines",
            "compute.googleapis.com/Instance", "hour", 0.19),
    Service("Google Cloud", "Vertex AI", AI, "Generative AI",
            "aiplatform.googleapis.com/Endpoint", "count", 0.0025),
    Service("Google Cloud", "BigQuery", "Analytics", "Data Processing",
            "bigquery.googleapis.com/Dataset", "tebibyte", 6.25),
    Service("Google Cloud", "Cloud Storage", "Storage", "Object Storage",
            "storage.googleapis.com/Bucket", "gibibyte month", 0.02),
    Service("Oracle", "Compute", "Compute", "Virtual Machines", "Instance", "OCPU Hours",
            0.025),
    Service("Oracle", "Generative AI", AI, "Generative AI", "Dedicated AI Cluster",
            "Unit Hours", 6.5),
)  # fmt: skip
REGIONS: Final = {
    "AWS": (("us-east-1", "US East (N. Virginia)"), ("eu-west-1", "Europe (Ireland)"),
            ("us-west-2", "US West (Oregon)")),
    "Microsoft": (("eastus", "East US"), ("westeurope", "West Europe"),
                  ("swedencentral", "Sweden Central")),
    "Google Cloud": (("us-central1", "Iowa"), ("europe-west4", "Netherlands")),
    "Oracle": (("eu-frankfurt-1", "Germany Central (Frankfurt)"),
               ("us-ashburn-1", "US East (Ashburn)")),
}  # fmt: skip


@dataclass(frozen=True)
class BillingAccount:
    id: str
    name: str
    type: str
    provider: str
    currency: str
    iso: bool  # times as ISO with Z, else `YYYY-MM-DD HH:MM:SS`
    usage: str  # how this export writes Usage-Based
    sub_type: str
    weight: int
    fx: float = 1.0  # amounts in the billing currency per USD


BILLING_ACCOUNTS: Final = (
    BillingAccount("123456789012", "Acme AWS Organization", "Management Account", "AWS",
                   "USD", False, "Usage-Based", "Account", 30),
    BillingAccount("345678901234", "Acme Research AWS", "Management Account", "AWS",
                   "USD", False, "Usage-Based", "Account", 10),
    BillingAccount("8602124", "Acme Enterprise Agreement", "Billing Account", "Microsoft",
                   "USD", True, "Usage-Based", "Subscription", 20),
    BillingAccount("4711-EU:acme-mca", "Acme Europe MCA", "Billing Profile", "Microsoft",
                   "EUR", True, "usage-based", "Subscription", 12, fx=0.92),
    BillingAccount("01A2B3-C4D5E6-F7A8B9", "Acme GCP Billing", "Billing Account",
                   "Google Cloud", "USD", True, "Usage-Based", "Project", 18),
    BillingAccount("ocid1.tenancy.oc1..aaaaaaaa7acme", "Acme OCI", "Tenancy", "Oracle",
                   "USD", False, "usage-based", "Compartment", 10),
)  # fmt: skip
INVOICE_ISSUER: Final = {
    "AWS": "Amazon Web Services, Inc.",
    "Microsoft": "Microsoft",
    "Google Cloud": "Google LLC",
    "Oracle": "Oracle America, Inc.",
}
# Applications by what their resources are: AI services, and everything else. None: untagged.
AI_APPS: Final = (
    ("support-bot", 35),
    ("search", 20),
    ("recommender", 15),
    ("internal-tools", 10),
    (None, 20),
)
OTHER_APPS: Final = (
    ("data-platform", 20),
    ("web-shop", 25),
    ("search", 10),
    ("recommender", 5),
    ("billing-api", 10),
    ("internal-tools", 10),
    (None, 20),
)
TEAMS: Final = {
    "support-bot": "customer-ai",
    "search": "search",
    "recommender": "personalization",
    "data-platform": "data",
    "web-shop": "web",
    "billing-api": "payments",
    "internal-tools": "platform",
}
# The rules: (initiative, where, extra keys), tried in order; the rest is unmatched.
RULES: Final[tuple[tuple[int, dict[str, tuple[str, ...]], dict[str, str]], ...]] = (
    (101, {"Tags.application": ("support-bot",)}, {"cost_type": "tokens"}),
    (102, {"Tags.application": ("search", "recommender"), "ServiceCategory": (AI,)}, {}),
    (103, {"Tags.application": ("search", "recommender")}, {}),
    (
        104,
        {
            "Tags.application": ("data-platform",),
            "ServiceCategory": ("Analytics", "Databases", "Storage"),
        },
        {},
    ),
    (105, {"ServiceCategory": (AI,)}, {"vendor_name": "AI platforms"}),
)
INITIATIVES: Final = tuple(rule[0] for rule in RULES)
EUR_RATE: Final = "1.08"


@dataclass
class Resource:
    """One resource of the bill: every cell that does not change from hour to hour."""

    cells: list[str]
    account: BillingAccount
    service: Service
    price: float  # list price of a unit, in the billing currency
    discount: float  # contracted over list
    committed: bool
    quantity: float  # a typical hour's units
    matched: bool  # a rule takes its rows


def _hex(rng: random.Random, digits: int) -> str:
    return f"{rng.getrandbits(digits * 4):0{digits}x}"


def _weighted(rng: random.Random, choices: Sequence[tuple[Any, int]]) -> Any:
    return rng.choices([c for c, _ in choices], weights=[w for _, w in choices])[0]


def _tags(rng: random.Random, service: Service) -> tuple[str, str | None]:
    """The Tags cell and the application a rule reads in it (None: the key is not there)."""
    app = _weighted(rng, AI_APPS if service.category == AI else OTHER_APPS)
    env = _weighted(rng, (("prod", 70), ("staging", 20), ("dev", 10)))
    if app is None:
        cell = rng.choice(("", "NULL", "{}", json.dumps({"env": env})))
        return cell, None
    key = "application"
    stray = rng.random()
    if stray < 0.02:
        key = " application"  # another key: no rule sees it
    elif stray < 0.04:
        key = "application "
    tags: dict[str, str] = {key: app, "team": TEAMS[app], "env": env}
    if rng.random() < 0.1:
        tags["cost-center"] = f"CC-{rng.randrange(1000, 9999)}"
    if rng.random() < 0.05:
        tags["team "] = tags.pop("team")
    return json.dumps(tags), app if key == "application" else None


def _matched(app: str | None, category: str) -> bool:
    values = {"Tags.application": app, "ServiceCategory": category}
    return any(
        all(values[name] in allowed for name, allowed in where.items()) for _, where, _ in RULES
    )


def _resource_id(
    rng: random.Random, account: BillingAccount, service: Service, sub: str, region: str, name: str
) -> str:
    if account.provider == "AWS":
        kind = service.resource_type.lower().replace(" ", "-")
        return f"arn:aws:{kind}:{region}:{sub}:{kind}/{name}-{_hex(rng, 17)}"
    if account.provider == "Microsoft":
        return (
            f"/subscriptions/{sub}/resourceGroups/rg-{name}/providers/"
            f"{service.resource_type}/{name}-{_hex(rng, 6)}"
        )
    if account.provider == "Google Cloud":
        host, kind = service.resource_type.split("/")
        return f"//{host}/projects/{sub}/locations/{region}/{kind.lower()}s/{name}"
    return f"ocid1.{service.resource_type.lower().replace(' ', '')}.oc1.{region}.{_hex(rng, 60)}"


def _sub_accounts(rng: random.Random, account: BillingAccount) -> list[tuple[str, str]]:
    names = ("prod", "staging", "research")
    if account.provider == "AWS":
        return [(str(rng.randrange(10**11, 10**12)), f"acme-{n}") for n in names]
    if account.provider == "Microsoft":
        return [
            (f"{_hex(rng, 8)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 12)}",
             f"Acme {n.title()}")
            for n in names
        ]  # fmt: skip
    if account.provider == "Google Cloud":
        return [(f"acme-{n}-{rng.randrange(100000, 999999)}", f"acme-{n}") for n in names]
    return [(f"ocid1.compartment.oc1..{_hex(rng, 60)}", f"acme-{n}") for n in names]


def make_resources(rng: random.Random) -> list[Resource]:
    subs = {account.id: _sub_accounts(rng, account) for account in BILLING_ACCOUNTS}
    invoices = {
        account.id: f"INV-202603-{rng.randrange(10**7, 10**8)}" for account in BILLING_ACCOUNTS
    }
    resources = []
    for n in range(RESOURCES):
        account = _weighted(rng, [(a, a.weight) for a in BILLING_ACCOUNTS])
        offered = [s for s in SERVICES if s.provider == account.provider]
        service = _weighted(
            rng, [(s, 1 if s.recurring else 3 if s.category == AI else 2) for s in offered]
        )
        sub_id, sub_name = rng.choice(subs[account.id])
        region, region_name = rng.choice(REGIONS[account.provider])
        name = f"{service.subcategory.lower().replace(' ', '-')}-{n:04d}"
        compute = service.category in ("Compute", "Databases")
        committed = compute and rng.random() < 0.2
        tags, app = _tags(rng, service)
        sku = f"{service.name[:3].upper()}-{_hex(rng, 8).upper()}"
        cells = [""] * len(HEADER)
        values = {
            "BillingAccountId": account.id,
            "BillingAccountName": account.name,
            "BillingAccountType": account.type,
            "SubAccountId": sub_id,
            "SubAccountName": sub_name,
            "SubAccountType": account.sub_type,
            "BillingPeriodStart": "2026-03-01T00:00:00Z",
            "BillingPeriodEnd": "2026-04-01T00:00:00Z",
            "BillingCurrency": account.currency,
            "ChargeDescription": f"{service.name} {service.subcategory} in {region_name}",
            "PricingCategory": "Committed" if committed else "Standard",
            "PricingUnit": service.pricing_unit,
            "ConsumedUnit": service.pricing_unit,
            "ProviderName": account.provider,
            "PublisherName": account.provider,
            "InvoiceIssuerName": INVOICE_ISSUER[account.provider],
            "InvoiceId": invoices[account.id],
            "ServiceName": service.name,
            "ServiceCategory": service.category,
            "ServiceSubcategory": service.subcategory,
            "ResourceId": _resource_id(rng, account, service, sub_id, region, name),
            "ResourceName": name,
            "ResourceType": service.resource_type,
            "RegionId": region,
            "RegionName": region_name,
            "AvailabilityZone": f"{region}-{rng.choice('abc')}" if compute else "",
            "SkuId": sku,
            "SkuPriceId": f"{sku}-{region}-{'CMT' if committed else 'OD'}",
            "SkuMeter": f"{service.subcategory} {service.pricing_unit}",
            "CommitmentDiscountId": f"cd-{account.provider[:3].lower()}-{_hex(rng, 12)}"
            if committed
            else "",
            "CommitmentDiscountStatus": "Used" if committed else "",
            "Tags": tags,
        }
        for key, value in values.items():
            cells[COLUMN[key]] = value
        resources.append(
            Resource(
                cells=cells,
                account=account,
                service=service,
                price=service.unit_price * account.fx,
                discount=rng.uniform(0.7, 1.0),
                committed=committed,
                quantity=rng.lognormvariate(1.0, 1.5)
                * (1000 if "Token" in service.pricing_unit else 1),
                matched=_matched(app, service.category),
            )
        )
    return resources


@dataclass
class Generated:
    rows: int
    matched: int
    unmatched: int
    bytes: int

    def as_dict(self) -> dict[str, int]:
        return {
            "rows": self.rows,
            "matched": self.matched,
            "unmatched": self.unmatched,
            "bytes": self.bytes,
        }


def write_focus(path: Path, rows: int, seed: int = SEED) -> Generated:
    """The FOCUS CSV, a row at a time; how many rows a rule takes."""
    rng = random.Random(seed)
    resources = make_resources(rng)
    hours = [FIRST_HOUR + timedelta(hours=h) for h in range(HOURS + 1)]
    naive = [moment.strftime("%Y-%m-%d %H:%M:%S") for moment in hours]
    iso = [moment.strftime("%Y-%m-%dT%H:%M:%SZ") for moment in hours]
    places = (2, 4, 6, 8, 10, 10)
    start_at, end_at = COLUMN["ChargePeriodStart"], COLUMN["ChargePeriodEnd"]
    billed_at, effective_at = COLUMN["BilledCost"], COLUMN["EffectiveCost"]
    list_at, contracted_at = COLUMN["ListCost"], COLUMN["ContractedCost"]
    list_price_at, contracted_price_at = COLUMN["ListUnitPrice"], COLUMN["ContractedUnitPrice"]
    category_at, class_at = COLUMN["ChargeCategory"], COLUMN["ChargeClass"]
    description_at, frequency_at = COLUMN["ChargeDescription"], COLUMN["ChargeFrequency"]
    pricing_at, consumed_at = COLUMN["PricingQuantity"], COLUMN["ConsumedQuantity"]
    resource_at = COLUMN["ResourceId"]
    matched = 0
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(HEADER)
        for i in range(rows):
            hour = i * HOURS // rows
            resource = rng.choice(resources)
            account, service = resource.account, resource.service
            row = resource.cells.copy()
            times = iso if account.iso else naive
            row[start_at], row[end_at] = times[hour], times[hour + 1]
            quantity = resource.quantity * (0.2 + 1.6 * rng.random())
            list_cost = quantity * resource.price
            contracted = list_cost * resource.discount
            effective = contracted * (0.6 if resource.committed else 1.0)
            billed = 0.0 if resource.committed else contracted
            frequency = "Recurring" if service.recurring else account.usage
            category, charge_class = "Usage", ""
            kind = rng.random()
            if kind < 0.01:  # a credit
                category, frequency = "Credit", "One-Time"
                list_cost = contracted = 0.0
                effective = billed = -rng.uniform(0.01, 5.0) * account.fx
                row[description_at] = "Promotional credit"
                row[resource_at] = ""
            elif kind < 0.015:  # a correction of an earlier charge
                charge_class = "Correction"
                list_cost, contracted, effective, billed = (
                    -list_cost,
                    -contracted,
                    -effective,
                    -billed,
                )
            elif kind < 0.016:  # a purchase, once
                category, frequency = "Purchase", rng.choice(("One-Time", "one-time"))
                effective = billed = contracted = list_cost = list_cost * 200
            p = rng.choice(places)
            cells = [f"{value:.{p}f}" for value in (billed, effective, list_cost, contracted)]
            blank = rng.random()
            if blank < 0.002:
                cells[1] = "NULL"
            elif blank < 0.004:
                cells[1] = ""
            elif blank < 0.01:
                cells[3] = "NULL"
            elif blank < 0.02:
                cells[2] = ""
            row[billed_at], row[effective_at], row[list_at], row[contracted_at] = cells
            row[list_price_at] = f"{resource.price:.10f}"
            row[contracted_price_at] = f"{resource.price * resource.discount:.10f}"
            row[pricing_at] = row[consumed_at] = f"{quantity:.6f}"
            row[category_at], row[class_at], row[frequency_at] = category, charge_class, frequency
            writer.writerow(row)
            matched += resource.matched
    return Generated(rows, matched, rows - matched, path.stat().st_size)


def rules_toml() -> str:
    lines = [
        "# Which initiative takes a FOCUS row (bench.imports).",
        'amount = "EffectiveCost"',
        "",
    ]
    for initiative, where, extra in RULES:
        pairs = []
        for name, values in where.items():
            shown = json.dumps(values[0]) if len(values) == 1 else json.dumps(list(values))
            pairs.append(f"{json.dumps(name)} = {shown}")
        lines += ["[[map]]", f"initiative_id = {initiative}", f"where = {{ {', '.join(pairs)} }}"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
        lines.append("")
    return "\n".join(lines)


def bundle() -> dict[str, Any]:
    """Account 1, its Owner, the rules' initiatives and a rate for EUR."""
    return {
        "accounts": [{"id": ACCOUNT_ID, "name": "Bench Imports Co", "currency": "USD"}],
        "users": [{"id": 1, "account_id": ACCOUNT_ID, "name": "Bench Owner", "role": "owner"}],
        "fx_rates": [
            {
                "account_id": ACCOUNT_ID,
                "currency": "EUR",
                "rate": EUR_RATE,
                "effective_from": "2020-01-01",
            }
        ],
        "initiatives": [
            {"id": i, "account_id": ACCOUNT_ID, "title": f"Initiative {i}", "stage": "live"}
            for i in INITIATIVES
        ],
    }


def prepared_file(work: Path, rows: int) -> tuple[Path, Generated, float | None]:
    """The FOCUS file in `work`, written unless the same one is there; seconds spent writing."""
    path = work / f"focus-{rows}.csv"
    marker = path.with_suffix(".json")
    wanted = {"rows": rows, "seed": SEED, "generator": GENERATOR}
    if path.exists() and marker.exists():
        kept = json.loads(marker.read_text())
        if {k: kept.get(k) for k in wanted} == wanted and kept.get("bytes") == path.stat().st_size:
            return path, Generated(rows, kept["matched"], kept["unmatched"], kept["bytes"]), None
    marker.unlink(missing_ok=True)
    started = time.perf_counter()
    generated = write_focus(path, rows)
    seconds = time.perf_counter() - started
    marker.write_text(json.dumps({**wanted, **generated.as_dict()}))
    return path, generated, seconds


@dataclass
class Child:
    """A child process run to its end: wall seconds, its own peak RSS, what it printed."""

    seconds: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str


def run_child(argv: list[str], env: dict[str, str], timeout: float, log: Path) -> Child:
    """Run `argv`, waiting on it with os.wait4 (its rusage alone, not every child's);
    killed after `timeout` seconds."""
    out_path, err_path = log.with_suffix(".out"), log.with_suffix(".err")
    reaped: dict[str, Any] = {}
    with out_path.open("w") as out, err_path.open("w") as err:
        started = time.perf_counter()
        child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)

        def reap() -> None:
            _, status, usage = os.wait4(child.pid, 0)
            reaped.update(ended=time.perf_counter(), status=status, usage=usage)

        waiter = threading.Thread(target=reap, daemon=True)
        waiter.start()
        waiter.join(timeout)
        if waiter.is_alive():
            child.kill()
            waiter.join(60)
            child.returncode = -9
            raise TimeoutError(f"{' '.join(argv[:6])} ran over {timeout:.0f}s; see {err_path}")
    child.returncode = os.waitstatus_to_exitcode(reaped["status"])
    return Child(
        seconds=reaped["ended"] - started,
        peak_rss_mb=reaped["usage"].ru_maxrss / 1024,  # KiB on Linux
        returncode=child.returncode,
        stdout=out_path.read_text(),
        stderr=err_path.read_text(),
    )


# The plain read: every batch of every column, pyarrow's defaults (inferred types, threads).
PLAIN_READ: Final = """
import sys, time
from pyarrow import csv
started = time.perf_counter()
rows = 0
for batch in csv.open_csv(sys.argv[1]):
    rows += batch.num_rows
print(rows, time.perf_counter() - started)
"""


def prepare_store(url: str, bundle_path: Path, timeout: float) -> None:
    """`airoi init`, then `airoi load` of the small bundle, each a bounded child."""
    env = {**os.environ, "AIROI_DATABASE_URL": url}
    for args in (["init"], ["load", str(bundle_path)]):
        subprocess.run(
            [sys.executable, "-m", "airoi", *args],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=timeout,
        )


def _count(pattern: str, text: str) -> int | None:
    found = re.search(pattern, text)
    return int(found.group(1).replace(",", "")) if found else None


def import_report(stdout: str) -> dict[str, int | None]:
    """The figures `airoi import focus` prints."""
    return {
        name: _count(rf"{word}:? ([\d,]+)", stdout)
        for name, word in (
            ("rows_read", "Rows read"),
            ("matched", "matched"),
            ("unmatched", "; unmatched"),
            ("inserted", "inserted"),
            ("updated", "updated"),
            ("unchanged", "unchanged"),
            ("deleted", "deleted"),
        )
    }


@dataclass
class Case:
    """One line of the table: samples of one thing measured."""

    name: str
    seconds: list[float] = field(default_factory=list)
    peak_rss_mb: list[float] = field(default_factory=list)
    reports: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # why there are no (more) samples

    def add(self, child: Child, report: dict[str, Any] | None = None) -> None:
        self.seconds.append(child.seconds)
        self.peak_rss_mb.append(child.peak_rss_mb)
        if report is not None:
            self.reports.append(report)

    def figures(self, rows: int, plain_rows_per_s: float | None) -> dict[str, Any]:
        if not self.seconds:
            return {"name": self.name, "samples": 0, "error": self.error}
        median = statistics.median(self.seconds)
        rate = rows / median
        figures: dict[str, Any] = {
            "name": self.name,
            "samples": len(self.seconds),
            "seconds_median": median,
            "seconds_min": min(self.seconds),
            "seconds_max": max(self.seconds),
            "seconds_all": self.seconds,
            "rows_per_s": rate,
            "peak_rss_mb": max(self.peak_rss_mb),
            "peak_rss_mb_all": self.peak_rss_mb,
        }
        if plain_rows_per_s:
            figures["ratio"] = rate / plain_rows_per_s
        if self.reports:
            figures["report"] = self.reports[-1]
        return figures


def check_report(
    report: dict[str, Any], generated: Generated, first: bool, entries: int | None
) -> list[str]:
    """What is wrong with an import's report: counts against the generator's, a first import
    inserting only, a re-import changing nothing."""
    wrong = []
    for name, want in (
        ("rows_read", generated.rows),
        ("matched", generated.matched),
        ("unmatched", generated.unmatched),
    ):
        if report.get(name) != want:
            wrong.append(f"{name} {report.get(name)} (the file has {want})")
    if first:
        if not report.get("inserted") or report.get("updated") or report.get("unchanged"):
            wrong.append(f"a first import that did not only insert: {report}")
    elif report.get("inserted") or report.get("updated") or report.get("deleted"):
        wrong.append(f"a re-import that changed entries: {report}")
    elif entries is not None and report.get("unchanged") != entries:
        wrong.append(f"a re-import left {report.get('unchanged')} of {entries} entries alone")
    return wrong


def _cell(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)


def print_table(figures: dict[str, Any]) -> None:
    print()
    print(
        f"rows {figures['rows']:,}; file {figures['file_mb']:,.1f} MB, {len(HEADER)} columns; "
        f"rounds {figures['rounds']}; matched {figures['generated']['matched']:,}, "
        f"unmatched {figures['generated']['unmatched']:,}; "
        f"{figures['cpus']} cores; load average {figures['loadavg_before'][0]:.2f} before, "
        f"{figures['loadavg_after'][0]:.2f} after"
    )
    head = (
        f"{'':<28} {'n':>2} {'s median':>9} {'s range':>15} {'rows/s':>10} "
        f"{'ratio':>6} {'peak MB':>8}  {'ratio>=' + str(TARGET_RATIO):>10} "
        f"{'RSS<' + str(int(TARGET_RSS_MB)):>8}  entries"
    )
    print(head)
    print("-" * len(head))
    for case in figures["cases"]:
        if not case.get("samples"):
            print(f"{case['name']:<28}  0  {case.get('error') or 'not run'}")
            continue
        spread = f"{case['seconds_min']:.2f}-{case['seconds_max']:.2f}"
        ratio = case.get("ratio")
        is_import = case["name"] != "plain read"
        ratio_mark = ("met" if ratio >= TARGET_RATIO else "MISSED") if is_import else ""
        rss_mark = ("met" if case["peak_rss_mb"] < TARGET_RSS_MB else "MISSED") if is_import else ""
        report = case.get("report") or {}
        entries = (
            f"ins {report.get('inserted') or 0:,} upd {report.get('updated') or 0:,} "
            f"same {report.get('unchanged') or 0:,}"
            if report
            else ""
        )
        print(
            f"{case['name']:<28} {case['samples']:>2} {case['seconds_median']:>9.2f} "
            f"{spread:>15} {case['rows_per_s']:>10,.0f} {_cell(ratio, '.3f'):>6} "
            f"{case['peak_rss_mb']:>8.0f}  {ratio_mark:>10} {rss_mark:>8}  {entries}"
        )
    print(
        "ratio: rows/s over the plain read's (its median); every time is a child's wall time "
        "from spawn to exit; peak MB: the child's own maximum RSS."
    )
    if figures["plain_read_in_child_s"]:
        inner = statistics.median(figures["plain_read_in_child_s"])
        print(f"the plain read's own time in its child: {inner:.2f}s (median)")
    for line in figures["failures"]:
        print(f"FAILED: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, help="rows in the FOCUS file (default 1,000,000)")
    parser.add_argument("--rounds", type=int, help=f"rounds, at most {MAX_ROUNDS} (default 3)")
    parser.add_argument("--postgres", help="an admin URL; a scratch database is made and dropped")
    parser.add_argument("--work", type=Path, help="where the file and stores go (kept)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--timeout", type=float, help="seconds a child may run (default by rows)")
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_ROWS:,} rows, {QUICK_ROUNDS} rounds"
    )
    args = parser.parse_args()
    rows = args.rows or (QUICK_ROWS if args.quick else 1_000_000)
    rounds = args.rounds or (QUICK_ROUNDS if args.quick else 3)
    if not 1_000 <= rows <= 50_000_000:
        parser.error("--rows: from 1,000 to 50,000,000")
    if not 1 <= rounds <= MAX_ROUNDS:
        parser.error(f"--rounds: from 1 to {MAX_ROUNDS}")
    timeout = args.timeout or max(300.0, rows / 1_000)

    kept = args.work is not None
    work = args.work or Path(tempfile.mkdtemp(prefix="airoi-bench-imports-"))
    work.mkdir(parents=True, exist_ok=True)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    for stale in work.glob("bench.db*"):
        stale.unlink()
    try:
        figures = measure(work, logs, rows, rounds, timeout, args.postgres)
    finally:
        for scratch in work.glob("bench.db*"):
            scratch.unlink()
        if not kept:
            shutil.rmtree(work, ignore_errors=True)
    print_table(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    sys.exit(1 if figures["failures"] else 0)


def measure(
    work: Path, logs: Path, rows: int, rounds: int, timeout: float, postgres: str | None
) -> dict[str, Any]:
    import pyarrow  # type: ignore[import-untyped, import-not-found, unused-ignore]

    figures: dict[str, Any] = {
        "rows": rows,
        "rounds": rounds,
        "columns": len(HEADER),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "pyarrow": pyarrow.__version__,
        "loadavg_before": os.getloadavg(),
    }
    path, generated, wrote_s = prepared_file(work, rows)
    figures |= {
        "file": str(path),
        "file_mb": generated.bytes / MB,
        "generated": generated.as_dict(),
    }
    print(
        f"FOCUS file: {rows:,} rows, {generated.bytes / MB:,.1f} MB"
        + (f", written in {wrote_s:.1f}s" if wrote_s is not None else " (kept from before)"),
        flush=True,
    )
    rules = work / "rules.toml"
    rules.write_text(rules_toml(), encoding="utf-8")
    bundle_path = work / "bundle.json"
    bundle_path.write_text(json.dumps(bundle()))
    failures: list[str] = []

    with scratch_databases(work, postgres) as targets:
        for _, url in targets:
            prepare_store(url, bundle_path, timeout)
        plain = Case("plain read")
        in_child: list[float] = []  # the plain read's own seconds, without the child's start
        first = {name: Case(f"import {name}, first") for name, _ in targets}
        again = {name: Case(f"import {name}, re-import") for name, _ in targets}
        entries: dict[str, int | None] = {}  # by store: what its first import inserted
        failed: set[str] = set()  # a store whose import failed is not tried again
        tasks = ["plain", *(name for name, _ in targets)]
        urls = dict(targets)
        for round_no in range(1, rounds + 1):
            shift = (round_no - 1) % len(tasks)
            for task in tasks[shift:] + tasks[:shift]:
                if task in failed:
                    continue
                log = logs / f"round{round_no}-{task}"
                if task == "plain":
                    child = run_child(
                        [sys.executable, "-c", PLAIN_READ, str(path)],
                        dict(os.environ),
                        timeout,
                        log,
                    )
                    read = int(child.stdout.split()[0]) if child.returncode == 0 else None
                    if read != rows:
                        failures.append(f"plain read, round {round_no}: {child.stderr[-500:]}")
                        continue
                    plain.add(child)
                    in_child.append(float(child.stdout.split()[1]))
                    print(f"round {round_no}: plain read {child.seconds:.2f}s", flush=True)
                    continue
                env = {**os.environ, "AIROI_DATABASE_URL": urls[task], "COLUMNS": "400"}
                argv = [sys.executable, "-m", "airoi", "import", "focus", str(path)]
                argv += ["--account", str(ACCOUNT_ID), "--rules", str(rules)]
                child = run_child(argv, env, timeout, log)
                if child.returncode != 0:
                    failed.add(task)
                    said = child.stderr.strip()[-1000:]
                    failures.append(
                        f"import {task}, round {round_no}: exit {child.returncode}: {said}"
                    )
                    first[task].error = again[task].error = f"exit {child.returncode}"
                    print(f"round {round_no}: import {task} failed ({said})", flush=True)
                    continue
                report = import_report(child.stdout)
                is_first = task not in entries
                if is_first:
                    entries[task] = report.get("inserted")
                for line in check_report(report, generated, is_first, entries.get(task)):
                    failures.append(f"import {task}, round {round_no}: {line}")
                (first if is_first else again)[task].add(child, report)
                print(
                    f"round {round_no}: import {task} {child.seconds:.2f}s, "
                    f"peak {child.peak_rss_mb:.0f} MB",
                    flush=True,
                )
    plain_figures = plain.figures(rows, None)
    plain_rate = plain_figures.get("rows_per_s")
    if plain_rate:
        plain_figures["ratio"] = 1.0
    cases = [plain_figures]
    for name, _ in targets:
        cases += [first[name].figures(rows, plain_rate), again[name].figures(rows, plain_rate)]
    figures |= {
        "plain_read_in_child_s": in_child,
        "cases": cases,
        "targets": {"ratio_at_least": TARGET_RATIO, "peak_rss_mb_below": TARGET_RSS_MB},
        "failures": failures,
        "loadavg_after": os.getloadavg(),
    }
    return figures


if __name__ == "__main__":
    main()
