-- joinery.port of a route_union router: `payload` becomes the `big` alternative.
{{ joinery.port(ref('it_payloads_routed'), 'big') }}
