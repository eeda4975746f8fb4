-- Events with a union field, as Spark reads an Avro union of three record types: `payload` is a
-- struct with one field per record type, of which exactly one should be non-NULL.
with

raw_events as (
    select * from {{ ref('splitter_raw_events') }}
)

select
    event_id,
    user_id,
    named_struct(
        'click', case
            when url is not null then named_struct('url', url, 'duration_ms', duration_ms)
        end,
        'purchase', case
            when sku is not null then named_struct('sku', sku, 'amount', amount)
        end,
        'signup', case
            when plan is not null then named_struct('plan', plan, 'referrer', referrer)
        end
    ) as payload,
    occurred_at
from raw_events
