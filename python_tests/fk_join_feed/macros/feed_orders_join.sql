{% macro feed_orders_join(join_type) %}
    {#- The test project's one join: orders to their customer, straight from the two Delta tables'
        change data feeds, `join_type` 'inner' or 'left'. -#}
    {{ return(joinery.fk_join(
        left=source('shop', 'orders'),
        right=source('shop', 'customers'),
        foreign_key='customer_id',
        right_key='customer_id',
        join_type=join_type,
        left_columns=['customer_id', 'amount'],
        right_columns=['customer_name'],
        change_feed=true,
    )) }}
{% endmacro %}
