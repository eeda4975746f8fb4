-- A union column as Spark reads an Avro union: one struct field per alternative, one of them set.
with

orders as (
    select * from {{ ref('it_orders') }}
)

select
    order_id,
    named_struct(
        'big', case when amount >= 5 then named_struct('amount', amount) end,
        'small', case when amount < 5 then named_struct('amount', amount) end
    ) as payload
from orders
