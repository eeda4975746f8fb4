-- Case tpch_compaction, dbt-spark's own `incremental` model with its `merge` strategy: what a dbt user
-- writes without joinery. Each run merges the newest version of each key among the delta rows loaded
-- since its last run; dbt-spark's MERGE cannot delete, so a delete is kept as a row with is_deleted
-- set (a soft delete), and the case compares the rows that are not.
{{ config(materialized='incremental', incremental_strategy='merge', unique_key='o_orderkey',
    tblproperties=bench_merge_properties()) }}

with versions as (
    {% if is_incremental() %}
        select * from {{ source('bench', 'tpch_deltas') }}
        where loaded_at > (select max(applied.loaded_at) from {{ this }} as applied)
    {% else %}
        select *, false as is_deleted from {{ source('bench', 'tpch_snapshot') }}
        union all
        select * from {{ source('bench', 'tpch_deltas') }}
    {% endif %}
),

ranked as (
    select
        *,
        row_number() over (partition by o_orderkey order by o_updated_at desc, loaded_at desc) as version_rank
    from versions
)

select * except (version_rank)
from ranked
where version_rank = 1
