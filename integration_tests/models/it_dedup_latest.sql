-- joinery.dedup_latest from outside the package: the latest event per id.
with

latest as (
    {{ joinery.dedup_latest(ref('it_events'), key='id', order_by='ts') }}
)

select * from latest
