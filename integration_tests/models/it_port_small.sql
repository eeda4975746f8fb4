-- joinery.port from outside the package: the default port of the router.
{{ joinery.port(ref('it_orders_routed'), 'small') }}
