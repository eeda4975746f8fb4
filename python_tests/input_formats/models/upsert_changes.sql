-- joinery_upsert: the newest change per id; a change marked is_deleted removes its id.
{{ config(materialized='joinery_upsert', unique_key='id', deleted_column='is_deleted', file_format='parquet') }}

with

ranked as (

    select
        *,
        row_number() over (partition by id order by batch desc) as batch_rank
    from {{ source('inputs', 'changes') }}

)

select
    id,
    name,
    tags,
    batch,
    is_deleted
from ranked
where batch_rank = 1
