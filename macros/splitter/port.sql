{#- Reading one port of a router model. The ports are known at compile time: route() and
    route_union() store their validated description in the router model's `meta` (key
    `joinery_router`), which port() reads from dbt's graph; route_union's alternatives come from
    the router table's union column. So an unknown port is a compile error listing the real ports,
    even a port that has no rows today. -#}

{% macro port(router, name) %}
    {{ return(adapter.dispatch('port', 'joinery')(router, name)) }}
{% endmacro %}

{% macro default__port(router, name) %}
    {% do joinery._validate_identifier(name, 'name', 'port') %}
    {% if not execute %}
        {{ return('select * from ' ~ router) }}
    {% endif %}
    {% set spec = joinery._router_spec(router, 'port') %}
    {% set ports = joinery._router_ports(router, spec) %}
    {% set canonical = joinery._find_column(ports | map(attribute='name') | list, name) %}
    {% if canonical is none %}
        {{ joinery._raise_argument_error('port', 'name', name,
            'no such port in ' ~ router ~ '; its ports are ' ~ tojson(ports | map(attribute='name') | list)) }}
    {% endif %}
    {{ return(joinery._port_select(router, spec, canonical)) }}
{% endmacro %}


{% macro _port_select(router, spec, name, columns=none) %}
    {#- SELECT of one port: the router's partition `port_column = name` (a partition filter, so only
        that partition is read), without the routing columns; the error port keeps the error code
        and message; a union port has the union column replaced by its alternative. -#}
    {% set columns = columns if columns is not none else joinery._columns_of(router) %}
    {% set is_error_port = spec.error_port is not none and name == spec.error_port %}
    {% set routing_columns = [spec.port_column | lower] %}
    {#- Without an error port the router adds no error columns: columns of those names are the input's
        (e.g. a router of another router's error port). -#}
    {% if spec.error_port is not none and not is_error_port %}
        {% do routing_columns.extend(['joinery_error_code', 'joinery_error_message']) %}
    {% endif %}
    {% set selected = [] %}
    {% for column in columns if column.name | lower not in routing_columns %}
        {% set quoted = joinery._quote_identifier(column.name) %}
        {% if spec.kind == 'union' and not is_error_port and column.name | lower == spec.column | lower %}
            {% do selected.append('router.' ~ quoted ~ '.' ~ joinery._quote_identifier(name) ~ ' as ' ~ quoted) %}
        {% else %}
            {% do selected.append('router.' ~ quoted) %}
        {% endif %}
    {% endfor %}
    {% set sql %}
    select
        {{ selected | join(',\n        ') }}
    from {{ router }} as router
    where router.{{ joinery._quote_identifier(spec.port_column) }} = '{{ name }}'
    {% endset %}
    {{ return(sql) }}
{% endmacro %}


{% macro _router_node(router, macro_name) %}
    {#- The graph node of the model that materializes `router` (a relation, e.g. ref('...')). -#}
    {% for node in graph.nodes.values()
        if node.resource_type == 'model'
        and (node.alias or node.name) | lower == router.identifier | lower
        and (router.schema is none or node.schema | lower == router.schema | lower) %}
        {{ return(node) }}
    {% endfor %}
    {{ exceptions.raise_compiler_error('joinery.' ~ macro_name ~ ': ' ~ router
        ~ ' is not a model of this project; a router is a model built with joinery.route() or joinery.route_union()') }}
{% endmacro %}


{% macro _router_spec(router, macro_name) %}
    {#- The description route()/route_union() stored in the router model's meta. -#}
    {% set node = joinery._router_node(router, macro_name) %}
    {% set spec = (node.config.meta or {}).get('joinery_router') or (node.meta or {}).get('joinery_router') %}
    {% if not spec %}
        {{ exceptions.raise_compiler_error('joinery.' ~ macro_name ~ ': ' ~ router
            ~ ' is not a router: its model does not call joinery.route() or joinery.route_union()') }}
    {% endif %}
    {{ return(spec) }}
{% endmacro %}


{% macro _router_ports(router, spec) %}
    {#- The ports of a router in order, as [{name, rule}]: the declared ports, then the default port
        (route), or one port per union alternative (route_union); then the error port. -#}
    {% set ports = [] %}
    {% if spec.kind == 'union' %}
        {% set union_column = joinery._union_column(router, spec.column, 'port') %}
        {% for alternative in joinery._union_alternatives(router, union_column, spec.error_port, 'port') %}
            {% do ports.append({'name': alternative.name,
                'rule': 'exactly one alternative of ' ~ union_column ~ ' is set and it is ' ~ alternative.name}) %}
        {% endfor %}
        {% do ports.append({'name': spec.error_port,
            'rule': 'no alternative or several alternatives of ' ~ union_column ~ ' set (codes 102, 103)'}) %}
    {% else %}
        {% for port in spec.ports %}
            {% do ports.append({'name': port.name,
                'rule': ('first match: ' if spec.mode == 'first' else 'all mode: ') ~ port.when}) %}
        {% endfor %}
        {% do ports.append({'name': spec.default_port, 'rule': 'no condition holds'}) %}
        {% if spec.error_port is not none %}
            {% do ports.append({'name': spec.error_port, 'rule': 'a condition is NULL (code 200)'}) %}
        {% endif %}
    {% endif %}
    {{ return(ports) }}
{% endmacro %}
