{#- The union-field splitter of seed document 002 (its UnionFieldSplitter): a union column is a
    struct of alternatives of which exactly one is non-NULL, as Spark reads an Avro union. Each
    alternative is a port; `joinery.port()` replaces the union column by that alternative's value
    (the document's getOutputs). Rows with no or several alternatives set go to the error port. -#}

{% macro route_union(relation, column, error_port='error', port_column='joinery_port') %}
    {{ return(adapter.dispatch('route_union', 'joinery')(relation, column, error_port, port_column)) }}
{% endmacro %}

{% macro default__route_union(relation, column, error_port, port_column) %}
    {% if column is not string %}
        {{ joinery._raise_argument_error('route_union', 'column', column, 'expected the name of a struct column') }}
    {% endif %}
    {% do joinery._validate_port_name(error_port, 'error_port', 'route_union') %}
    {% do joinery._validate_identifier(port_column, 'port_column', 'route_union') %}
    {#- `config` is undefined where no model is being built (dbt compile --inline). -#}
    {% if config is defined %}{{ config(partition_by=[port_column], meta={'joinery_router': {
        'kind': 'union', 'column': column, 'error_port': error_port, 'mode': 'first',
        'port_column': port_column}}) }}{% endif %}
    {% if not execute %}
        {{ return('select * from ' ~ relation) }}
    {% endif %}
    {% set input_columns = joinery._column_names(relation) %}
    {% do joinery._check_router_columns(input_columns, relation, port_column, error_port, 'route_union') %}
    {% set union_column = joinery._union_column(relation, column, 'route_union') %}
    {% set alternatives = joinery._union_alternatives(relation, union_column, error_port, 'route_union') %}

    {% set field = joinery._quote_identifier(union_column) %}
    {% set is_set = [] %}
    {% set set_names = [] %}
    {% for alternative in alternatives %}
        {% do is_set.append('case when ' ~ field ~ '.' ~ joinery._quote_identifier(alternative.name)
            ~ ' is not null then 1 else 0 end') %}
        {% do set_names.append('case when ' ~ field ~ '.' ~ joinery._quote_identifier(alternative.name)
            ~ " is not null then '" ~ alternative.name ~ "' end") %}
    {% endfor %}
    {% set n_set = '(' ~ is_set | join(' + ') ~ ')' %}
    with

    routed_input as (
        select * from {{ relation }}
    )

    select
        routed_input.*,
        case when {{ n_set }} = 0 then 102 when {{ n_set }} > 1 then 103 end as joinery_error_code,
        case
            when {{ n_set }} = 0
                then 'InvalidEntry(102): field {{ union_column }} has no alternative set (it must hold exactly one of {{ alternatives | map(attribute="name") | join(", ") }})'
            when {{ n_set }} > 1
                then concat('InvalidEntry(103): field {{ union_column }} has ', {{ n_set }},
                    ' alternatives set (', concat_ws(', ', {{ set_names | join(', ') }}), '); a union holds exactly one')
        end as joinery_error_message,
        case
            {%- for alternative in alternatives %}
            when {{ n_set }} = 1 and {{ field }}.{{ joinery._quote_identifier(alternative.name) }} is not null
                then '{{ alternative.name }}'
            {%- endfor %}
            else '{{ error_port }}'
        end as {{ joinery._quote_identifier(port_column) }}
    from routed_input
{% endmacro %}


{% macro _union_column(relation, column, macro_name) %}
    {#- The union column as spelled in `relation`; the document's errors 100 (missing) and 101 (not a
        union) are compile errors here. -#}
    {% set columns = joinery._columns_of(relation) %}
    {% set name = joinery._find_column(columns | map(attribute='name') | list, column) %}
    {% if name is none %}
        {{ joinery._raise_argument_error(macro_name, 'column', column,
            'InvalidEntry(100): field ' ~ column ~ ' does not exist in input schema of ' ~ relation
            ~ '; its columns are ' ~ tojson(columns | map(attribute='name') | list)) }}
    {% endif %}
    {% for c in columns if c.name == name and not (c.dtype | lower).startswith('struct<') %}
        {{ joinery._raise_argument_error(macro_name, 'column', column,
            'InvalidEntry(101): field ' ~ name ~ ' must be a union field (a struct of alternatives of which '
            ~ 'exactly one is non-NULL), but is of type ' ~ c.dtype) }}
    {% endfor %}
    {{ return(name) }}
{% endmacro %}


{% macro _union_alternatives(relation, union_column, error_port, macro_name) %}
    {#- The alternatives of a union column as [{name, type}], in field order (DESCRIBE QUERY, so
        nested types come back exactly as Spark spells them). -#}
    {% set described = run_query('describe query select ' ~ joinery._quote_identifier(union_column)
        ~ '.* from ' ~ relation) %}
    {% set alternatives = [] %}
    {% for row in described.rows %}
        {#- Each alternative becomes a port name (a partition value): it must be an identifier. -#}
        {% if not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', row[0]) %}
            {{ joinery._raise_argument_error(macro_name, 'column', union_column,
                'its alternative ' ~ tojson(row[0]) ~ ' is not an identifier (letters, digits and underscores, '
                ~ 'not starting with a digit), and each alternative becomes a port name; rename that field of '
                ~ 'the struct in a model before this one') }}
        {% endif %}
        {% if joinery._is_hive_null_partition_name(row[0]) %}
            {{ joinery._raise_argument_error(macro_name, 'column', union_column,
                'its alternative ' ~ row[0] ~ " is Hive's name for the NULL partition, and each alternative "
                ~ 'becomes a port name (a partition Spark would read back as NULL); rename that field of the '
                ~ 'struct in a model before this one') }}
        {% endif %}
        {% if row[0] | lower == error_port | lower %}
            {{ joinery._raise_argument_error(macro_name, 'error_port', error_port,
                'the union column ' ~ union_column ~ ' has an alternative of that name; pass another error_port') }}
        {% endif %}
        {% do alternatives.append({'name': row[0], 'type': row[1]}) %}
    {% endfor %}
    {{ return(alternatives) }}
{% endmacro %}
