"""The table formats the dbt-run cases (fk_join, compaction_incremental) run side by side.

By default, in this order: DEFAULT_FORMATS; `--formats` chooses among KNOWN_FORMATS. Each format's
tables carry their own names (benchmarks/project/macros/bench_formats.sql), so one run holds them
all, and the cases name their variants `<format>.<variant>`. Adding a format (iceberg, once its
tables can be created through dbt on the `local` target): its Spark settings in
harness/table_formats.py, where its tables live in bench_formats.sql (a catalog of its own needs a
generate_schema_name there too), and its name here; the cases' MERGE_FORMATS and
COPY_FLOOR_FORMATS say which baselines it gets.
"""

DEFAULT_FORMATS = ("parquet", "delta")
KNOWN_FORMATS = ("parquet", "delta")
