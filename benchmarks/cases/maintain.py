"""Case 8: what `joinery.maintain` buys: an incremental MERGE after many runs, with and without upkeep.

Two delta tables built by joinery_upsert from the same base (bench_mt_maintained and
bench_mt_unmaintained) merge the same changed rows (1% of the keys updated, 0.2% new) in each of
HISTORY runs, untimed: every MERGE adds small files and deletion vectors. Then `joinery.maintain`
(OPTIMIZE, REORG ... APPLY (PURGE), VACUUM with retain_hours 0) runs on the first table only,
timed once (`maintain_seconds`). Variants, alternating in rotated order, each round after a new set of
changes lands: after_maintain (`dbt run` of the maintained table) and without_maintain (the other).
No bar (issue 39 asks for the effect to be measured): after_maintain/without_maintain, and the two
tables' file counts (`files`). Both tables must hold the same rows.
"""

from __future__ import annotations

import json
import time

from benchmarks.core import SCHEMA, Context, Variant, agreement, log
from benchmarks.dbt_bench import table_name

NAME = "maintain"
TITLE = "delta upkeep: an incremental MERGE after 20 runs, with and without joinery.maintain"
DEFAULT_ROWS = 1_000_000
TINY_ROWS = 10_000
HISTORY = 20  # untimed runs before the comparison (1 at --rows tiny)
FORMAT = "delta"
MAINTAINED, UNMAINTAINED = "bench_mt_maintained", "bench_mt_unmaintained"
COLUMNS = ["id", "name", "amount"]


def changes_sql(rows: int, batch: int) -> str:
    updates, inserts = max(rows // 100, 1), max(rows // 500, 1)
    return f"""
        select distinct_keys.id, concat('name_b{batch}_', cast(distinct_keys.id as string)) as name,
            cast(pmod(xxhash64(distinct_keys.id, {batch}), 100000) as decimal(10, 2)) / 100 as amount
        from (
            select distinct pmod(xxhash64({batch}, id), {rows}) as id from range({updates})
            union select {rows} + {batch} * {inserts} + id as id from range({inserts})
        ) distinct_keys
    """


def file_count(ctx: Context, model: str) -> int:
    detail = ctx.sql(f"describe detail {SCHEMA}.{table_name(model, FORMAT)}").collect()[0].asDict()
    return int(detail["numFiles"])


def run(ctx: Context) -> dict:
    rows = ctx.rows
    ctx.ctas(
        "mt_base",
        f"""select id, concat('name_', cast(id as string)) as name,
            cast(pmod(xxhash64(id, 1), 100000) as decimal(10, 2)) / 100 as amount from range({rows})""",
    )
    batch = {"next": 1}

    def land() -> None:
        ctx.ctas("mt_changes", changes_sql(rows, batch["next"]))
        batch["next"] += 1

    ctx.dbt.run(MAINTAINED, UNMAINTAINED, full_refresh=True, table_format=FORMAT)
    history = 1 if ctx.tiny else HISTORY
    for index in range(history):
        land()
        ctx.dbt.run(MAINTAINED, UNMAINTAINED, table_format=FORMAT)
        log(f"  history run {index + 1}/{history}")
    files_before = {model: file_count(ctx, model) for model in (MAINTAINED, UNMAINTAINED)}
    relation = f"{SCHEMA}.{table_name(MAINTAINED, FORMAT)}"
    arguments = json.dumps({"relation": relation, "retain_hours": 0, "allow_short_retention": True})
    started = time.perf_counter()
    ctx.dbt.invoke("run-operation", "joinery.maintain", "--args", arguments, table_format=FORMAT)
    maintain_seconds = time.perf_counter() - started
    files_after = {model: file_count(ctx, model) for model in (MAINTAINED, UNMAINTAINED)}
    rounds = {"landed": set()}

    def changes_for(side: str) -> None:
        # New changes once this side has merged the current ones: both sides merge the same rows per round.
        if side in rounds["landed"]:
            land()
            rounds["landed"] = set()
        rounds["landed"].add(side)

    land()
    measurements = ctx.measure(
        [
            Variant(
                "after_maintain",
                lambda: ctx.dbt.run(MAINTAINED, table_format=FORMAT),
                prepare=lambda: changes_for("maintained"),
            ),
            Variant(
                "without_maintain",
                lambda: ctx.dbt.run(UNMAINTAINED, table_format=FORMAT),
                prepare=lambda: changes_for("unmaintained"),
            ),
        ]
    )
    outputs = {
        name: ctx.fingerprint(table_name(model, FORMAT), COLUMNS)
        for name, model in (("after_maintain", MAINTAINED), ("without_maintain", UNMAINTAINED))
    }
    return ctx.result(
        NAME,
        {"rows": rows, "history_runs": history, "changes_per_run": "1% updated, 0.2% new", "format": FORMAT},
        measurements,
        [],
        info_ratios=[("after_maintain", "without_maintain")],
        checks=[agreement("same_result", outputs)],
        maintain_seconds=round(maintain_seconds, 3),
        files={"before_maintain": files_before, "after_maintain": files_after},
    )
