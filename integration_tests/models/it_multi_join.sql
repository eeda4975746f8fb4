-- joinery.multi_join from outside the package: orders joined to their customer (inner), with
-- joinery.record_metrics as a post-hook (rows in per input, rows out, into joinery_metrics).
{{ config(post_hook="{{ joinery.record_metrics() }}") }}

with

joined as (
    {{ joinery.multi_join(
        inputs={'orders': ref('it_orders'), 'customers': ref('it_customers')},
        keys={'orders': ['customer_id'], 'customers': ['customer_id']},
    ) }}
)

select * from joined
