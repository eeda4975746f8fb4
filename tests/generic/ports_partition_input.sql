-- noqa: disable=LT02
{#- On a router model (joinery.route / joinery.route_union): its rows are exactly the input rows
    tagged with the ports each belongs to, as a multiset. First-match mode and route_union: every
    input row is in exactly one port (error and default ports included), nothing lost or duplicated.
    All mode: every input row is in each port whose condition holds and only there (plus the error
    port when a condition is NULL, the default port when none holds). The expected ports are worked
    out here from the conditions, independently of how route() writes them. Compared on the input's
    columns, exactly: maps and variants (which Spark cannot compare) as JSON text, collated strings
    in the binary collation (_comparable_sql). -#}
{% test ports_partition_input(model, input) %}
    {% set spec = joinery._router_spec(model, 'ports_partition_input') if execute else {} %}
    {% set input_columns = joinery._columns_of(input, required=false) %}
    {% set columns = input_columns | map(attribute='name') | list %}
    {% set column_csv = joinery._quoted_column_list(columns) if columns else '*' %}
    {% set comparable_csv = joinery._comparable_select_sql(input_columns, columns) %}
    {% set port_column = joinery._quote_identifier(spec.port_column or 'joinery_port') %}

    with

    input_rows as (
        select * from {{ input }}
    ),

    {% if not execute %}
    expected as (select * from input_rows),
    {% elif spec.kind == 'union' %}
    {#- Exactly one alternative set: its port; otherwise the error port. -#}
    {% set field = joinery._quote_identifier(joinery._union_column(input, spec.column, 'ports_partition_input')) %}
    {% set set_alternatives = [] %}
    {% for alternative in joinery._union_alternatives(input, spec.column, spec.error_port, 'ports_partition_input') %}
        {% do set_alternatives.append('if(' ~ field ~ '.' ~ joinery._quote_identifier(alternative.name)
            ~ " is null, null, '" ~ alternative.name ~ "')") %}
    {% endfor %}
    with_set as (
        select
            {{ comparable_csv }},
            filter(array({{ set_alternatives | join(', ') }}), a -> a is not null) as joinery_set
        from input_rows
    ),

    expected as (
        select
            {{ column_csv }},
            if(size(joinery_set) = 1, joinery_set[0], '{{ spec.error_port }}') as {{ port_column }}
        from with_set
    ),
    {% else %}
    {#- Each condition as 1 (true), 0 (false) or 2 (NULL), in port order. -#}
    {% set outcomes = [] %}
    {% for port in spec.ports %}
        {% do outcomes.append('if((' ~ port.when ~ ') is null, 2, if((' ~ port.when ~ '), 1, 0))') %}
    {% endfor %}
    {% set names = "array('" ~ spec.ports | map(attribute='name') | join("', '") ~ "')" %}
    with_outcomes as (
        select
            {{ comparable_csv }},
            array({{ outcomes | join(', ') }}) as joinery_outcomes
        from input_rows
    ),

    {% if spec.mode == 'first' %}
    with_decider as (
        select
            *,
            {%- if spec.error_port is not none %}
            array_position(transform(joinery_outcomes, o -> o != 0), true) as joinery_decider
            {%- else %}
            array_position(joinery_outcomes, 1) as joinery_decider
            {%- endif %}
        from with_outcomes
    ),

    expected as (
        select
            {{ column_csv }},
            case
                when joinery_decider = 0 then '{{ spec.default_port }}'
                when element_at(joinery_outcomes, cast(joinery_decider as int)) = 2 then '{{ spec.error_port }}'
                else element_at({{ names }}, cast(joinery_decider as int))
            end as {{ port_column }}
        from with_decider
    ),
    {% else %}
    matched as (
        select
            with_outcomes.*,
            concat(
                filter(
                    transform(sequence(1, {{ spec.ports | length }}),
                        i -> if(element_at(joinery_outcomes, i) = 1, element_at({{ names }}, i), null)),
                    p -> p is not null),
                {%- if spec.error_port is not none %}
                if(array_contains(joinery_outcomes, 2), array('{{ spec.error_port }}'), cast(array() as array<string>))
                {%- else %}
                cast(array() as array<string>)
                {%- endif %}
            ) as joinery_ports
        from with_outcomes
    ),

    expected as (
        select
            {{ column_csv }},
            expected_port as {{ port_column }}
        from matched
        lateral view explode(
            if(size(joinery_ports) = 0, array('{{ spec.default_port }}'), joinery_ports)
        ) ports as expected_port
    ),
    {% endif %}
    {% endif %}

    actual as (
        select
            {{ comparable_csv }},
            {{ port_column }}
        from {{ model }}
    ),

    missing as (
        select * from expected
        except all
        select * from actual
    ),

    unexpected as (
        select * from actual
        except all
        select * from expected
    )

    select
        'expected in this port but missing from the router' as joinery_diff,
        *
    from missing
    union all
    select
        'in the router but not expected in this port' as joinery_diff,
        *
    from unexpected
{% endtest %}
