{#- The splitter (seed document 002): one pass over the input tags every row with the port(s) it
    goes to. The router model is materialized once, partitioned by the port column, and each
    `joinery.port(ref('router'), name)` model reads only its own partition. -#}

{% macro route(relation, ports, default_port='default', error_port=none, mode='first', port_column='joinery_port') %}
    {{ return(adapter.dispatch('route', 'joinery')(relation, ports, default_port, error_port, mode, port_column)) }}
{% endmacro %}

{% macro default__route(relation, ports, default_port, error_port, mode, port_column) %}
    {% set spec = joinery._route_spec(ports, default_port, error_port, mode, port_column) %}
    {#- Partitioning by the port column is what lets each port read only its rows; the spec in
        `meta` is how port(), describe_ports and the ports_partition_input test learn the ports. -#}
    {#- `config` is undefined where no model is being built (dbt compile --inline). -#}
    {% if config is defined %}{{ config(partition_by=[port_column], meta={'joinery_router': spec}) }}{% endif %}
    {% if not execute %}
        {{ return('select * from ' ~ relation) }}
    {% endif %}
    {% set input_columns = joinery._column_names(relation) %}
    {% do joinery._check_router_columns(input_columns, relation, port_column, error_port, 'route') %}
    {% do joinery._check_conditions_are_boolean(relation, spec.ports) %}

    {% set error_code, error_message = joinery._route_error_columns(spec) %}
    {% set quoted_port = joinery._quote_identifier(port_column) %}
    with

    routed_input as (
        select * from {{ relation }}
    )

    {% if mode == 'first' %}
    select
        routed_input.*,
        {%- if error_port is not none %}
        {{ error_code | replace('__PORT__', joinery._route_first_match(spec)) }} as joinery_error_code,
        {{ error_message | replace('__PORT__', joinery._route_first_match(spec)) }} as joinery_error_message,
        {%- endif %}
        {{ joinery._route_first_match(spec) }} as {{ quoted_port }}
    from routed_input
    {% else %}
    {#- All mode: one row per (input row, port it goes to), so a row matching k ports is stored
        k times, once in each port's partition. -#}
    select
        routed_input.*,
        {%- if error_port is not none %}
        {{ error_code | replace('__PORT__', 'matched.' ~ quoted_port) }} as joinery_error_code,
        {{ error_message | replace('__PORT__', 'matched.' ~ quoted_port) }} as joinery_error_message,
        {%- endif %}
        matched.{{ quoted_port }}
    from routed_input
    lateral view explode({{ joinery._route_all_matches(spec) }}) matched as {{ quoted_port }}
    {% endif %}
{% endmacro %}


{% macro _route_spec(ports, default_port, error_port, mode, port_column) %}
    {#- Validated router description, stored in the router model's meta. -#}
    {% if mode not in ['first', 'all'] %}
        {{ joinery._raise_argument_error('route', 'mode', mode, "expected 'first' or 'all'") }}
    {% endif %}
    {% if ports is string or ports is mapping or ports is not iterable or ports | length == 0 %}
        {{ joinery._raise_argument_error('route', 'ports', ports,
            'expected a non-empty list of {name: <identifier>, when: <boolean SQL expression>}') }}
    {% endif %}
    {% do joinery._validate_identifier(port_column, 'port_column', 'route') %}
    {% do joinery._validate_port_name(default_port, 'default_port', 'route') %}
    {% if error_port is not none %}
        {% do joinery._validate_port_name(error_port, 'error_port', 'route') %}
    {% endif %}
    {% set seen = [default_port | lower] + ([error_port | lower] if error_port is not none else []) %}
    {% if error_port is not none and error_port | lower == default_port | lower %}
        {{ joinery._raise_argument_error('route', 'error_port', error_port, 'must differ from default_port') }}
    {% endif %}
    {% set checked = [] %}
    {% for port in ports %}
        {% if port is not mapping or port.keys() | list | sort != ['name', 'when'] %}
            {{ joinery._raise_argument_error('route', 'ports[' ~ loop.index0 ~ ']', port,
                'expected {name: <identifier>, when: <boolean SQL expression>}') }}
        {% endif %}
        {% do joinery._validate_port_name(port.name, 'ports[' ~ loop.index0 ~ '].name', 'route') %}
        {% if port.name | lower in seen %}
            {{ joinery._raise_argument_error('route', 'ports[' ~ loop.index0 ~ '].name', port.name,
                'port names must be unique and differ from default_port and error_port (case-insensitive)') }}
        {% endif %}
        {% if port.when is not string or port.when | trim == '' %}
            {{ joinery._raise_argument_error('route', 'ports[' ~ loop.index0 ~ '].when', port.when,
                'expected a boolean SQL expression over the input columns') }}
        {% endif %}
        {% do seen.append(port.name | lower) %}
        {% do checked.append({'name': port.name, 'when': joinery._sql_expression(port.when)}) %}
    {% endfor %}
    {{ return({'kind': 'route', 'ports': checked, 'default_port': default_port, 'error_port': error_port,
               'mode': mode, 'port_column': port_column}) }}
{% endmacro %}


{% macro _validate_port_name(name, argument, macro_name) %}
    {#- A port name is a value of the router's partition column, so it must be an identifier that is
        not Hive's name for the NULL partition: Spark reads a partition of that name back as NULL,
        and port() would find none of its rows. -#}
    {% do joinery._validate_identifier(name, argument, macro_name) %}
    {% if joinery._is_hive_null_partition_name(name) %}
        {{ joinery._raise_argument_error(macro_name, argument, name,
            'expected another port name: Spark reads a partition of that name back as NULL') }}
    {% endif %}
    {{ return(name) }}
{% endmacro %}


{% macro _is_hive_null_partition_name(name) %}
    {#- Hive's name for the NULL partition (case-insensitive, as port names are compared). -#}
    {{ return(name | lower == '__hive_default_partition__') }}
{% endmacro %}


{% macro _check_router_columns(input_columns, relation, port_column, error_port, macro_name) %}
    {#- The columns the router adds must not shadow input columns. -#}
    {% set error_columns = ['joinery_error_code', 'joinery_error_message'] if error_port is not none else [] %}
    {% set added = [port_column] + error_columns %}
    {% for name in added %}
        {% if joinery._find_column(input_columns, name) is not none %}
            {{ joinery._raise_argument_error(macro_name, 'port_column' if name == port_column else 'error_port',
                name, relation ~ ' already has a column ' ~ name
                ~ '; the router adds it: pass another port_column or rename the input column') }}
        {% endif %}
    {% endfor %}
{% endmacro %}


{% macro _check_conditions_are_boolean(relation, ports) %}
    {#- Ask Spark for each condition's type without running anything (DESCRIBE QUERY), so a `when`
        that is not boolean fails at compile time naming the port, not deep in a Spark plan. -#}
    {% set probes = [] %}
    {% for port in ports %}
        {% do probes.append('(' ~ port.when ~ ') as joinery_when_' ~ loop.index0) %}
    {% endfor %}
    {% set described = run_query('describe query select ' ~ probes | join(', ') ~ ' from ' ~ relation) %}
    {% for row in described.rows %}
        {% if row[1] | lower != 'boolean' %}
            {% set port = ports[loop.index0] %}
            {{ joinery._raise_argument_error('route', 'ports[' ~ loop.index0 ~ '].when', port.when,
                'the condition of port ' ~ port.name ~ ' has type ' ~ row[1]
                ~ ', expected a boolean expression (for example `' ~ port.when ~ ' is not null`)') }}
        {% endif %}
    {% endfor %}
{% endmacro %}


{% macro _route_first_match(spec) %}
    {#- The port of a row in first-match mode: the first port whose condition is true. With an
        error port, a condition that is NULL before any true one sends the row to the error port
        (its routing cannot be decided); without one, NULL counts as false, as in a WHERE clause. -#}
    {% set parts = ['case'] %}
    {% for port in spec.ports %}
        {% do parts.append("when (" ~ port.when ~ ") then '" ~ port.name ~ "'") %}
        {% if spec.error_port is not none %}
            {% do parts.append("when (" ~ port.when ~ ") is null then '" ~ spec.error_port ~ "'") %}
        {% endif %}
    {% endfor %}
    {% do parts.append("else '" ~ spec.default_port ~ "' end") %}
    {{ return(parts | join(' ')) }}
{% endmacro %}


{% macro _route_all_matches(spec) %}
    {#- The ports of a row in all mode: every port whose condition is true, plus the error port when
        some condition is NULL (if there is one); the default port when that list is empty. -#}
    {% set candidates = [] %}
    {% for port in spec.ports %}
        {% do candidates.append("case when (" ~ port.when ~ ") then '" ~ port.name ~ "' end") %}
    {% endfor %}
    {% if spec.error_port is not none %}
        {% set nulls = [] %}
        {% for port in spec.ports %}
            {% do nulls.append("(" ~ port.when ~ ") is null") %}
        {% endfor %}
        {% do candidates.append("case when " ~ nulls | join(' or ') ~ " then '" ~ spec.error_port ~ "' end") %}
    {% endif %}
    {% set matched = 'filter(array(' ~ candidates | join(', ') ~ '), p -> p is not null)' %}
    {{ return("coalesce(nullif(" ~ matched ~ ", cast(array() as array<string>)), array('"
        ~ spec.default_port ~ "'))") }}
{% endmacro %}


{% macro _route_error_columns(spec) %}
    {#- Error code and message of rows in the error port (NULL elsewhere), as SQL templates over the
        row's port (`__PORT__`). Code 200: a port's condition is NULL for the row. -#}
    {% set nulls = [] %}
    {% for port in spec.ports %}
        {% do nulls.append("case when (" ~ port.when ~ ") is null then '" ~ port.name ~ "' end") %}
    {% endfor %}
    {% set is_error = "__PORT__ = '" ~ spec.error_port ~ "'" %}
    {% set code = 'case when ' ~ is_error ~ ' then 200 end' %}
    {% set message = 'case when ' ~ is_error
        ~ " then concat('InvalidEntry(200): the condition of port(s) ', concat_ws(', ', "
        ~ nulls | join(', ') ~ "), ' is NULL for this row') end" %}
    {{ return([code, message]) }}
{% endmacro %}
