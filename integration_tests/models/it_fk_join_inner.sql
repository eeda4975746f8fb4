-- joinery.fk_join (inner) from outside the package: orders with their customer's name.
{{ joinery.fk_join(
    left=ref('it_orders_state'),
    right=ref('it_customers_state'),
    left_key='order_id',
    foreign_key='customer_id',
    right_key='customer_id',
    join_type='inner',
    left_columns=['customer_id', 'amount'],
    right_columns=['name'],
) }}
