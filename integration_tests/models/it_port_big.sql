-- joinery.port from outside the package: one port of the router.
{{ joinery.port(ref('it_orders_routed'), 'big') }}
