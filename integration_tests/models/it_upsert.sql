-- joinery_upsert and joinery.is_incremental from outside the package: the first run loads the
-- snapshot, a later run only rows newer than those already in the table (none: nothing changes).
{{ config(materialized='joinery_upsert', unique_key='id', file_format='parquet') }}

with

snapshot as (
    select * from {{ ref('it_snapshot') }}
)

select
    snapshot.id,
    snapshot.value,
    snapshot.updated_at
from snapshot
{% if joinery.is_incremental() %}
    where snapshot.updated_at > (select max(loaded.updated_at) from {{ this }} as loaded)
{% endif %}
