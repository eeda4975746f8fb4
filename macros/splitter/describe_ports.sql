{#- `dbt run-operation describe_ports --args '{router: <model name>}'`: how many ports a router has,
    which rows each gets, and each port's schema (what `joinery.port()` returns, typed by Spark).
    The router model must have been built. -#}

{% macro describe_ports(router) %}
    {{ return(adapter.dispatch('describe_ports', 'joinery')(router)) }}
{% endmacro %}

{% macro default__describe_ports(router) %}
    {% if not execute %}
        {{ return('') }}
    {% endif %}
    {% if router is not string %}
        {{ joinery._raise_argument_error('describe_ports', 'router', router, 'expected the name of a router model') }}
    {% endif %}
    {% set matches = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model')
        | selectattr('name', 'equalto', router) | list %}
    {% if not matches %}
        {{ joinery._raise_argument_error('describe_ports', 'router', router, 'no model of that name in this project') }}
    {% endif %}
    {% set node = matches[0] %}
    {% set relation = api.Relation.create(database=node.database, schema=node.schema,
        identifier=node.alias or node.name) %}
    {% set spec = joinery._router_spec(relation, 'describe_ports') %}
    {% set ports = joinery._router_ports(relation, spec) %}
    {% set columns = joinery._columns_of(relation) %}
    {% set lines = [] %}
    {% do lines.append('router ' ~ relation ~ ' (' ~ spec.kind ~ ', mode ' ~ spec.mode ~ ', partitioned by '
        ~ spec.port_column ~ '): ' ~ ports | length ~ ' ports') %}
    {% for port in ports %}
        {% set described = run_query('describe query ' ~ joinery._port_select(relation, spec, port.name, columns)) %}
        {% do lines.append('  port ' ~ port.name ~ ': ' ~ port.rule) %}
        {% for row in described.rows %}
            {% do lines.append('      ' ~ row[0] ~ ' ' ~ row[1]) %}
        {% endfor %}
    {% endfor %}
    {{ log(lines | join('\n'), info=true) }}
    {{ return(lines | join('\n')) }}
{% endmacro %}
