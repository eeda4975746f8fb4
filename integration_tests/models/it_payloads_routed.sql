-- joinery.route_union from outside the package: one port per alternative of `payload`.
{{ joinery.route_union(ref('it_payloads'), 'payload') }}
