"""Case 9: joinery_upsert against dbt-spark's merge as a user runs them: a plain, unpatched `dbt` on a
Spark Thrift server, with dbt-spark's own polling.

Every other dbt-run case runs dbt in-process through harness/dbt.py, which polls a running Thrift
statement within milliseconds. A plain dbt-spark checks a running statement every `poll_interval`
seconds (default 5; profiles set 1 at least), so each statement that does not finish at once is
rounded up to the next multiple: the statements a run sends are its cost. This case starts its own
Thrift server (127.0.0.1, a home of its own under the work folder, Delta in spark_catalog as
docs/cluster.md asks), builds the narrow upsert pair of the fk_join case (bench_fk_upsert_joinery,
bench_fk_upsert_dbt: a 1M-row join result) on delta, and then, in each round, lands a 1% change
and runs both models through the venv's `dbt` command (no harness code in the process), in a seeded
random order, with `poll_interval` 1 and then with dbt-spark's default (5). Each run is timed by
dbt's own `execution_time` of the node (run_results.json), so the process start is left out; its
statements are counted from dbt's log (`statements`: the most one run sent). Variants:
`poll1.upsert_joinery`, `poll1.upsert_dbt_merge`, `poll5.upsert_joinery`, `poll5.upsert_dbt_merge`.
Bars: joinery/dbt merge <= 1.2 at each poll interval. At `--rows tiny` (the smoke test): poll_interval 1 only.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from benchmarks.cases.fk_join import orders_batch_sql
from benchmarks.core import Bar, Context, Measurement, agreement, log, round_orders
from benchmarks.dbt_bench import PROJECT_DIR

NAME = "plain_dbt"
TITLE = "joinery_upsert vs dbt-spark's merge through a plain dbt on a Thrift server, poll_interval 1 and 5"
DEFAULT_ROWS = 1_000_000
TINY_ROWS = 1_000
MODELS = {"upsert_joinery": "bench_fk_upsert_joinery", "upsert_dbt_merge": "bench_fk_upsert_dbt"}
POLLS = (1, 5)  # 5 is dbt-spark's default
COLUMNS = ["order_id", "customer_id", "amount", "customer_name"]
STATEMENT = re.compile(r"\]: On (model\.[\w.]+): ")


def profile(port: int, poll: int) -> str:
    """A profile as a user writes one for a Thrift server (ANSI on as every joinery target)."""
    return f"""joinery:
  target: plain
  outputs:
    plain:
      type: spark
      method: thrift
      host: 127.0.0.1
      port: {port}
      schema: bench
      user: bench
      auth: NONE
      threads: 1
      connect_retries: 0
      poll_interval: {poll}
      server_side_parameters:
        "set:hiveconf:spark.sql.ansi.enabled": "true"
"""


class PlainDbt:
    """The venv's `dbt` command on the bench project against the case's Thrift server."""

    def __init__(self, work: Path, port: int):
        self.work, self.port = work, port
        self.dbt = Path(sys.executable).parent / "dbt"

    def run(self, model: str, poll: int, full_refresh: bool = False) -> dict:
        """One `dbt run` of `model`: {'seconds': the node's execution_time, 'statements': its count}."""
        home = self.work / f"poll{poll}"
        (home / "profiles").mkdir(parents=True, exist_ok=True)
        (home / "profiles" / "profiles.yml").write_text(profile(self.port, poll))
        log_dir = home / "logs"
        (log_dir / "dbt.log").unlink(missing_ok=True)
        command = [
            str(self.dbt),
            "run",
            "--select",
            model,
            "--project-dir",
            str(PROJECT_DIR),
            "--profiles-dir",
            str(home / "profiles"),
            "--target-path",
            str(home / "target"),
            "--log-path",
            str(log_dir),
            "--vars",
            json.dumps({"bench_format": "delta"}),
        ]
        if full_refresh:
            command.append("--full-refresh")
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"plain dbt failed ({' '.join(command)}):\n{done.stdout[-3000:]}")
        results = json.loads((home / "target" / "run_results.json").read_text())["results"]
        statements = STATEMENT.findall((log_dir / "dbt.log").read_text())
        return {
            "seconds": results[0]["execution_time"],
            "statements": sum(1 for node in statements if node.endswith(model)),
        }


def sql(port: int, statements: list[str]) -> list[tuple]:
    from pyhive import hive

    connection = hive.connect(host="127.0.0.1", port=port, username="bench", auth="NONE")
    try:
        cursor = connection.cursor()
        rows: list[tuple] = []
        for statement in statements:
            cursor.execute(statement)
            rows = cursor.fetchall() if cursor.description else []
        return rows
    finally:
        connection.close()


def land(port: int, orders: int, batch: int) -> None:
    """The batch's upserted orders with a customer name, one row per order: the changes both merge."""
    customers = max(orders // 10, 10)
    changes = orders_batch_sql(orders, customers, batch, max(orders // 100, 1))
    sql(
        port,
        [
            "drop table if exists bench.fk_changes",
            f"""create table bench.fk_changes using parquet as
        select order_id, customer_id, amount, concat('customer_', cast(customer_id as string)) as customer_name
        from (select *, row_number() over (partition by order_id order by seq desc) as joinery_rank
              from ({changes}) where op <> 'd') where joinery_rank = 1""",
        ],
    )


def run(ctx: Context) -> dict:
    from harness.thrift_server import ThriftServer, free_port

    orders = ctx.rows
    polls = ctx.measured(POLLS)
    work = ctx.work_dir / "plain_dbt"
    server = ThriftServer(home=work / "thrift", port=free_port())
    server.start()
    try:
        customers = max(orders // 10, 10)
        sql(
            server.port,
            [
                "create schema if not exists bench",
                "drop table if exists bench.fk_upsert_base",
                f"""create table bench.fk_upsert_base using parquet as select order_id, customer_id, amount,
                          concat('customer_', cast(customer_id as string)) as customer_name
                          from ({orders_batch_sql(orders, customers, 0)})""",
            ],
        )
        dbt = PlainDbt(work, server.port)
        measurements: dict[str, Measurement] = {}
        statements: dict[str, list[int]] = {}
        batch = 0
        for poll in polls:
            for model in MODELS.values():
                dbt.run(model, poll, full_refresh=True)
            rounds = ctx.repeats + (0 if ctx.tiny else 1)
            for round_index, order in enumerate(round_orders(list(MODELS), rounds, seed=poll)):
                batch += 1
                land(server.port, orders, batch)
                for variant in order:
                    done = dbt.run(MODELS[variant], poll)
                    name = f"poll{poll}.{variant}"
                    warm_up = not ctx.tiny and round_index == 0
                    log(
                        f"  {name}: {done['seconds']:.2f}s, {done['statements']} statements"
                        + (" (warm-up, not counted)" if warm_up else "")
                    )
                    if not warm_up:
                        measurements.setdefault(name, Measurement(name)).seconds.append(done["seconds"])
                        statements.setdefault(name, []).append(done["statements"])
        outputs = {
            variant: sql(
                server.port,
                [
                    f"select count(*), coalesce(sum(cast(xxhash64({', '.join(COLUMNS)}) "
                    f"as decimal(38, 0))), 0) from bench.{model}_delta"
                ],
            )[0]
            for variant, model in MODELS.items()
        }
    finally:
        server.stop()
    bars = [
        Bar(f"poll{poll}.vs_dbt_merge", f"poll{poll}.upsert_joinery", f"poll{poll}.upsert_dbt_merge", 1.2)
        for poll in polls
    ]
    return ctx.result(
        NAME,
        {"rows": orders, "change_per_run": "1%", "format": "delta", "poll_intervals": ",".join(map(str, polls))},
        measurements,
        bars,
        checks=[agreement("same_result", {variant: tuple(int(x) for x in row) for variant, row in outputs.items()})],
        statements={name: max(counts) for name, counts in statements.items()},
    )
