"""Case 4: three inputs inner joined on one key, joinery.multi_join vs the same join handwritten.

Variants (both CTAS into parquet): joinery (the SELECT of model bench_multi_join) and handwritten
(`a join b on a.k = b.k join c on a.k = c.k`). Bars: joinery/handwritten <= 1.1, and joinery's
executed plan has exactly one shuffle exchange per input (3).
"""

from __future__ import annotations

from benchmarks.core import SCHEMA, Bar, Context, Variant, agreement

NAME = "multi_join"
TITLE = "3-way join on one key: multi_join vs handwritten Spark SQL, one shuffle per input"
DEFAULT_ROWS = 1_000_000
DEFAULT_REPEATS = 5
TINY_ROWS = 1_000
INPUTS = 3


def input_sql(rows: int, name: str, salt: int) -> str:
    """Keys 0..rows-1 in hashed order (input c misses every 10th key), two payload columns."""
    keep = "where id % 10 <> 9" if name == "c" else ""
    return f"""
        select id as k,
            pmod(xxhash64(id, {salt}), 1000000) as {name}1,
            concat('{name}_', cast(pmod(xxhash64(id, {salt + 1}), 1000000) as string)) as {name}2
        from range({rows}) {keep}
        distribute by pmod(xxhash64(id, {salt + 2}), 8)
    """


def run(ctx: Context) -> dict:
    rows = ctx.rows
    for salt, name in enumerate(["a", "b", "c"]):
        ctx.ctas(f"mj_{name}", input_sql(rows, name, salt * 10))
    joinery_sql = ctx.dbt.compiled_sql("bench_multi_join")
    s = SCHEMA
    handwritten = f"""
        select a.k, a.a1, a.a2, b.b1, b.b2, c.c1, c.c2
        from {s}.mj_a a
        join {s}.mj_b b on a.k = b.k
        join {s}.mj_c c on a.k = c.k
    """
    measurements = ctx.measure(
        [
            Variant("joinery", lambda: ctx.ctas("j_multi_join", joinery_sql)),
            Variant("handwritten", lambda: ctx.ctas("h_multi_join", handwritten)),
        ]
    )
    columns = ["k", "a1", "a2", "b1", "b2", "c1", "c2"]
    joinery_out = ctx.fingerprint("j_multi_join", columns)
    shuffles = measurements["joinery"].facts.shuffle_exchanges
    return ctx.result(
        NAME,
        {"rows_per_input": rows, "inputs": INPUTS},
        measurements,
        [Bar("vs_handwritten", "joinery", "handwritten", 1.1)],
        checks=[
            {"name": "one_shuffle_per_input", "value": shuffles, "expected": INPUTS, "pass": shuffles == INPUTS},
            agreement("same_result", {"joinery": joinery_out, "handwritten": ctx.fingerprint("h_multi_join", columns)}),
        ],
        output_rows=joinery_out[0],
    )
