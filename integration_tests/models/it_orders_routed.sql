-- joinery.route from outside the package: orders of 5 or more to `big`, the rest to `small`.
{{ joinery.route(ref('it_orders'), ports=[{'name': 'big', 'when': 'amount >= 5'}], default_port='small') }}
