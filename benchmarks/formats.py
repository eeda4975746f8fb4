"""The table formats the dbt-run cases (fk_join, compaction_incremental) run side by side.

By default, in this order: DEFAULT_FORMATS; `--formats` chooses among KNOWN_FORMATS. Each format's
tables carry their own names (benchmarks/project/macros/bench_formats.sql), so one run holds them
all, and the cases name their variants `<format>.<variant>`. Iceberg tables are in the `iceberg`
catalog, namespace `bench` (the bench project's generate_schema_name; benchmarks.dbt_bench.relation
names them). Adding a format: its Spark settings in harness/table_formats.py, where its tables live
in bench_formats.sql, its name here and in dbt_bench.relation; the cases' MERGE_FORMATS and
COPY_FLOOR_FORMATS say which baselines it gets.
"""

DEFAULT_FORMATS = ("parquet", "delta", "iceberg")
KNOWN_FORMATS = ("parquet", "delta", "iceberg")
