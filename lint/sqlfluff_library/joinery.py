"""Lint-time stand-ins for joinery's macros (sqlfluff jinja templater, `library_path`).

Any `{{ joinery.<macro>(...) }}` in a model renders as a plain SELECT, so sqlfluff can lint the
model's own SQL without a Spark connection; `joinery.change_feed(...)`, which a model puts in a FROM
clause, renders as a parenthesized one. The macros' real SQL is exercised by dbt on Spark.
"""

# Macros that return a subquery for a FROM clause rather than a whole SELECT.
SUBQUERIES = {"change_feed"}


def _stub(*args, **kwargs):
    return "select 1 as joinery_macro_output"


def _subquery_stub(*args, **kwargs):
    return "(select 1 as joinery_macro_output)"


def __getattr__(name):
    return _subquery_stub if name in SUBQUERIES else _stub
