-- Lint-only model (harness/compile_examples.py): a compaction without loaded_at keeps no
-- tombstones, so a run that meets a new delta column takes the plain comparison with the table,
-- which no example takes. Disabled unless the var compaction_lint_models is set.
{{ config(
    enabled=var('compaction_lint_models', false),
    materialized='joinery_upsert',
    unique_key='key',
    file_format='parquet'
) }}

with

compacted as (
    {{ joinery.compact(
        snapshot=source('compaction_landing', 'compaction_simple_snapshot'),
        deltas=[source('compaction_landing', 'compaction_simple_delta')],
        key='key'
    ) }}
)

select * from compacted
