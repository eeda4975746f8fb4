{{
    config(
        materialized='joinery_upsert',
        file_format=var('upsert_file_format'),
        unique_key=var('upsert_unique_key', ['country', 'customer_id']),
        deleted_column='is_deleted'
    )
}}

with

changes as (

    select * from {{ ref('upsert_customer_changes') }}
    -- Only batches not applied yet: the table stores each row's batch_id, so its max is the watermark
    -- (`upsert_replay_after_batch` replays batches on purpose; applying one twice changes nothing).
    where
        batch_id <= {{ var('upsert_through_batch', 2) }}
        and batch_id > {{ var('upsert_replay_after_batch', joinery.previous_max('batch_id', '0')) }}

),

ranked as (

    select
        *,
        row_number() over (partition by country, customer_id order by batch_id desc) as batch_rank
    from changes

),

final as (

    select
        country,
        customer_id,
        name,
        tier,
        batch_id,
        is_deleted
    from ranked
    where batch_rank = 1

)

select * from final
