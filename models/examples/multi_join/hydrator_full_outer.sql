-- Full outer join of customers, loyalty tiers and web visits on cust_id: every key of every input
-- once, the key coalesced across inputs. A NULL cust_id matches nothing, not even another NULL:
-- each NULL-key row survives on its own.
{{ config(
    materialized='table',
    file_format='parquet',
    post_hook="{{ joinery.record_metrics() }}",
) }}

with

joined as (
    {{ joinery.multi_join(
        inputs={
            'customers': ref('hydrator_customers'),
            'loyalty': ref('hydrator_loyalty'),
            'web_visits': ref('hydrator_web_visits'),
        },
        keys={'customers': ['cust_id'], 'loyalty': ['cust_id'], 'web_visits': ['cust_id']},
        join_type='full',
    ) }}
)

select * from joined
