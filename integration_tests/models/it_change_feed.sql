-- joinery.change_feed from outside the package: the changes of version 0 of it_feed_orders.
select
    feed.order_id,
    feed.customer_id,
    feed.amount,
    feed._change_type,
    feed._commit_version,
    feed._change_order
from {{ joinery.change_feed(ref('it_feed_orders'), 0, 0) }} as feed
